"""The build lane: paired branches per story, and each test-list item's TDD cycle."""
