"""The result folder of a run: checked and created before any work, and locked so that two runs
never write into one folder at once."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from longctx.retrieval.contract.errors import DataError
from longctx.retrieval.locks import LockHeld, describe_holder, exclusive_lock

#: Held by the run using a result folder (released by the kernel if that process dies).
RUN_LOCK_FILE = ".run.lock"


class RunFolderError(DataError):
    """A result folder, or its manifest, is missing or unreadable."""


class RunFolderLocked(LockHeld):
    """Another run (named in the message: pid, host, start time) is using the result folder."""


@contextlib.contextmanager
def run_lock(out: str | Path) -> Iterator[Path]:
    """Hold ``out``'s run lock: a second run on the same folder gets :class:`RunFolderLocked`
    instead of repeating the first one's work; a killed run's lock is taken over."""
    out = Path(out)
    try:
        with exclusive_lock(out / RUN_LOCK_FILE, wait=False, what=f"run folder {out}"):
            yield out
    except LockHeld as exc:
        if isinstance(exc, RunFolderLocked) or exc.path != (out / RUN_LOCK_FILE).absolute():
            raise
        raise RunFolderLocked(
            f"{out} is in use by another run ({describe_holder(exc.holder)}); wait for it to "
            "finish, "
            "or give another --out",
            path=exc.path,
            holder=exc.holder,
        ) from None


def check_out_folder(out: str | Path) -> Path:
    """``out`` as a path, once it is known to be a folder or nothing yet.

    Raises:
        RunFolderError: ``out``, or a folder above it, is a file (or cannot be looked at).
    """
    out = Path(out)
    for path in (out, *out.parents):
        try:
            is_file = path.exists() and not path.is_dir()
        except OSError as exc:  # a name too long, a loop of links
            raise RunFolderError(
                f"Cannot create the result folder {out}: {exc.strerror or exc}"
            ) from None
        if is_file:
            raise RunFolderError(
                f"{path} is a file, not a folder: give --out a folder (new, or a run to resume)"
            )
    return out


def make_out_folder(out: Path) -> None:
    """Create the result folder ``out`` (and its parents).

    Raises:
        RunFolderError: It cannot be created (a file in the way, no permission, a full
            disk), naming it.
    """
    check_out_folder(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunFolderError(
            f"Cannot create the result folder {out}: {exc.strerror or exc}"
        ) from None
