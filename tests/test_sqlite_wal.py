"""SQLite's WAL switched on while another connection reads (CI: Ray workers opening one new reply
cache together failed with "database is locked")."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import pytest

from longctx.agents.llm_cache import SQLiteLLMCache
from longctx.memory.sqlite_wal import enable_wal


def _reader_holding(path) -> sqlite3.Connection:
    """A connection inside a read transaction: a shared lock that refuses the switch to WAL."""
    setup = sqlite3.connect(path)
    setup.execute("CREATE TABLE IF NOT EXISTS t (x)")
    setup.commit()
    setup.close()
    reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    reader.execute("BEGIN")
    reader.execute("SELECT * FROM t").fetchall()
    return reader


def test_the_switch_waits_for_a_reader_instead_of_failing(tmp_path):
    path = tmp_path / "db.sqlite"
    reader = _reader_holding(path)
    conn = sqlite3.connect(path, timeout=0, check_same_thread=False)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        conn.execute("PRAGMA journal_mode=WAL")  # what the old code did: refused at once
    refused = threading.Event()
    real_execute = conn.execute

    # the connection as enable_wal sees it: releases the reader once a switch was refused
    class Watched:
        def execute(self, sql: str):
            try:
                return real_execute(sql)
            except sqlite3.OperationalError:
                refused.set()
                reader.execute("COMMIT")
                raise

    enable_wal(Watched(), seconds=30)  # type: ignore[arg-type]
    assert refused.is_set() and real_execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_reply_cache_opens_while_another_process_reads_its_new_file(tmp_path):
    path = tmp_path / "cache.sqlite"
    reader = _reader_holding(path)
    releaser = threading.Timer(
        0.2, lambda: reader.execute("COMMIT")
    )  # the other process finishes its read
    releaser.start()
    try:
        cache = SQLiteLLMCache(path)
    finally:
        releaser.join()
    assert cache._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_database_already_in_wal_is_left_alone_and_other_errors_raise(tmp_path):
    conn = sqlite3.connect(tmp_path / "db.sqlite")
    enable_wal(conn)
    enable_wal(conn)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with pytest.raises(sqlite3.ProgrammingError):
        enable_wal(conn)  # a closed connection is not a lock to wait out


def _open_cache(path: str, barrier, results) -> None:
    barrier.wait()  # every process opens the new file at the same moment
    try:
        SQLiteLLMCache(path)
        results.put("ok")
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_one_new_reply_cache_together_all_succeed(tmp_path):
    ctx = multiprocessing.get_context("fork")
    outcomes = []
    for trial in range(6):  # the old code lost about one opening in 10-150 here
        barrier, results = ctx.Barrier(8), ctx.Queue()
        path = str(tmp_path / f"cache{trial}.sqlite")
        procs = [ctx.Process(target=_open_cache, args=(path, barrier, results)) for _ in range(8)]
        for p in procs:
            p.start()
        outcomes += [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join()
    assert outcomes == ["ok"] * 48
