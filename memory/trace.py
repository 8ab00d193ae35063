"""A per-step record of what the streaming agent kept in memory, outside the graph state.

Keeping every snapshot in the checkpointed state would re-write the whole growing list
at each of ~2,000 steps (quadratic storage); here each snapshot is one SQLite row.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

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
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")  # same durability as the checkpoints
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()

    def record(self, thread: str, question: int, chunk: int, memory: str, tokens: int, cut: bool) -> None:
        """Store one snapshot (a redone step overwrites its earlier row)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?, ?, ?, ?)", (thread, question, chunk, memory, tokens, int(cut))
            )
            self._conn.commit()

    def snapshots(self, thread: str, question: int) -> list[dict]:
        """All snapshots of one question, in chunk order."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT chunk, memory, tokens, cut FROM snapshots WHERE thread = ? AND question = ? ORDER BY chunk",
                (thread, question),
            ).fetchall()
        return [{"chunk": c, "memory": m, "tokens": t, "cut": bool(cut)} for c, m, t, cut in rows]

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()
