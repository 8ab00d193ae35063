"""On-disk LangGraph checkpointing for long streams: a killed run resumes where it stopped.

Layout: one folder per run key (``thread_key``) under the strategy's folder,
``<strategy folder>/<key>/`` holding ``checkpoints.sqlite``, ``trace.sqlite`` and
``run.lock``. So a damaged database costs only its own run, and a finished run is pruned
to what replay needs (its final checkpoint): storage follows the live runs, not every
step of every run ever made.

* A database that is not SQLite or fails SQLite's ``quick_check`` is named in a warning
  and moved aside as ``<name>.corrupt-<timestamp>``; that run restarts from scratch.
* What a checkpoint may rebuild is named (:func:`checkpoint_serde`): the classes our states hold,
  :data:`CHECKPOINT_TYPES`, and those a plug-in's state declares (:func:`declared_types`); LangGraph
  reads any other class back as its fields, with a ``msgpack_blocked`` event, so a resume logs no
  "Deserializing unregistered type" warning and runs as it did under
  ``LANGGRAPH_STRICT_MSGPACK=true``.
* A run key is locked (``flock`` on ``run.lock``) by the process using it: a second
  identical run at the same time is refused with :class:`RunInUse`, naming the holder
  (pid, host, start time), instead of racing the first on the same checkpoints. The
  kernel drops the lock when its holder dies, so a killed run is resumed by the next one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import json
import logging
import sqlite3
import time
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from pydantic import BaseModel

from longctx.memory.sqlite_wal import enable_wal
from longctx.retrieval.locks import LockHeld, describe_holder, exclusive_lock

log = logging.getLogger(__name__)

CHECKPOINTS_FILE = "checkpoints.sqlite"
TRACE_FILE = "trace.sqlite"
RUN_LOCK_FILE = "run.lock"
#: Part of every run key: checkpoints written before the ``longctx`` namespace (version 1) hold
#: their state's types under the old top-level module names (``retrieval.contract.Question``), so
#: they are not resumed; such a run starts afresh and its old folder is left as it was.
CHECKPOINT_FORMAT = 2

#: The classes our strategies' states (and their ``Send`` tasks) put in a checkpoint, as (module,
#: name): what a resume may rebuild beyond LangGraph's own safe types (messages, datetimes, ...).
#: ``tests/test_checkpoint_serde.py`` resumes each checkpointing run path and fails on a class that
#: reaches a checkpoint unlisted, and checks every type a built-in state declares is here.
CHECKPOINT_TYPES: frozenset[tuple[str, str]] = frozenset(
    {
        ("longctx.retrieval.contract.question", "Question"),
        ("longctx.retrieval.contract.question", "Protocol"),
        ("longctx.retrieval.contract.answer", "Evidence"),
        ("longctx.retrieval.base", "Hit"),
        ("longctx.retrieval.chunking", "Chunk"),
        # structured's table of records (its state's ``table``)
        ("longctx.memory.records.table", "Table"),
        ("longctx.memory.records.table", "Cell"),
        ("longctx.memory.records.schema", "TableSchema"),
        ("longctx.memory.records.schema", "Attribute"),
        ("longctx.memory.records.schema", "TimeDimension"),
    }
)


class RunInUse(LockHeld):
    """Another process (named in the message) is running the same resumable run right now."""


def run_folder(folder: str | Path, thread: str) -> Path:
    """The folder of one resumable run: ``<folder>/<thread>/``."""
    return Path(folder) / thread


@contextlib.contextmanager
def lock_run(run_dir: str | Path) -> Iterator[Path]:
    """Hold the run's lock for the ``with`` block, or raise :class:`RunInUse` naming its holder."""
    run_dir = Path(run_dir)
    path = run_dir / RUN_LOCK_FILE
    try:
        with exclusive_lock(path, wait=False, what=f"resumable run {run_dir.name}"):
            yield run_dir
    except LockHeld as exc:
        if isinstance(exc, RunInUse) or exc.path != path.absolute():
            raise
        raise RunInUse(
            f"The same run ({run_dir}) is in progress in {describe_holder(exc.holder)}; wait for "
            "it to finish (a rerun then replays its answers), or stop it",
            path=exc.path,
            holder=exc.holder,
        ) from None


def move_aside(path: str | Path, reason: str) -> Path:
    """Rename a damaged database (and its WAL) to ``<name>.corrupt-<timestamp>``, with a warning
    naming it."""
    path = Path(path)
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
    n = 1
    while aside.exists():
        aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{n}")
        n += 1
    path.rename(aside)
    wal, shm = path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")
    if wal.exists():
        wal.rename(aside.with_name(aside.name + "-wal"))
    shm.unlink(missing_ok=True)
    log.warning(
        "%s is corrupt (%s); moved it aside to %s and starting that run afresh",
        path,
        reason,
        aside.name,
    )
    return aside


def check_database(path: str | Path) -> str | None:
    """Why the SQLite file at ``path`` cannot be trusted, or ``None`` if it is sound (or absent)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return f"{type(exc).__name__}: {exc}"
    if rows != [("ok",)]:
        return "quick_check: " + "; ".join(str(r[0]) for r in rows[:3])
    return None


def open_database(path: str | Path) -> sqlite3.Connection:
    """A WAL connection to ``path`` (folder created), usable from worker threads; a corrupt file is
    moved aside first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    problem = check_database(path)
    if problem:
        move_aside(path, problem)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    # WAL + synchronous=NORMAL: a killed process loses nothing committed (the WAL is in the OS
    # page cache); only a power cut can lose the last steps, which a rerun then redoes. Full
    # fsync per step cost ~15 ms a commit here, several times the orchestration itself.
    enable_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def checkpoint_serde(extra: Iterable[tuple[str, str]] = ()) -> JsonPlusSerializer:
    """LangGraph's serializer reading back only :data:`CHECKPOINT_TYPES`, ``extra`` and LangGraph's
    safe types: any other class stays its fields (a ``msgpack_blocked`` event), in every mode."""
    return JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES | set(extra))


def declared_types(graph: Any) -> set[tuple[str, str]]:
    """The classes (dataclasses, pydantic models, enums) a compiled graph's state and its nodes'
    inputs (``Send`` tasks) declare, as (module, name): a plug-in's own state classes resume."""
    builder = graph.builder
    schemas = [builder.state_schema, *(node.input_schema for node in builder.nodes.values())]
    found: set[tuple[str, str]] = set()
    seen: set[int] = set()
    for schema in schemas:
        _collect(schema, found, seen)
    return found


def with_state_types(saver: SqliteSaver, graph: Any) -> BaseCheckpointSaver[str]:
    """``saver`` (the same connection) also reading back the classes ``graph``'s state declares."""
    return saver.with_allowlist(declared_types(graph))


def _collect(typ: Any, found: set[tuple[str, str]], seen: set[int]) -> None:
    """Add the classes ``typ`` names (itself, its arguments, its fields) to ``found``."""
    if id(typ) in seen:
        return
    seen.add(id(typ))
    for arg in typing.get_args(typ):  # list[X], X | None, Annotated[X, ...], dict[str, X]
        _collect(arg, found, seen)
    if not isinstance(typ, type):
        return
    named = dataclasses.is_dataclass(typ) or issubclass(typ, (BaseModel, enum.Enum))
    if named:
        found.add((typ.__module__, typ.__name__))
    if named or typing.is_typeddict(typ):
        for field in _hints(typ).values():
            _collect(field, found, seen)


def _hints(typ: type) -> dict[str, Any]:
    """``typ``'s resolved field annotations (none when a name cannot be resolved)."""
    try:
        return typing.get_type_hints(typ, include_extras=True)
    except (NameError, TypeError):  # a forward reference its module does not define
        return {}


def open_checkpointer(path: str | Path, extra: Iterable[tuple[str, str]] = ()) -> SqliteSaver:
    """A SQLite checkpointer at ``path`` (created with its folder), usable from worker threads,
    reading back the types :func:`checkpoint_serde` names (``extra``: a plug-in state's own).

    A corrupt database is named in a warning and moved aside; the run then starts afresh.
    """
    saver = SqliteSaver(open_database(path), serde=checkpoint_serde(extra))
    saver.setup()
    return saver


def prune_checkpoints(saver: SqliteSaver, thread: str, *, compact: bool = True) -> None:
    """Drop a run's superseded checkpoints: only the latest one per namespace (what replay and
    resume read) and its writes are kept; with ``compact`` the file is shrunk too (a run
    still going skips that: SQLite reuses the freed pages, so its file stops growing)."""
    conn = saver.conn
    with saver.lock:
        conn.execute(
            """DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id NOT IN (
                   SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ?
                   GROUP BY checkpoint_ns)""",
            (thread, thread),
        )
        conn.execute(
            "DELETE FROM writes WHERE thread_id = ? AND checkpoint_id NOT IN (SELECT "
            "checkpoint_id FROM checkpoints WHERE thread_id = ?)",
            (thread, thread),
        )
        conn.commit()
        if compact:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def checkpoint_rows(path: str | Path) -> int:
    """Checkpoints stored in the database at ``path`` (for tests and storage reports)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0])
    finally:
        conn.close()


def thread_key(**parts: Any) -> str:
    """A stable id for one resumable run (corpus fingerprint, questions, config, model, ...)."""
    keyed = {"checkpoint_format": CHECKPOINT_FORMAT, **parts}
    blob = json.dumps(keyed, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]
