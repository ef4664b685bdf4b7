"""The project secret, from which every database password is derived (never stored elsewhere).

One random key in `.consort/db/secret` (mode 0600, git-ignored). A role's password is an HMAC of its
name under that key, so `.env` can be rewritten for any branch without a credentials file and
without ever holding the superuser's password.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from consort.core.errors import UsageError
from consort.core.fsutil import atomic_write_text

SECRET_FILE = "secret"  # noqa: S105 -- a file name, not a password


def load_or_create_secret(db_dir: Path) -> bytes:
    path = db_dir / SECRET_FILE
    if not path.exists():
        db_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(db_dir, 0o700)
        atomic_write_text(path, secrets.token_hex(32) + "\n", mode=0o600)
    return load_secret(db_dir)


def load_secret(db_dir: Path) -> bytes:
    path = db_dir / SECRET_FILE
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError as exc:
        raise UsageError(
            f"{path} is missing", fix="run `consort init` to set up the database"
        ) from exc
    if len(text) < 32:
        raise UsageError(f"{path} is damaged (too short)")
    return text.encode()


def password_for(secret: bytes, role: str) -> str:
    return hmac.new(secret, f"role:{role}".encode(), hashlib.sha256).hexdigest()[:40]
