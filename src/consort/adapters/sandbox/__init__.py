"""The operating-system boundary around every agent turn (and, for callers that want it, any
other untrusted process, such as a test run): Linux namespaces through bubblewrap.

- `spec`       what a sandbox shows, typed, and the bubblewrap arguments that build it
- `host`       the host's read-only base: system folders, toolchains
- `bwrap`      which bubblewrap, and whether namespaces can be made here (`doctor` reports it)
- `policy`     `[agents] sandbox` (auto | on | off) and the sandbox of one agent turn
- `namespace`  a running sandbox seen from outside: its members and their teardown
- `run`        a sandbox for a run-to-completion command (test runs, the deploy lane's app)
"""
