"""Everything that touches the outside world: processes, git, files, agents, databases, runners."""
