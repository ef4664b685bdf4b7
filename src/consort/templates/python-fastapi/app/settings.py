"""Settings from the environment: DATABASE_URL (Consort keeps it in .env per branch)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


def _from_dotenv(name: str) -> str | None:
    env_file = Path(__file__).resolve().parents[1] / ".env"
    if not env_file.is_file():
        return None
    for line in env_file.read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == name:
            return value.strip()
    return None


@lru_cache
def database_url() -> str:
    url = os.environ.get("DATABASE_URL") or _from_dotenv("DATABASE_URL")
    if not url:
        raise RuntimeError("DATABASE_URL is not set (run `consort branch switch <branch>`)")
    # SQLAlchemy names the psycopg 3 driver explicitly.
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url
