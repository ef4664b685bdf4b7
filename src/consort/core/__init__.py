"""The pure core: vocabulary, configuration, artifacts, the ledger, state and the next-step machine.

Nothing here runs a process or imports a layer above it (adapters, lanes, app, cli).
"""
