"""The ledger package; `store` holds the ledger as it was a single module."""

from consort.core.ledger.store import *  # noqa: F403
