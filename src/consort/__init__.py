"""Consort: a deterministic orchestrator for test-driven development by AI coding agents."""

__version__ = "0.1.0"
