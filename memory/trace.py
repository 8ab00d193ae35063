"""A per-step record of what the streaming agent kept in memory, outside the graph state.

Keeping every snapshot in the checkpointed state would re-write the whole growing list
at each of ~2,000 steps (quadratic storage); here each snapshot is one SQLite row.

The trace is a record, not the run's state: a trace database that is corrupt when opened
is moved aside (named in a warning) and started afresh, and one that fails during a run
is dropped with a warning. A damaged trace never aborts a run whose calls were paid for;
the answers then just lack (some of) their per-step memory snapshots.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

from longctx.memory.checkpoints import open_database

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS snapshots (
    thread TEXT NOT NULL, question INTEGER NOT NULL, chunk INTEGER NOT NULL,
    memory TEXT NOT NULL, tokens INTEGER NOT NULL, cut INTEGER NOT NULL,
    PRIMARY KEY (thread, question, chunk)
)
"""


class MemoryTrace:
    """Memory snapshots keyed by (run thread, question index, chunk index); thread-safe."""

    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        try:
            if self.path != ":memory:":
                conn = open_database(path)  # a corrupt file is moved aside first
            else:
                conn = sqlite3.connect(":memory:", check_same_thread=False)
            conn.execute(_SCHEMA)
            conn.commit()
            self._conn = conn
        except (sqlite3.Error, OSError) as exc:
            self._disable(exc)

    @property
    def enabled(self) -> bool:
        """False once the trace failed (snapshots are then no longer recorded)."""
        return self._conn is not None

    def _disable(self, exc: BaseException) -> None:
        log.warning(
            "Memory trace %s failed (%s: %s); continuing without the per-step trace",
            self.path,
            type(exc).__name__,
            exc,
        )
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def record(
        self, thread: str, question: int, chunk: int, memory: str, tokens: int, cut: bool
    ) -> None:
        """Store one snapshot (a redone step overwrites its earlier row)."""
        with self._lock:
            if self._conn is None:
                return
            try:
                self._conn.execute(
                    "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?, ?, ?)",
                    (thread, question, chunk, memory, tokens, int(cut)),
                )
                self._conn.commit()
            except sqlite3.Error as exc:
                self._disable(exc)

    def snapshots(self, thread: str, question: int) -> list[dict[str, Any]]:
        """All snapshots of one question, in chunk order (none if the trace failed)."""
        with self._lock:
            if self._conn is None:
                return []
            try:
                rows = self._conn.execute(
                    "SELECT chunk, memory, tokens, cut FROM snapshots WHERE thread = ? AND "
                    "question = ? ORDER BY chunk",
                    (thread, question),
                ).fetchall()
            except sqlite3.Error as exc:
                self._disable(exc)
                return []
        return [{"chunk": c, "memory": m, "tokens": t, "cut": bool(cut)} for c, m, t, cut in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except sqlite3.Error:
                    pass
                self._conn = None
