"""A single run stopped by its budget keeps what it gathered: the steps, hits and evidence of
every node that finished, and of the subgraph in flight (a tool loop's turns), then lets the
strategy finish with what it has (:attr:`longctx.graphs.plugin.registry.SingleRun.on_stop`).

How the partial state is kept: the graph is driven with LangGraph's ``stream(stream_mode="values",
subgraphs=True)``, which yields the whole state after every superstep of the graph and of each
subgraph; the last state of each namespace still running when the stop is raised is the partial
state. ``invoke`` is that same stream's last value, so a run that is not stopped gets the
same final state. Only a graph with subgraphs streams them (``subgraphs=True`` runs every
node in a worker thread: 2-3 ms more per run of a four-node graph, and holds one slot of the
run's ``max_concurrency`` for its waiter, given back here); a graph without them streams its
values at no cost over ``invoke``. (An in-memory checkpointer and ``graph.get_state(config,
subgraphs=True)`` would also give the partial state, at the price of serialising it at every
superstep of every run: as slow as streaming subgraphs, for every graph.)
When :func:`longctx.agents.astream_answer` listens (a report sink is installed), the same stream
also carries ``updates``, ``custom`` and, when the run's model streams, ``messages``, of every
graph run inside the graph (``subgraphs=True``), each chunk handed to the sink as it comes: the
run's events (:mod:`longctx.agents.streaming`).
A node that runs another strategy's graph as a sub-run (a composite's leg) runs it with
:func:`invoke_keeping` too, and raises :func:`stop_after_sub_run` with the state update it made of
the sub-run's partial state: the answer keeps that update (the leg's steps, marked, and its final
node's answer) in place of what the stream saw of the sub-run, and the run stays unfinished at
that node, so a checkpointed run resumes there (the sub-run inside itself).
Lost either way: the work inside the node that was stopped (a node that made two calls before
its third was refused) and the writes of the tasks that finished in the superstep that was stopped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from langchain_core.runnables import RunnableConfig, RunnableLambda

from longctx.graphs.metering.budget import BudgetReached
from longctx.graphs.plugin.answer_state import AnswerState
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.nodes import CompiledGraph
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.runtime.events import listening, report_graph
from longctx.retrieval.contract import Step

#: The keys of a partial state an answer stopped by its budget keeps (besides ``steps``).
KEPT = ("hits", "evidence")

#: The answer fields a stopped sub-run's update gives the answer (its final node's answer).
ENDED = ("answer", "raw", *KEPT)


class StoppedInSubRun(BudgetReached):
    """The budget stop a node raises after a sub-run it made was stopped
    (:func:`stop_after_sub_run`).

    Attributes:
        update: The node's state update made of the sub-run's partial state (steps, answer fields).
        namespace: The node's namespace in the run's stream, under which the sub-run streamed.
    """

    def __init__(
        self, message: str, update: Mapping[str, Any], namespace: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message)
        self.update, self.namespace = dict(update), namespace

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.update, self.namespace))


def stop_after_sub_run(
    message: str, update: Mapping[str, Any], config: RunnableConfig
) -> StoppedInSubRun:
    """The stop to raise from a node (``config``: its own) whose sub-run was stopped by the budget:
    the answer keeps ``update`` (its ``steps`` after the run's, its answer fields as a final node's)
    and ends with a ``stopped`` step saying ``message``."""
    return StoppedInSubRun(message, update, namespace_of(config))


def namespace_of(config: RunnableConfig) -> tuple[str, ...]:
    """The namespace a node's ``config`` runs under in its run's stream (``()`` outside a node)."""
    ns = str((config.get("configurable") or {}).get("checkpoint_ns") or "")
    return tuple(ns.split("|")) if ns else ()


class PartialState:
    """The last state of each namespace of a streamed run (the graph, ``()``, and its subgraphs)."""

    def __init__(self, root: tuple[str, ...] = ()) -> None:
        self.last: dict[tuple[str, ...], Mapping[str, Any]] = {}
        self.root = root

    def see(self, namespace: tuple[str, ...], values: Mapping[str, Any]) -> None:
        """Record ``values``; the subgraphs of ``namespace`` seen before have finished (their
        output is in ``values``) and are dropped. A graph streamed inside another's node (a
        sub-run) streams under that node's namespace, its :attr:`root`, taken off here."""
        namespace = self.relative(namespace)
        n = len(namespace)
        for done in [k for k in self.last if len(k) > n and k[:n] == namespace]:
            del self.last[done]
        self.last[namespace] = values

    def relative(self, namespace: tuple[str, ...]) -> tuple[str, ...]:
        """``namespace`` without the :attr:`root` it was streamed under (a sub-run's node)."""
        r = len(self.root)
        return namespace[r:] if r and namespace[:r] == self.root else namespace

    def kept(self, exc: BudgetReached) -> tuple[dict[str, Any], dict[str, Any]]:
        """The partial state of a run stopped by ``exc``, and the answer fields a stopped sub-run
        gave it (none for a plain stop): a sub-run's update replaces what was streamed under its
        node."""
        if not isinstance(exc, StoppedInSubRun):
            return self.state(), {}
        node = self.relative(exc.namespace)
        n = len(node)
        for under in [k for k in self.last if n and k[:n] == node]:
            del self.last[under]
        merged = self.state()
        merged["steps"] = [*merged["steps"], *exc.update.get("steps", [])]
        return merged, {k: exc.update[k] for k in ENDED if k in exc.update}

    def state(self) -> dict[str, Any]:
        """The graph's last state with each subgraph in flight laid over it: its keys replace the
        graph's, its steps are added after the graph's (those it was given on entry left out)."""
        merged = dict(self.last.get((), {}))
        steps = list(merged.get("steps", []))
        for namespace in sorted((k for k in self.last if k), key=len):
            sub = self.last[namespace]
            given = list(self.last.get(namespace[:-1], {}).get("steps", []))
            own = list(sub.get("steps", []))
            steps += own[len(given) :] if own[: len(given)] == given else own
            merged.update({k: v for k, v in sub.items() if k != "steps"})
        merged["steps"] = steps
        return merged


def invoke_keeping(
    spec: Strategy[Any],
    graph: CompiledGraph,
    state: AnswerState | None,
    context: StrategyContext[Any],
    config: RunnableConfig,
    **options: Any,
) -> AnswerState:
    """``graph.invoke``'s final state, or, when the budget stops it, :func:`stopped_state`;
    ``state`` ``None`` continues the graph's checkpoint, ``options`` go to ``stream``
    (``durability``)."""
    partial, nested, listened = PartialState(namespace_of(config)), _nested(graph), listening()
    config = _with_waiter_slot(graph, config) if nested or listened else config
    modes = _modes(nested, listened, context.llm)
    try:
        chunks: Iterable[Any] = graph.stream(state, config, context=context, **modes, **options)
        for chunk in chunks:
            _take(partial, chunk, nested, listened)
        return cast(AnswerState, dict(partial.last.get((), {})))
    except BudgetReached as exc:
        kept, ended = partial.kept(exc)
        stop = _on_stop(spec)
        done = stop.invoke(kept, config) if stop is not None else None
        return stopped_state(kept, exc, {**ended, **(done or {})})


async def ainvoke_keeping(
    spec: Strategy[Any],
    graph: CompiledGraph,
    state: AnswerState,
    context: StrategyContext[Any],
    config: RunnableConfig,
) -> AnswerState:
    """:func:`invoke_keeping` with the graph's ``astream``."""
    partial, nested, listened = PartialState(namespace_of(config)), _nested(graph), listening()
    config = _with_waiter_slot(graph, config) if nested or listened else config
    modes = _modes(nested, listened, context.llm)
    try:
        async for chunk in graph.astream(state, config, context=context, **modes):
            _take(partial, chunk, nested, listened)
        return cast(AnswerState, dict(partial.last.get((), {})))
    except BudgetReached as exc:
        kept, ended = partial.kept(exc)
        stop = _on_stop(spec)
        done = await stop.ainvoke(kept, config) if stop is not None else None
        return stopped_state(kept, exc, {**ended, **(done or {})})


#: The stream modes of a run whose events are listened to (``astream_answer``): ``custom`` gives
#: what a node writes (a tool loop's calls and results), ``updates`` the steps as each node
#: finishes, ``values`` the partial state; ``messages`` (the tokens and tool-call chunks) is added
#: when the run's model streams (:func:`_modes`).
LISTENED_MODES = ["values", "updates", "custom"]


def _modes(nested: bool, listened: bool, llm: Any) -> dict[str, Any]:
    """``stream``'s mode options: the values alone (of the subgraphs too when ``nested``), or,
    when a sink listens, :data:`LISTENED_MODES` of the graph and every graph run inside it, and
    ``messages`` when ``llm`` streams (``streaming=True``). Not otherwise: LangGraph's messages
    handler makes every model of the run that can stream do so, which would change the requests
    a model that does not stream sends (``stream: true``) and the usage it reports."""
    if not listened:
        return {"stream_mode": "values", "subgraphs": nested}
    modes = (
        [*LISTENED_MODES, "messages"] if getattr(llm, "streaming", None) is True else LISTENED_MODES
    )
    report_graph((), "start", modes)  # from here, events come from the stream
    return {"stream_mode": modes, "subgraphs": True}


def _take(partial: PartialState, chunk: Any, nested: bool, listened: bool) -> None:
    """One chunk of the stream :func:`_modes` asked for: a state to ``partial`` (a subgraph's only
    when ``nested``: a graph run inside a function node is not part of the partial state), any
    other mode to the report sink."""
    if not listened:
        partial.see(*(chunk if nested else ((), chunk)))
        return
    namespace, mode, data = chunk
    if mode != "values":
        report_graph(namespace, mode, data)
    elif nested or not partial.relative(namespace):
        partial.see(namespace, data)


def _nested(graph: CompiledGraph) -> bool:
    """Whether ``graph`` has a subgraph node (a tool loop), whose progress is streamed too."""
    return next(iter(graph.get_subgraphs()), None) is not None


def _with_waiter_slot(graph: CompiledGraph, config: RunnableConfig) -> RunnableConfig:
    """``config`` with one more slot than the graph's ``max_concurrency``: streaming subgraphs,
    LangGraph holds one slot of the run's executor for its stream's waiter, so a graph limited
    to one task at a time would wait forever for the slot its only task needs."""
    limit = config.get("max_concurrency") or (graph.config or {}).get("max_concurrency")
    return RunnableConfig(**{**config, "max_concurrency": limit + 1}) if limit else config


def _on_stop(spec: Strategy[Any]) -> RunnableLambda[Any, Any] | None:
    """The strategy's final node as a runnable of the run's callbacks: a model call in it goes
    through the run's guard, which refuses it (the budget is reached), so it is never sent."""
    fn = getattr(spec.run_mode, "on_stop", None)
    if fn is None:
        return None

    def guarded(state: Mapping[str, Any]) -> Mapping[str, Any] | None:
        try:
            return cast(Mapping[str, Any], fn(state))
        except BudgetReached:  # it tried to call the model: finish as if it had not been declared
            return None

    return RunnableLambda(guarded, name="on_budget_stop")


def stopped_state(
    partial: Mapping[str, Any], exc: BudgetReached, done: Mapping[str, Any] | None = None
) -> AnswerState:
    """The final fields of a single run stopped by its budget: the steps, hits and evidence gathered
    so far, the answer its final node made of them (``done``; none: no answer), a step saying why,
    ``stopped="budget"``."""
    done = done or {}
    steps = [*partial.get("steps", []), *done.get("steps", []), Step("stopped", reason=str(exc))]
    final = AnswerState(answer="", raw="", steps=steps, stopped="budget")
    final.update({k: partial[k] for k in KEPT if k in partial})  # type: ignore[typeddict-item]
    ended = {k: done[k] for k in ("answer", "raw", *KEPT) if k in done}
    final.update(ended)  # type: ignore[typeddict-item]
    return final
