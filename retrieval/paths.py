"""Where the library keeps what it builds, and the one rule for paths that must stay
inside a folder."""

from __future__ import annotations

import os
from pathlib import Path


class OutsideRoot(ValueError):
    """A path leaves the folder it must stay in (an absolute path, a ``..`` climb or a symlink)."""

    def __init__(self, message: str, *, target: Path, root: Path):
        super().__init__(message)
        self.target, self.root = target, root


def default_cache_dir() -> Path:
    """``$LONGCTX_CACHE_DIR`` or ``~/.cache/longctx``; indexes go under ``indexes/``."""
    return Path(os.environ.get("LONGCTX_CACHE_DIR") or Path.home() / ".cache" / "longctx")


def resolve_inside(root: str | os.PathLike[str], relative: str | os.PathLike[str]) -> Path:
    """``root / relative`` resolved (symlinks followed), or :class:`OutsideRoot` if it
    leaves ``root``.

    Every path read on behalf of a data file or a corpus folder goes through here, so a
    crafted file name or a symlink cannot send e.g. ``/etc/hostname`` or ``~/.ssh`` to a model.
    """
    base = Path(root).expanduser().resolve()
    target = (base / relative).resolve()  # an absolute ``relative`` replaces base: caught below
    if target != base and base not in target.parents:
        raise OutsideRoot(
            f"{str(relative)!r} resolves to {target}, outside {base}", target=target, root=base
        )
    return target
