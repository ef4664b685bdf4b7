"""Repositories: all SQL lives here."""
