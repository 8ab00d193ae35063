"""Checkpointed single-question runs (``resume=True``): a killed multi-turn loop resumes at its last
finished turn, with its tool results, and sends no answered request again.

Off by default: most single runs are a few calls, and a checkpoint (the state after every step:
the conversation, its tool results and the chunks retrieved) costs a SQLite write a step and disk
for nothing unless the run is long and may die. On, a run is keyed as a batched one is
(:func:`longctx.graphs.runtime.batched.run_key`'s rules): strategy, corpus fingerprint, the question
(its text, choices, instruction and protocol), every config field, and the model with every setting
its requests carry (:func:`longctx.graphs.runtime.batched.model_key`); so a changed setting starts
afresh and never replays another run's turns. Its folder is ``<cache>/<strategy>/single-<key>/``
(beside the batched runs' ``<key>/`` folders) with ``checkpoints.sqlite`` (LangGraph's
``SqliteSaver``, ``durability="sync"``: a step is on disk before the next starts) and ``run.lock``
(a second identical run at once is refused, :class:`~memory.checkpoints.RunInUse`).

What was paid is kept with the checkpoint: every checkpoint and every finished task's write first
records the run's usage so far (the earlier calls' and this one's) in the same database, so a
resumed answer's usage splits into this call's counts and the ``earlier_*`` ones
(:meth:`~retrieval.contract.answer.Usage.since`), as a resumed MemAgent run's does.

A finished run's folder is deleted (a repeated question is asked afresh, as without ``resume``);
a run stopped by its budget or an error keeps it, and the next identical call resumes from it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from longctx.graphs.calls.request_settings import plain
from longctx.graphs.metering.usage import UsageTracker
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.nodes import CompiledGraph
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.runtime.batched import model_key, once_each
from longctx.memory import CHECKPOINTS_FILE, lock_run, thread_key
from longctx.memory.checkpoints import checkpoint_serde, declared_types, open_database
from longctx.retrieval import default_cache_dir
from longctx.retrieval.contract import Answer, Question, Usage
from longctx.retrieval.contract.answer import SPLIT_FIELDS

#: The table beside LangGraph's where a checkpointed single run keeps what it has paid so far.
PAID_TABLE = "longctx_paid"


class PaidSaver(SqliteSaver):
    """LangGraph's SQLite checkpointer that records the run's usage so far before every checkpoint
    and every finished task's writes (what a resumed run reads back as its earlier usage)."""

    def __init__(self, conn: Any, tracker: UsageTracker, earlier: Usage, serde: Any = None) -> None:
        super().__init__(conn, serde=serde)
        self.tracker, self.earlier = tracker, earlier

    def setup(self) -> None:
        """LangGraph's tables and the paid-usage one (LangGraph calls it holding ``self.lock``)."""
        if self.is_setup:
            return
        super().setup()
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {PAID_TABLE} (thread_id TEXT PRIMARY KEY, usage TEXT)"
        )
        self.conn.commit()

    def record_paid(self, thread: str) -> None:
        """Store the run's usage so far: the earlier calls' and this call's."""
        paid = json.dumps((self.earlier + self.tracker.usage).to_dict())
        with self.lock:
            self.conn.execute(
                f"INSERT OR REPLACE INTO {PAID_TABLE} (thread_id, usage) VALUES (?, ?)",
                (thread, paid),
            )
            self.conn.commit()

    def paid(self, thread: str) -> Usage:
        """The usage recorded for ``thread`` (nothing for a new run)."""
        with self.lock:
            row = self.conn.execute(
                f"SELECT usage FROM {PAID_TABLE} WHERE thread_id = ?", (thread,)
            ).fetchone()
        return Usage.from_dict(json.loads(row[0])) if row else Usage()

    def put(self, config: RunnableConfig, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        """Record what was paid, then LangGraph's checkpoint."""
        self.record_paid(str(config["configurable"]["thread_id"]))
        return super().put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Record what was paid, then a finished task's writes (a resumed run does not redo it)."""
        self.record_paid(str(config["configurable"]["thread_id"]))
        super().put_writes(config, writes, task_id, task_path)


def single_key(spec: Strategy[Any], context: StrategyContext[Any], question: Question) -> str:
    """The key of one checkpointed single run: strategy, corpus, question, config and model (see the
    module)."""
    protocol = plain(dataclasses.asdict(question.protocol)) if question.protocol else None
    return thread_key(
        run="single",
        strategy=spec.name,
        corpus=context.corpus.fingerprint,
        question=[question.render(), question.instruction, protocol],
        config=plain(dataclasses.asdict(context.config)),
        **model_key(context.llm),
    )


def repeats(
    spec: Strategy[Any], context: StrategyContext[Any], questions: Sequence[Question]
) -> tuple[list[Question], list[int]]:
    """The questions to run, each run key once, and for each position of ``questions`` the index of
    its run: a question asked twice in one checkpointed batch is one run (one key, one lock, one
    checkpoint), answered once, never paid twice (:func:`spread` gives it back at both)."""
    return once_each(questions, lambda q: single_key(spec, context, q))


def distinct_runs(
    spec: Strategy[Any], cfg: Any, questions: Sequence[Question], *, llm: Any, corpus: Any
) -> list[Question]:
    """The checkpointed single runs ``questions`` make (:func:`repeats`): what a plan counts."""
    return repeats(spec, StrategyContext(llm=llm, config=cfg, corpus=corpus), questions)[0]


def spread(
    answers: Sequence[Answer], where: Sequence[int], questions: Sequence[Question]
) -> list[Answer]:
    """One answer per position (:func:`repeats`): a repeat gets its run's answer with its own
    question and no usage (the run's calls are counted once, at its first position)."""
    given: set[int] = set()
    out: list[Answer] = []
    for question, i in zip(questions, where, strict=True):
        answer = answers[i]
        if i in given:
            answer = dataclasses.replace(answer, question=question, usage=Usage())
        given.add(i)
        out.append(answer)
    return out


def single_folder(spec: Strategy[Any], context: StrategyContext[Any], question: Question) -> Path:
    """Where the checkpoint of one single run lives: ``<cache>/<strategy>/single-<key>/``."""
    root = Path(context.cache_dir) if context.cache_dir else default_cache_dir()
    return root / spec.name / f"single-{single_key(spec, context, question)}"


@dataclasses.dataclass
class SingleCheckpoint:
    """One single run's use of its checkpoint (:func:`checkpointed_single`); without ``resume``, a
    pass-through: the graph as compiled, its input, no checkpoint.

    Attributes:
        graph: The graph to invoke (with the checkpointer when on).
        config: The run config (with the run's ``thread_id`` when on).
        earlier: The usage earlier calls of this run paid (recorded in the checkpoint).
        resumed: Whether a checkpoint of an unfinished run was found (the run continues it).
        saver: The checkpointer, when on.
    """

    graph: CompiledGraph
    config: RunnableConfig
    earlier: Usage = dataclasses.field(default_factory=Usage)
    resumed: bool = False
    saver: PaidSaver | None = None
    finished: bool = False

    def input(self, fresh: Any) -> Any:
        """What to invoke the graph with: ``fresh`` for a new run, ``None`` to continue a
        checkpoint."""
        return None if self.resumed else fresh

    @property
    def invoke_options(self) -> dict[str, Any]:
        """Keyword arguments of ``invoke``: a checkpointed run writes each step before the next
        starts."""
        return {"durability": "sync"} if self.saver is not None else {}

    def settled(self, answer: Answer) -> Answer:
        """``answer`` with the earlier calls' counts in its usage's ``earlier_*`` fields."""
        earlier = {f"earlier_{name}": getattr(self.earlier, name) for name in SPLIT_FIELDS}
        return dataclasses.replace(answer, usage=dataclasses.replace(answer.usage, **earlier))


@contextlib.contextmanager
def checkpointed_single(
    spec: Strategy[Any],
    graph: CompiledGraph,
    context: StrategyContext[Any],
    question: Question,
    tracker: UsageTracker,
    config: RunnableConfig,
    resume: bool,
) -> Iterator[SingleCheckpoint]:
    """The run's checkpoint for the ``with`` block (locked), or a pass-through without ``resume``.

    Set ``.finished`` when the graph returned: the run's folder is then deleted on exit; otherwise
    (a budget stop, an error, a kill) it is kept for the next identical call to resume.
    """
    if not resume:
        yield SingleCheckpoint(graph, config)
        return
    folder = single_folder(spec, context, question)
    with lock_run(folder):
        conn, serde = (
            open_database(folder / CHECKPOINTS_FILE),
            checkpoint_serde(declared_types(graph)),
        )
        saver = PaidSaver(conn, tracker, Usage(), serde)
        try:
            saver.setup()
            thread = folder.name
            run_config = RunnableConfig(
                **{
                    **config,
                    "configurable": {**config.get("configurable", {}), "thread_id": thread},
                }
            )
            with_saver = graph.copy(update={"checkpointer": saver})
            snapshot = with_saver.get_state(run_config)
            if snapshot.values and not snapshot.next:  # finished, its folder not yet deleted
                saver.delete_thread(thread)
                snapshot = with_saver.get_state(run_config)
            saver.earlier = saver.paid(thread) if snapshot.next else Usage()
            run = SingleCheckpoint(
                with_saver,
                run_config,
                earlier=saver.earlier,
                resumed=bool(snapshot.next),
                saver=saver,
            )
            yield run
        finally:
            saver.conn.close()
        if run.finished:
            shutil.rmtree(folder, ignore_errors=True)


def single_held(
    spec: Strategy[Any],
    cfg: Any,
    questions: Sequence[Question],
    *,
    llm: Any,
    corpus: Any,
    cache_dir: str | Path | None,
) -> Usage:
    """What the checkpoints of these questions' single runs already paid (a run stopped or killed
    before it finished): the identical call resumes them without paying it again, so a budget's
    plan counts only the rest. Read-only; an unreadable checkpoint holds nothing."""
    context = StrategyContext(
        llm=llm, config=cfg, corpus=corpus, cache_dir=Path(cache_dir) if cache_dir else None
    )
    held = Usage()
    for question in questions:
        folder = single_folder(spec, context, question)
        path = folder / CHECKPOINTS_FILE
        if not path.is_file():
            continue
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
                row = conn.execute(
                    f"SELECT usage FROM {PAID_TABLE} WHERE thread_id = ?", (folder.name,)
                ).fetchone()
        except sqlite3.Error:
            continue
        if row:
            held = held + Usage.from_dict(json.loads(row[0]))
    return held
