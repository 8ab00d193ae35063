"""A strategy's cost plan as a budget sees it: the plan it registers, with the index calls its
uncached tree or graph still needs, less what a resumable run's checkpoint already holds."""

from __future__ import annotations

from pathlib import Path

from langchain_core.language_models import BaseChatModel

from longctx.graphs.metering.budget import CostPlan
from longctx.graphs.plugin.config import ConfigT
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.runtime.batched import distinct_questions
from longctx.graphs.runtime.run_batched import checkpoint_held
from longctx.graphs.runtime.run_checkpoint import distinct_runs, single_held
from longctx.retrieval.contract import Corpus, Question
from longctx.retrieval.contract.errors import ConfigError


def strategy_plan(
    spec: Strategy[ConfigT],
    cfg: ConfigT,
    corpus: Corpus,
    qs: list[Question],
    chat: BaseChatModel | None,
) -> CostPlan:
    """The plan ``spec`` registers for the questions ``qs`` over ``corpus`` (its least and most
    calls and tokens): a question repeated in a checkpointed batched run (MemAgent's ``resume``)
    is read once, so planned once.

    Raises:
        ConfigError: The strategy declares no cost plan.
    """
    if spec.costs is None or not spec.costs.has_bounds:
        raise ConfigError(
            f"Strategy {spec.name!r} declares no cost plan (costs= or cost_plan= on its "
            "registration), so it cannot be estimated"
        )
    if spec.batch is not None:
        qs = distinct_questions(spec.batch, cfg, qs)[0]
    return spec.costs.bounds(cfg, corpus=corpus, questions=qs, llm=chat)


def remaining_plan(
    spec: Strategy[ConfigT],
    cfg: ConfigT,
    corpus: Corpus,
    qs: list[Question],
    chat: BaseChatModel,
    cache_dir: str | Path | None,
    checkpoint: bool = False,
) -> CostPlan:
    """The plan a budget is checked against: the strategy's plan, less what the checkpoint of a
    resumable run (MemAgent) or, with ``checkpoint``, the checkpoints of single runs already hold,
    which it will not spend again. Without a checkpoint that covers the difference, a budget the
    whole plan cannot fit is refused up front as for every other strategy, not spent on a run that
    cannot finish. With ``checkpoint`` (a batched run: ``resume``), a question asked twice is one
    run, planned once."""
    if checkpoint and spec.batch is None:
        qs = distinct_runs(spec, cfg, qs, llm=chat, corpus=corpus)
    held = checkpoint_held(spec, cfg, qs, llm=chat, corpus=corpus, cache_dir=cache_dir)
    plan = with_index_calls(
        spec, cfg, corpus, chat, cache_dir, strategy_plan(spec, cfg, corpus, qs, chat)
    )
    if checkpoint and spec.batch is None:  # checkpointed single runs: what their checkpoints paid
        paid = single_held(spec, cfg, qs, llm=chat, corpus=corpus, cache_dir=cache_dir)
        return plan.after(paid.llm_calls + paid.cached_calls, None)
    return plan.after(held.calls, held.step)


def with_index_calls(
    spec: Strategy[ConfigT],
    cfg: ConfigT,
    corpus: Corpus,
    chat: BaseChatModel | None,
    cache_dir: str | Path | None,
    plan: CostPlan,
) -> CostPlan:
    """``plan`` with the index-time calls still to make, and the prompt tokens they send, counted in
    its least (an index-time strategy whose tree or graph is not cached under ``cache_dir``: a
    budget that cannot pay for the build is refused up front); with none of the build, at least or
    at most, where the index is cached."""
    left = index_left(spec, cfg, corpus, chat, cache_dir)
    return plan.index_cached() if left is None else plan.with_index_calls(*left)


def index_left(
    spec: Strategy[ConfigT],
    cfg: ConfigT,
    corpus: Corpus,
    chat: BaseChatModel | None,
    cache_dir: str | Path | None,
) -> tuple[int, int] | None:
    """``(calls, prompt tokens)`` the strategy's index build still needs at least (its
    ``index_calls`` hook; a hook that gives calls alone claims no tokens; none without a hook), or
    ``None`` where the hook says the index is cached (nothing of it to build)."""
    if spec.index_calls is None:
        return 0, 0
    left = spec.index_calls(cfg, corpus, chat, cache_dir)
    return left if left is None or isinstance(left, tuple) else (left, 0)
