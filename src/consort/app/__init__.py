"""The command API: one module per user command. The CLI, and later other front ends, call these."""
