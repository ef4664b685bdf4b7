"""Test data with codes no other test uses.

One database serves a whole test run, so every test makes its own SKUs and locations under fresh
codes instead of cleaning up after itself.
"""

import uuid


def unique_code(prefix: str) -> str:
    """A code such as "BOLT-3F9A12C4": the prefix sorts it, the suffix makes it unique."""
    return f"{prefix}-{uuid.uuid4().hex[:8].upper()}"
