"""An index-time strategy's cached artifact (RAPTOR's tree, HippoRAG's graph): built once per
corpus, settings and model, kept on disk and in this process.

The pieces both strategies share: the digest that names an artifact's folder, where the cache lives,
the build done once under the folder's lock (a second question waits, then loads), the folder's
checksummed files (``meta.json`` written last: its presence means finished; a file that fails its
checksum is removed and the artifact rebuilt), the last few artifacts held in memory, and the
embedder each strategy loads once per process.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar

from longctx.graphs.plugin.context import StrategyContext
from longctx.retrieval import default_cache_dir
from longctx.retrieval.checksums import ChecksumMismatch, Checksums, digest_bytes, verify_folder
from longctx.retrieval.embedders import EMBEDDERS
from longctx.retrieval.locks import exclusive_lock

log = logging.getLogger(__name__)

T = TypeVar("T")
#: What the disk holds of an artifact (the held one may add what is rebuilt on load).
D = TypeVar("D")
#: Where an artifact came from: this process's memory, the disk cache, or a build just now.
Source = Literal["memory", "disk", "built"]


class CachedConfig(Protocol):
    """The config fields an index-time strategy's artifact cache reads."""

    @property
    def cache(self) -> bool:
        """Whether the artifact is kept on disk."""

    @property
    def embedder(self) -> str:
        """The embedder's registered name."""

    @property
    def embedder_model(self) -> str | None:
        """Its model (``None``: the embedder's default)."""


def digest_of(parts: dict[str, Any]) -> str:
    """The digest naming an artifact: ``parts`` (what the artifact depends on) as sorted JSON."""
    return digest_bytes(json.dumps(parts, sort_keys=True, default=str).encode())


def cache_root(ctx: StrategyContext[Any], enabled: bool) -> Path | None:
    """The on-disk cache's root (the context's, else the default), or ``None`` when caching is
    off."""
    return root_of(ctx.cache_dir, enabled)


def root_of(cache_dir: str | Path | None, enabled: bool) -> Path | None:
    """:func:`cache_root` from a run's ``cache_dir`` (a plan made before the run has no context)."""
    if not enabled:
        return None
    return Path(cache_dir) if cache_dir else default_cache_dir()


def load_or_build(
    folder: Path | None,
    *,
    what: str,
    load: Callable[[Path], T | None],
    build: Callable[[Path | None], T],
    save: Callable[[Path, T], None],
) -> tuple[T, Source]:
    """The artifact in ``folder`` or, when there is none (or no folder), one built and saved there.

    The build runs under the folder's lock, so concurrent questions over one corpus build it once:
    the others wait, then load it. ``what`` names the build in the lock's wait message.
    """
    if folder is None:
        return build(None), "built"
    folder.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(folder / ".lock", what=what):
        found = load(folder)
        if found is not None:
            return found, "disk"
        made = build(folder)
        save(folder, made)
        return made, "built"


def read_checked(
    folder: Path, files: tuple[str, ...], read: Callable[[Path], T], *, what: str
) -> T | None:
    """``read(folder)`` once ``meta.json`` exists and every file matches its checksum, else
    ``None``.

    An unusable artifact (a checksum fails, a file is missing or malformed) is named in a warning
    and its ``files`` and ``meta.json`` are removed, so the caller rebuilds it.
    """
    meta_path = folder / "meta.json"
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        verify_folder(folder, meta.get("files"))
        return read(folder)
    except (ChecksumMismatch, ValueError, KeyError, TypeError, OSError) as exc:
        log.warning("%s in %s is unusable (%s): rebuilding it", what, folder, exc)
        for name in ("meta.json", *files):
            (folder / name).unlink(missing_ok=True)
        return None


def write_checked(folder: Path, write: Callable[[Checksums], None], *, version: int) -> None:
    """``write`` the artifact's files through ``Checksums``, then ``meta.json`` (their checksums and
    the store ``version``) last and atomically: its presence means the artifact is finished."""
    folder.mkdir(parents=True, exist_ok=True)
    sums = Checksums(folder)
    write(sums)
    tmp = folder / "meta.json.tmp"
    tmp.write_text(json.dumps({"files": sums.as_dict(), "version": version}), encoding="utf-8")
    tmp.replace(folder / "meta.json")


@dataclass(frozen=True, kw_only=True)
class ArtifactStore(Generic[D]):
    """How one strategy keeps its artifact on disk: where, and how it is read and written.

    Attributes:
        what: The build, as the lock's wait message names it (``a RAPTOR tree build``).
        folder: The artifact's folder under the cache root, by its key.
        load: The finished artifact in a folder, or ``None`` (see :func:`read_checked`).
        save: Write it there (see :func:`write_checked`).
    """

    what: str
    folder: Callable[[Path, str], Path]
    load: Callable[[Path], D | None]
    save: Callable[[Path, D], None]


class LoadedArtifacts(Generic[T]):
    """The artifacts loaded or built in this process, by key: the last ``keep`` (a large corpus's
    artifact is large), with the embedders their strategy loaded once per process."""

    def __init__(self, keep: int = 4) -> None:
        self.entries: dict[str, T] = {}
        self.keep = keep
        self._embedders: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> T | None:
        """The artifact under ``key`` when this process holds it."""
        return self.entries.get(key)

    def __getitem__(self, key: str) -> T:
        """The artifact under ``key`` (``KeyError`` when this process does not hold it)."""
        return self.entries[key]

    def held(self, key: str, root: Path | None, store: ArtifactStore[Any]) -> bool:
        """Whether the artifact under ``key`` is held in this process or finished on disk under
        ``root`` (``meta.json`` present: a file that then fails its checksum is rebuilt from the
        logs, asking nothing)."""
        return key in self.entries or (
            root is not None and (store.folder(root, key) / "meta.json").exists()
        )

    def remember(self, key: str, artifact: T) -> None:
        """Hold ``artifact`` under ``key``, dropping the oldest beyond ``keep``."""
        with self._lock:
            self.entries[key] = artifact
            while len(self.entries) > self.keep:
                self.entries.pop(next(iter(self.entries)))

    def obtain(
        self,
        key: str,
        root: Path | None,
        store: ArtifactStore[D],
        build: Callable[[Path | None], D],
        hold: Callable[[D], T],
    ) -> tuple[T, Source]:
        """The artifact under ``key``: held in this process, else loaded from or built into its
        folder under ``root`` (none: built, not stored; see :func:`load_or_build`), made ready by
        ``hold`` and held."""
        held = self.get(key)
        if held is not None:
            return held, "memory"
        folder = store.folder(root, key) if root is not None else None
        stored, source = load_or_build(
            folder, what=store.what, load=store.load, build=build, save=store.save
        )
        artifact = hold(stored)
        self.remember(key, artifact)
        return artifact, source

    def clear(self) -> None:
        """Drop every artifact held (tests; a later question loads from disk)."""
        with self._lock:
            self.entries.clear()

    def embedder(self, cfg: CachedConfig) -> Any:
        """The configured embedder, loaded once per process."""
        key = (cfg.embedder, cfg.embedder_model)
        with self._lock:
            if key not in self._embedders:
                factory = EMBEDDERS.get(cfg.embedder)
                self._embedders[key] = (
                    factory(cfg.embedder_model) if cfg.embedder_model else factory()
                )
            return self._embedders[key]
