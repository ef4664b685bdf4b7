"""The lanes: the drive loop, the guarded turn runner, design, build, release, gates and verify."""
