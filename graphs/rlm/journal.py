"""Every reply an RLM run was paid for, kept as it returns, beside the run's checkpoint: a run
stopped (budget, cancel, crash, kill) inside a root turn resumes that turn without asking again
what the turn had already been answered (the turn's own reply, its sub-calls at every depth, a
child RLM's turns).

A LangGraph checkpoint is written only when a node ends, and one RLM turn (its code, its sub-calls)
is one node; so the replies are written to a table of the checkpoint's own SQLite database
(``checkpoints.sqlite`` of a checkpointed run, :mod:`longctx.graphs.runtime.run_checkpoint`), one
row per reply, committed before the reply reaches the code. A resumed run replays the stopped
turn: each request identical to one the journal holds for that turn (the same model, messages and
request settings; the n-th identical request gets the n-th recorded reply) is answered from it,
and only the rest is sent. A run without a SQLite checkpointer (``checkpoint=False``) has no
journal: nothing of it is resumed.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections import Counter
from typing import Any

from langchain_core.runnables import RunnableConfig

#: The journal's table in the checkpoint database.
TABLE = "longctx_rlm_replies"
#: LangGraph's config keys of the checkpointer, the thread and the namespace.
_CHECKPOINTER, _THREAD, _NS = "__pregel_checkpointer", "thread_id", "checkpoint_ns"


def request_key(model: str, messages: Any, fields: dict[str, Any]) -> str:
    """A request's identity: its model, messages and the settings its body carries."""
    text = json.dumps([model, messages, fields], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class ReplyJournal:
    """The replies of one checkpointed run (its thread), by root turn (``scope``) and request."""

    def __init__(self, conn: sqlite3.Connection, lock: Any, run: str, saver: Any = None) -> None:
        self.conn, self.lock, self.run, self.saver = conn, lock, run, saver
        self._seen: Counter[tuple[str, str]] = Counter()
        self._own = threading.Lock()
        with self.lock:
            self.conn.execute(
                f"CREATE TABLE IF NOT EXISTS {TABLE} (run TEXT, scope TEXT, key TEXT, "
                "seq INTEGER, reply TEXT, PRIMARY KEY (run, scope, key, seq))"
            )
            self.conn.commit()

    @classmethod
    def of(cls, config: RunnableConfig) -> ReplyJournal | None:
        """The journal of the run ``config`` belongs to, or ``None`` without a SQLite
        checkpointer."""
        conf = config.get("configurable") or {}
        saver = conf.get(_CHECKPOINTER)
        conn, lock = getattr(saver, "conn", None), getattr(saver, "lock", None)
        if not isinstance(conn, sqlite3.Connection) or lock is None or conf.get(_THREAD) is None:
            return None
        # the node's own task segment (the last) changes between runs; the graph's does not
        namespace = str(conf.get(_NS) or "").rpartition("|")[0]
        return cls(conn, lock, f"{conf[_THREAD]}|{namespace}", saver)

    def take(self, scope: str, key: str) -> str | None:
        """The recorded reply of the next identical request in ``scope``, or ``None`` (then the
        request is sent and :meth:`put` records its reply)."""
        with self._own:
            seq = self._seen[(scope, key)]
            with self.lock:
                row = self.conn.execute(
                    f"SELECT reply FROM {TABLE} WHERE run = ? AND scope = ? AND key = ? "
                    "AND seq = ?",
                    (self.run, scope, key, seq),
                ).fetchone()
            if row is not None:
                self._seen[(scope, key)] += 1
            return None if row is None else str(row[0])

    def put(self, scope: str, key: str, reply: str) -> None:
        """Record a reply just paid for (committed), and the run's usage so far where the
        checkpointer keeps it (a run killed now still counts the call as paid)."""
        with self._own:
            seq = self._seen[(scope, key)]
            self._seen[(scope, key)] += 1
            with self.lock:
                self.conn.execute(
                    f"INSERT OR REPLACE INTO {TABLE} (run, scope, key, seq, reply) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (self.run, scope, key, seq, reply),
                )
                self.conn.commit()
        record_paid = getattr(self.saver, "record_paid", None)
        if record_paid is not None:
            record_paid(self.run.partition("|")[0])
