"""SQLite's heap limits hold only while the structured strategy's SQL runs
(memory/records/heap_limit.py): the limits of the process come back after a query, a hostile query
still stops at the limit, overlapping queries in threads leave the limits restored after the last,
and another connection of the process can use more than the limit after a structured query ran."""

from __future__ import annotations

import ctypes
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from longctx.memory.records import heap_limit
from longctx.memory.records.database import QueryTooLarge, build_database, run_query
from longctx.memory.records.schema import parse_schema
from longctx.memory.records.table import normalise_records, reduce_cells

ROOT = Path(__file__).resolve().parent.parent
MB = 2**20
#: ~1 MB of text per row without large printf widths (tests/test_structured_sql_limits.py)
MEGABYTE = "replace(printf('%.*c', 999, 'a'), 'a', printf('%.*c', 1000, 'b'))"
ROWS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT {n}) "
#: a sort of 150 distinct values of 1 MB: past a 64 MB limit, within reach of the machine
#: without one
SORT = (
    ROWS.format(n=150) + f"SELECT i, replace({MEGABYTE}, 'b', 'c') || i AS v FROM n ORDER BY v DESC"
)


def _library():
    """The C limit functions of the ``sqlite3`` module's SQLite, reached independently of the code
    under test."""
    import _sqlite3

    lib = ctypes.CDLL(_sqlite3.__file__)
    hard, soft = lib.sqlite3_hard_heap_limit64, lib.sqlite3_soft_heap_limit64
    for fn in (hard, soft):
        fn.restype, fn.argtypes = ctypes.c_int64, [ctypes.c_int64]
    return hard, soft


def limits() -> tuple[int, int]:
    conn = sqlite3.connect(":memory:")
    try:
        return conn.execute("PRAGMA hard_heap_limit").fetchone()[0], conn.execute(
            "PRAGMA soft_heap_limit"
        ).fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
def process_limits():
    """Set the process's limits to a known state through the C functions, give them back after."""
    try:
        hard, soft = _library()
    except (OSError, AttributeError):
        pytest.skip("SQLite's heap-limit functions are not reachable through ctypes here")
    saved = hard(-1), soft(-1)

    def put(h: int, s: int) -> None:
        hard(h)
        soft(s)
        assert limits() == (h, s)  # the C functions and the pragmas are the same library's

    put(0, 0)
    yield put
    put(*saved)


def database(heap_limit_bytes: int = 256 * MB):
    schema = parse_schema(
        {"entity": "company", "attributes": [{"name": "revenue", "type": "number"}]}
    )
    records = [
        (0, "a", "A", [{"entity": "Acme", "values": {"revenue": {"value": "1", "quote": "1"}}}])
    ]
    conn = build_database(
        reduce_cells(schema, normalise_records(schema, records)[0]),
        heap_limit_bytes=heap_limit_bytes,
    )
    conn.create_function(
        "heap_now", 0, lambda: "{},{}".format(*limits())
    )  # the limits as the query sees them
    return conn


@pytest.mark.parametrize("before", [(0, 0), (2048 * MB, 1024 * MB), (64 * MB, 48 * MB)])
def test_a_structured_query_leaves_the_process_limits_as_they_were(process_limits, before):
    process_limits(*before)
    conn = database()
    assert limits() == before  # building the database sets none
    during = run_query(conn, "SELECT heap_now(), count(*) FROM facts").rows[0][0]
    hard, soft = (int(v) for v in during.split(","))
    assert hard == min(256 * MB, before[0] or 256 * MB)  # a lower limit already in force stays
    assert soft == min(128 * MB, before[1] or 128 * MB)
    assert limits() == before
    conn.close()
    assert limits() == before


def test_a_hostile_sort_still_ends_at_the_heap_limit_and_the_limits_come_back(process_limits):
    conn = database(heap_limit_bytes=64 * MB)
    with pytest.raises(
        QueryTooLarge, match="needed more memory than the database's heap limit"
    ):  # 150 values of 1 MB under 64 MB
        run_query(conn, SORT)
    assert limits() == (0, 0)
    assert run_query(conn, "SELECT count(*) FROM facts").rows == [
        [1]
    ]  # the connection still answers
    assert limits() == (0, 0)


def test_overlapping_queries_in_threads_hold_the_limit_until_the_last_ends(process_limits):
    """Two threads' queries in flight at once (a barrier inside each); the first ends while the
    second still runs, which must still see the limit; both ended, the limits are the
    ones before."""
    both_in = threading.Barrier(2, timeout=10)
    first_done = threading.Event()
    seen: dict[str, str] = {}
    errors: list[BaseException] = []

    def run(name: str, wait_for_first: bool) -> None:
        conn = database(heap_limit_bytes=(100 if wait_for_first else 200) * MB)

        def inside() -> str:
            both_in.wait()
            if wait_for_first:
                assert first_done.wait(10)
            return "{},{}".format(*limits())

        conn.create_function("inside", 0, inside)
        try:
            seen[name] = run_query(conn, "SELECT inside()", timeout_s=30).rows[0][0]
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            conn.close()

    first = threading.Thread(target=run, args=("first", False))
    second = threading.Thread(target=run, args=("second", True))
    first.start()
    second.start()
    first.join(20)
    first_done.set()
    second.join(20)
    assert not errors and not first.is_alive() and not second.is_alive()
    assert (
        seen["first"] == f"{100 * MB},{50 * MB}"
    )  # both in flight: the lowest limit asked for holds
    assert seen["second"] == f"{100 * MB},{50 * MB}"  # still held after the first ended
    assert limits() == (0, 0)


def test_where_ctypes_reaches_no_library_the_pragmas_lower_the_limits_and_a_warning_says_so(
    process_limits, monkeypatch, caplog
):
    monkeypatch.setattr(heap_limit, "_candidates", lambda: iter(()))
    for name, value in (("_RESOLVED", False), ("_HARD", None), ("_SOFT", None)):
        monkeypatch.setattr(heap_limit, name, value)
    assert not heap_limit.restorable()
    assert "not reachable through ctypes" in caplog.text
    caplog.clear()
    conn = database(heap_limit_bytes=64 * MB)
    with caplog.at_level(logging.WARNING), pytest.raises(QueryTooLarge):
        run_query(conn, SORT)
    assert limits() == (
        64 * MB,
        64 * MB,
    )  # the hard limit stays (today's behaviour); the soft one is given back, capped by it
    assert "not reachable" not in caplog.text  # said once


def test_where_the_test_reaches_the_library_so_does_the_guard(process_limits):
    """The fixture reached the C functions through ``_sqlite3``'s file and saw them agree with
    the pragmas."""
    assert heap_limit.restorable()


AFTER_A_QUERY = r"""
import sqlite3
from longctx.memory.records.database import build_database, run_query
from longctx.memory.records.schema import parse_schema
from longctx.memory.records.table import normalise_records, reduce_cells

schema = parse_schema({"entity": "company", "attributes": [{"name": "revenue", "type": "number"}]})
records = [(0, "a", "A", [{"entity": "Acme", "values": {"revenue": {"value": "1", "quote": "1"}}}])]
# the default limit: 256 MB
conn = build_database(reduce_cells(schema, normalise_records(schema, records)[0]))
assert run_query(conn, "SELECT count(*) FROM facts").rows == [[1]]
other = sqlite3.connect(":memory:")  # a checkpoint or cache connection of the same process
other.execute("PRAGMA temp_store = MEMORY")
DISTINCT_BLOBS = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 300) "
    "SELECT count(*) FROM (SELECT DISTINCT randomblob(1000000) FROM n)"
)
print(other.execute(DISTINCT_BLOBS).fetchone()[0])
"""


def test_after_a_structured_query_another_connection_may_use_more_than_the_limit():
    """A fresh process (its limits untouched by other tests): a structured query runs, then another
    connection keeps 300 MB of distinct values in memory; under a lasting 256 MB limit it failed."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(AFTER_A_QUERY)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "300"
