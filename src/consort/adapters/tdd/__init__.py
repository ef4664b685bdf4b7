"""Cycle verification: Consort's own test runs (JUnit XML), the RED and GREEN rules, the guard."""
