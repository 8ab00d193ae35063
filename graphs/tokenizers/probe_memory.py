"""What a server's tokenize probe found, remembered across processes in the cache folder.

Probing a server costs requests before the first answer: three 404s for a server with no
tokenize route (one per dialect), seven for one that has one. Every process paid them again;
now the answer is kept in ``<cache dir>/server_tokenizers.json`` (see
:func:`longctx.retrieval.paths.default_cache_dir`), one entry per server root, model name, dialects
asked and API key (hashed: a server may answer differently with another key).

A remembered answer must not hide a server that changed behind the same URL and name:

* a remembered route is checked with one request per process: the probe text must still get
  the ids it got (same route, same vocabulary, same BOS); anything else forgets it and probes
  again (:mod:`longctx.graphs.tokenizers.server_tokenizer`);
* a remembered "no tokenize route" holds for :data:`NO_ROUTE_SECONDS`, then the server is
  probed again; an explicit ``tokenizer="server"`` never takes it (it always probes).

A server that did not answer is never remembered. Writes replace the file whole (a
concurrent writer loses at most its own entry, which the next process probes again).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from longctx.retrieval.cache_files import read_json_object, write_json_object
from longctx.retrieval.paths import default_cache_dir

#: File of remembered probes in the cache folder.
PROBE_FILE = "server_tokenizers.json"
#: Seconds a remembered "this server has no tokenize route" holds before the server is probed again.
NO_ROUTE_SECONDS = 24 * 3600.0


@dataclass(frozen=True)
class ProbeResult:
    """What one probe found.

    Attributes:
        dialect: The dialect that answered, or ``None``: no tokenize route.
        prefix: Ids the server prepends to every request (a BOS), stripped from replies.
        probe_ids: The probe text's ids, checked again before a remembered route is used.
        whole_text: Pieces did not concatenate exactly: the server gets whole texts.
        probed_at: When the probe ran (seconds since the epoch).
    """

    dialect: str | None
    prefix: list[int] = field(default_factory=list)
    probe_ids: list[int] = field(default_factory=list)
    whole_text: bool = False
    probed_at: float = 0.0

    def expired(self, now: float | None = None) -> bool:
        """Whether a remembered "no route" is too old to trust (a found route never expires: it is
        checked instead)."""
        return (
            self.dialect is None
            and (time.time() if now is None else now) - self.probed_at > NO_ROUTE_SECONDS
        )


def probe_key(root: str, model: str, dialects: Sequence[str], api_key: str | None) -> str:
    """The entry of a probe: server root, model name, dialects asked, and a hash of the key (never
    the key)."""
    key_hash = hashlib.sha256(api_key.encode()).hexdigest()[:16] if api_key else "-"
    return f"{root}|{model}|{','.join(dialects)}|{key_hash}"


def probe_file() -> Path:
    """Where probes are remembered: :data:`PROBE_FILE` in ``$LONGCTX_CACHE_DIR`` (or
    ``~/.cache/longctx``)."""
    return default_cache_dir() / PROBE_FILE


def recall(key: str) -> ProbeResult | None:
    """The remembered probe for ``key``, or ``None`` (none, unreadable, or an expired "no
    route")."""
    entry = read_json_object(probe_file()).get(key)
    if not isinstance(entry, dict):
        return None
    try:
        found = ProbeResult(**entry)
    except TypeError:  # written by another version
        return None
    return None if found.expired() else found


def remember(key: str, result: ProbeResult) -> None:
    """Keep ``result`` for ``key``."""
    path = probe_file()
    entries = read_json_object(path)
    entries[key] = asdict(result)
    _write(path, entries)


def forget(key: str) -> None:
    """Drop the entry for ``key`` (the server no longer answers as remembered)."""
    path = probe_file()
    entries = read_json_object(path)
    if entries.pop(key, None) is not None:
        _write(path, entries)


def _write(path: Path, entries: dict[str, Any]) -> None:
    """Replace the file whole (a reader never sees half of it); a folder that cannot be written only
    costs the next process a probe."""
    try:
        write_json_object(path, entries)
    except OSError:
        pass


__all__ = [
    "NO_ROUTE_SECONDS",
    "PROBE_FILE",
    "ProbeResult",
    "forget",
    "probe_file",
    "probe_key",
    "recall",
    "remember",
]
