"""SQLite's write-ahead log, switched on safely when several processes open one new database."""

from __future__ import annotations

import sqlite3
import time


def enable_wal(conn: sqlite3.Connection, *, seconds: float = 60.0) -> None:
    """Put ``conn``'s database in WAL mode (it stays so: later connections find it there).

    Switching needs the database to itself, and SQLite refuses at once ("database is locked")
    when another connection holds a read lock: processes opening one new file together (Ray
    workers sharing a reply cache) then fail. The switch is retried, backing off, for up to
    ``seconds``; a database already in WAL is left as it is.
    """
    deadline, delay = time.monotonic() + seconds, 0.005
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
