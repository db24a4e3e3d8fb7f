"""The Django secret key: never a built-in default.

``DJANGO_SECRET_KEY`` when set (deployments; refused when weak unless ``DEBUG``), otherwise a random key
generated once into the data directory (``<data dir>/secret_key``, 0600) and shared by every process of
the embedded run (web server, workers, beat, management commands).
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

#: Values known from documentation, examples and earlier versions: never accepted outside DEBUG.
KNOWN_DEFAULTS = frozenset(
    {"change-me", "changeme", "secret", "build", "comparna-development-key-not-for-production"}
)
MIN_LENGTH = 50  # Django's own deployment check (security.W009) asks for 50 characters, 5 distinct


def weakness(key: str) -> str | None:
    """Why ``key`` must not sign anything in production, or None."""
    if key.strip().lower() in KNOWN_DEFAULTS or "change-me" in key.lower():
        return "it is a published default"
    if key.startswith("django-insecure-"):
        return "it is Django's generated development key"
    if len(key) < MIN_LENGTH or len(set(key)) < 5:
        return f"it is shorter than {MIN_LENGTH} characters or has fewer than 5 distinct ones"
    return None


def load_or_create(path: Path) -> str:
    """The key stored at ``path``, creating it (atomically, 0600) when missing.

    Several processes may start at once: each writes a candidate to a file of its own and links it into
    place; the first link wins and every process reads the winner.
    """
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = ""
    if key:
        return key
    candidate = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(64) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(candidate, path)
    finally:
        candidate.unlink(missing_ok=True)
    return path.read_text().strip()
