"""Self-Route's fallback leg: the fallback strategy answers a declined question whose corpus exceeds
the window.

A single-question fallback (``full_context``, the paper's route; any other single-run
strategy) is its own compiled graph composed into Self-Route's as a subgraph: the ``fallback``
node invokes it with this run's config and the leg's own run context, so its nodes run nested
under ``fallback`` (LangSmith traces show them there, ``get_graph(xray=True)`` draws them as
``fallback:<node>``, ``stream(..., subgraphs=True)`` streams them under that namespace), its
calls reach this run's callbacks once (usage, budget guard), and cancelling an async run
cancels it where it waits. It is driven by the run path's ``invoke_keeping``: a budget stop in the
leg raises :func:`~longctx.graphs.plugin.api.stop_after_sub_run` with the steps the leg made and
its final node's answer, which the answer keeps (marked ``stopped``); the run stays unfinished at
``fallback``, so a checkpointed run resumes inside the leg.

A batched fallback (memagent) keeps the one run path
(:func:`longctx.graphs.runtime.run.run_strategy`): its run is checkpointed on disk under a thread
key of its own (``self_route>memagent``), so a crash in a 2,000-call leg resumes, and a repeated
question replays it without calls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph._internal._runnable import RunnableCallable
from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    STRATEGIES,
    AnswerState,
    Index,
    RetrievalService,
    RetrievalSettings,
    Strategy,
    StrategyContext,
    ainvoke_keeping,
    invoke_keeping,
    run_strategy,
    stop_after_sub_run,
)
from longctx.graphs.self_route.config import SelfRouteConfig
from longctx.graphs.self_route.state import SelfRouteState
from longctx.retrieval.contract import Step

#: A Self-Route node's run time.
RouteRuntime = Runtime[StrategyContext[SelfRouteConfig]]


def fallback_node(config: SelfRouteConfig) -> RunnableCallable:
    """The ``fallback`` node for ``config.fallback``: its graph as a subgraph, or (batched) its
    checkpointed run."""
    spec = STRATEGIES.get(config.fallback)
    leg_cfg = spec.make_config(**dict(config.fallback_options))
    if spec.batch is not None:
        return RunnableCallable(_checkpointed_leg(spec, leg_cfg), name="fallback")
    sync_leg, async_leg = _subgraph_leg(spec, leg_cfg)
    return RunnableCallable(sync_leg, async_leg, name="fallback")


def _subgraph_leg(
    spec: Strategy[Any], leg_cfg: Any
) -> tuple[Callable[..., dict[str, Any]], Callable[..., Any]]:
    """The sync and async twins of a node running ``spec``'s compiled graph as a subgraph."""
    leg = spec.build_graph(leg_cfg)

    def leg_context(
        state: SelfRouteState, runtime: RouteRuntime
    ) -> tuple[AnswerState, StrategyContext[Any]]:
        ctx = runtime.context
        context = StrategyContext(
            llm=ctx.llm,
            config=leg_cfg,
            corpus=ctx.corpus,
            index=_leg_index(spec, leg_cfg, ctx),
            cache_dir=ctx.cache_dir,
            budget=ctx.budget,  # the run's guard: the leg sees what the whole run has left
        )
        return AnswerState(question=state["question"], steps=[]), context

    def fallback(
        state: SelfRouteState, runtime: RouteRuntime, config: RunnableConfig
    ) -> dict[str, Any]:
        """Answer with the fallback strategy's graph, nested in this run."""
        leg_input, context = leg_context(state, runtime)
        # a budget stop in the leg keeps its partial state (and its final node's answer)
        final = invoke_keeping(spec, leg, leg_input, context, config)
        return subgraph_update(spec.name, final, config)

    async def afallback(
        state: SelfRouteState, runtime: RouteRuntime, config: RunnableConfig
    ) -> dict[str, Any]:
        """:func:`fallback` through the leg graph's ``ainvoke``."""
        leg_input, context = leg_context(state, runtime)
        final = await ainvoke_keeping(spec, leg, leg_input, context, config)
        return subgraph_update(spec.name, final, config)

    return fallback, afallback


def _checkpointed_leg(spec: Strategy[Any], leg_cfg: Any) -> Callable[..., dict[str, Any]]:
    """A node answering with a batched strategy through the one run path, checkpointed under its own
    key."""

    def fallback(
        state: SelfRouteState, runtime: RouteRuntime, config: RunnableConfig
    ) -> dict[str, Any]:
        """Answer with the fallback strategy's checkpointed run, under this run's callbacks
        (so this answer's usage counts every call of the leg)."""
        ctx = runtime.context
        leg = run_strategy(
            spec,
            leg_cfg,
            [state["question"]],
            llm=ctx.llm,
            corpus=ctx.corpus,
            index=_leg_index(spec, leg_cfg, ctx),
            cache_dir=ctx.cache_dir,
            callbacks=config.get("callbacks"),
            key_prefix=f"self_route>{spec.name}",
        )[0]
        update = leg_update(spec.name, leg.raw, leg.answer, leg.steps)
        if leg.stopped == "budget":
            # the caller's budget (its guard is in the callbacks) ran out in the leg: stop the
            # answer, keeping the leg's steps (its own checkpoint resumes it)
            calls = leg.usage.llm_calls
            message = f"budget reached in the {spec.name} fallback after {calls} call(s)"
            raise stop_after_sub_run(message, update, config)
        return update

    return fallback


def leg_update(
    name: str, raw: str, answer: str, steps: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The state update of a finished leg: its reply, and its steps after a ``fallback`` head, each
    marked with the leg's name."""
    last = steps[-1] if steps else {}
    head = Step(
        "fallback",
        strategy=name,
        chunks=last.get("chunks"),
        resumed_from=last.get("resumed_from"),
        replayed=last.get("replayed", False),
    )
    return {
        "raw": raw,
        "answer": answer,
        "steps": [Step({**s, "leg": name}) for s in [head, *steps]],
    }


def subgraph_update(name: str, final: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
    """:func:`leg_update` of a single-run leg's final state. A leg stopped by the budget (its final
    state ends with the engine's ``stopped`` step) stops the answer: the stop raised keeps the
    steps the leg made before it and its final node's answer."""
    steps = list(final.get("steps", []))
    raw, answer = final.get("raw", ""), final.get("answer", "")
    if not final.get("stopped"):
        return leg_update(name, raw, answer, steps)
    reason = str(steps.pop().get("reason", "")).removeprefix("budget reached: ")
    message = f"budget reached in the {name} fallback: {reason}"
    raise stop_after_sub_run(message, leg_update(name, raw, answer, steps), config)


def _leg_index(
    spec: Strategy[Any], leg_cfg: Any, ctx: StrategyContext[SelfRouteConfig]
) -> Index | None:
    """The leg's index: ours when it retrieves with the same settings; its own (built or loaded
    from the cache) when it retrieves otherwise; none when it does not retrieve."""
    if not spec.uses_index or not isinstance(leg_cfg, RetrievalSettings):
        return None
    if ctx.index is not None and _same_index(leg_cfg, ctx.config):
        return ctx.index
    return RetrievalService(settings=leg_cfg, cache_dir=ctx.cache_dir).build_index(ctx.corpus)


def _same_index(a: RetrievalSettings, b: RetrievalSettings) -> bool:
    """Whether two settings describe the same index (retriever, its options, chunking)."""
    return (a.retriever, a.chunking(), dict(a.retriever_options)) == (
        b.retriever,
        b.chunking(),
        dict(b.retriever_options),
    )


__all__ = ["fallback_node", "leg_update", "subgraph_update"]
