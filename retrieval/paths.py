"""Where the library keeps what it builds: one cache root for indexes, models, checkpoints and records."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$LONGCTX_CACHE_DIR`` or ``~/.cache/longctx``; indexes go under ``indexes/``."""
    return Path(os.environ.get("LONGCTX_CACHE_DIR") or Path.home() / ".cache" / "longctx")
