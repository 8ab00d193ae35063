"""The up-front plan of a run: model calls, tokens and minutes per strategy, before any call.

Calls and tokens follow from each strategy's config and the corpus size, by the expected-cost
cost model the strategy registers (``costs=``, :mod:`longctx.graphs.metering.costs`: its typical
counts, which lie within the bounds its budget is checked against; a model may stop early or write
to its budget), the part spent at index time (built once per corpus, reused by later questions)
printed apart; minutes come from the model's speed as measured on this machine
(:mod:`longctx.agents.calibration`), so the estimate holds for a busy 2-core laptop as well as a
quiet server. ``longctx run``, ``demo`` and ``answer`` print the plan, and on a terminal ask before
a run estimated above :data:`CONFIRM_MINUTES`.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.agents.calibration import ModelSpeed, model_speed
from longctx.agents.chat_models import EmbeddedChatModel
from longctx.graphs.calls.prompt_sharing import shared_prompt_tokens
from longctx.graphs.metering.costs import StrategyCosts
from longctx.graphs.plugin.config import StrategyConfig
from longctx.graphs.plugin.registry import STRATEGIES

#: A run estimated longer than this asks for confirmation on a terminal (and warns elsewhere).
CONFIRM_MINUTES = 15.0
#: Prompt tokens/s of the embedded model on 2 busy cores (the slowest measured, issue 31): a plan
#: under ``CONFIRM_MINUTES`` at this rate needs no calibration to know it is not too slow.
SLOWEST_PROMPT_RATE = 45


@dataclass(frozen=True)
class StrategyPlan:
    """What one strategy is expected to cost over the questions of a run.

    Attributes:
        strategy: Registry name.
        questions: Questions it answers.
        calls: Model calls.
        prompt_tokens: Tokens the model reads.
        completion_tokens: Tokens the model writes.
        seconds: At the measured speed; ``None`` when the model's speed is not known.
        shared_prompt_tokens: Part of ``prompt_tokens`` a prompt cache can serve (a provider's, or
            the embedded model's kept context): the text its prompts start with for every question
            over a corpus (:mod:`longctx.graphs.calls.prompt_sharing`), read again by questions
            2..N.
        index_calls: Part of ``calls`` made at index time, once per corpus (what the cost model
            declares as built once and reused: RAPTOR's tree, structured's extraction; nothing when
            cached); the rest is question time.
        index_prompt_tokens: Part of ``prompt_tokens`` read at index time.
        index_completion_tokens: Part of ``completion_tokens`` written at index time.
        rerank_calls / rerank_documents / rerank_tokens: Rerank calls besides the model calls (a
            strategy whose ``rerank`` names a reranker: one per retrieval), the candidate documents
            and the tokens they send.
        calibrated_from: Earlier answers with the same settings its question-time counts are
            calibrated from (:mod:`longctx.experiments.planning.cost_calibration`); 0: the cost
            model's typical counts as they are.
    """

    strategy: str
    questions: int
    calls: float
    prompt_tokens: float
    completion_tokens: float
    seconds: float | None = None
    shared_prompt_tokens: float = 0.0
    index_calls: float = 0.0
    index_prompt_tokens: float = 0.0
    index_completion_tokens: float = 0.0
    rerank_calls: float = 0.0
    rerank_documents: float = 0.0
    rerank_tokens: float = 0.0
    calibrated_from: int = 0

    def __add__(self, other: StrategyPlan) -> StrategyPlan:
        seconds = (
            None if self.seconds is None or other.seconds is None else self.seconds + other.seconds
        )
        return StrategyPlan(
            self.strategy,
            self.questions + other.questions,
            self.calls + other.calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            seconds,
            self.shared_prompt_tokens + other.shared_prompt_tokens,
            self.index_calls + other.index_calls,
            self.index_prompt_tokens + other.index_prompt_tokens,
            self.index_completion_tokens + other.index_completion_tokens,
            self.rerank_calls + other.rerank_calls,
            self.rerank_documents + other.rerank_documents,
            self.rerank_tokens + other.rerank_tokens,
            max(self.calibrated_from, other.calibrated_from),
        )


def estimate(
    strategy: str,
    cfg: StrategyConfig,
    corpus_tokens: int,
    documents: int,
    questions: int,
    window: int | None = None,
    speed: ModelSpeed | None = None,
) -> StrategyPlan:
    """The plan of ``strategy`` (with its config ``cfg``) over one corpus and ``questions``
    questions.

    ``window`` is the model's context window (full-context reads are cut to it).

    Raises:
        ValueError: The strategy registers no expected cost.
    """
    cost = _costs(strategy)
    if cost is None:
        raise ValueError(
            f"Strategy {strategy!r} registers no expected cost (costs= or expected_cost= on its "
            "registration), so it cannot be planned"
        )
    expected = cost.typical(cfg, corpus_tokens=corpus_tokens, documents=documents, window=window)
    each, once = expected.per_question, expected.once
    calls = each.calls * questions + once.calls
    prompt = each.prompt_tokens * questions + once.prompt_tokens
    completion = each.completion_tokens * questions + once.completion_tokens
    seconds = speed.seconds(prompt, completion) if speed is not None else None
    shared = shared_prompt_tokens(
        STRATEGIES.get(strategy).prompt_sharing, cfg, corpus_tokens, questions, each.prompt_tokens
    )
    index, rerank = expected.index, expected.rerank
    return StrategyPlan(
        strategy,
        questions,
        calls,
        prompt,
        completion,
        seconds,
        shared,
        index.calls,
        index.prompt_tokens,
        index.completion_tokens,
        rerank_calls=rerank.calls * questions,
        rerank_documents=rerank.documents * questions,
        rerank_tokens=rerank.tokens * questions,
    )


def _costs(strategy: str) -> StrategyCosts[Any] | None:
    """The strategy's registered cost model when it gives a typical cost (``None``: unknown, or it
    declares none)."""
    costs = STRATEGIES.get(strategy).costs if strategy in STRATEGIES else None
    return costs if costs is not None and costs.has_typical else None


Corpora = Sequence[tuple[int, int, int]]


def plan_for(
    configs: Mapping[str, StrategyConfig],
    corpora: Corpora | Mapping[str, Corpora],
    chat: BaseChatModel,
    *,
    speed: ModelSpeed | None = None,
    calibrate: bool | None = None,
) -> tuple[list[StrategyPlan], ModelSpeed | None]:
    """Plans of the strategies in ``configs`` (name -> config) over ``corpora`` ((tokens, documents,
    questions) per corpus; or per strategy, name -> those), and the speed they assume: ``speed``,
    else, for the embedded model, its calibrated speed (measured once per machine).
    ``calibrate=None`` measures only when the plan could exceed :data:`CONFIRM_MINUTES` at the
    slowest rate seen; ``False`` never (no minutes then)."""
    window = getattr(chat, "context_window", None)
    # a strategy without a formula is not planned
    work = {
        name: (cfg, corpora.get(name, ()) if isinstance(corpora, Mapping) else corpora)
        for name, cfg in configs.items()
        if _costs(name) is not None
    }
    plans = [
        p
        for p in (
            total(estimate(name, cfg, tokens, docs, n, window) for tokens, docs, n in todo if n)
            for name, (cfg, todo) in work.items()
        )
        if p
    ]
    if speed is None and isinstance(chat, EmbeddedChatModel) and calibrate is not False:
        prompt = sum(p.prompt_tokens for p in plans)
        if calibrate or prompt > CONFIRM_MINUTES * 60 * SLOWEST_PROMPT_RATE:
            speed = model_speed(chat)
    if speed is not None:
        plans = [_timed(p, speed) for p in plans]
    return plans, speed


def _timed(plan: StrategyPlan, speed: ModelSpeed) -> StrategyPlan:
    return dataclasses.replace(
        plan, seconds=speed.seconds(plan.prompt_tokens, plan.completion_tokens)
    )


def total(plans: Iterable[StrategyPlan]) -> StrategyPlan | None:
    """All plans added up (``None`` for none)."""
    result = None
    for p in plans:
        result = p if result is None else result + p
    return result


def describe_plan(plans: Sequence[StrategyPlan], model: str, speed: ModelSpeed | None) -> str:
    """Lines saying, per strategy, calls, tokens and minutes, and the speed they assume."""
    lines = [f"Plan on {model}:"]
    for p in plans:
        minutes = f", about {_minutes(p.seconds)}" if p.seconds is not None else ""
        reranks = (
            f", + ~{math.ceil(p.rerank_calls):,} rerank calls (~{round(p.rerank_documents):,} "
            f"documents, ~{round(p.rerank_tokens):,} tokens)"
            if p.rerank_calls
            else ""
        )
        measured = (
            f" (calibrated from {p.calibrated_from:,} earlier answers)" if p.calibrated_from else ""
        )
        lines.append(
            f"  {p.strategy}: {p.questions} question(s), ~{math.ceil(p.calls):,} calls, "
            f"~{round(p.prompt_tokens):,} prompt + ~{round(p.completion_tokens):,} completion "
            f"tokens{minutes}{reranks}{measured}"
        )
        if p.index_calls > 0:
            lines.append(
                "    of which at index time, once per corpus and reused by later questions "
                f"(nothing when cached): ~{math.ceil(p.index_calls):,} calls, "
                f"~{round(p.index_prompt_tokens):,} prompt + "
                f"~{round(p.index_completion_tokens):,} completion tokens; at question time "
                f"~{math.ceil(p.calls - p.index_calls):,} calls, "
                f"~{round(p.prompt_tokens - p.index_prompt_tokens):,} prompt + "
                f"~{round(p.completion_tokens - p.index_completion_tokens):,} completion tokens"
            )
    lines += _sharing_lines(plans)
    whole = total(plans)
    if speed is not None and whole is not None and whole.seconds is not None:
        lines.append(
            f"  in all about {_minutes(whole.seconds)} at {speed.prompt_tokens_per_second:,.0f} "
            f"prompt and {speed.completion_tokens_per_second:,.0f} completion tokens/s (measured "
            f"on this machine, {speed.conditions()})"
        )
    return "\n".join(lines)


def _sharing_lines(plans: Sequence[StrategyPlan]) -> list[str]:
    """What a prompt cache can save, per strategy whose prompts start with text every question
    shares."""
    lines = []
    for p in plans:
        sharing = STRATEGIES.get(p.strategy).prompt_sharing if p.strategy in STRATEGIES else None
        if sharing is None or p.shared_prompt_tokens < 1:
            continue
        share = p.shared_prompt_tokens / p.prompt_tokens
        lines.append(
            f"  {p.strategy}: its prompts start with {sharing.what}; with a prompt cache, "
            f"~{round(p.shared_prompt_tokens):,} of its prompt tokens ({share:.0%}) can be read "
            "from the cache"
        )
    if lines:
        others = [p.strategy for p in plans if p.shared_prompt_tokens < 1]
        if others:
            lines.append(
                f"  {', '.join(others)}: prompts start with what differs per question (no "
                "prompt-cache saving across questions)"
            )
    return lines


def too_slow(plans: Sequence[StrategyPlan], minutes: float = CONFIRM_MINUTES) -> bool:
    """Whether the plans add up to more than ``minutes`` at the measured speed."""
    whole = total(plans)
    return whole is not None and whole.seconds is not None and whole.seconds > minutes * 60


def confirm(message: str, *, yes: bool = False, stdin: Any = None, out: Any = None) -> bool:
    """Print ``message`` and, on a terminal, ask to go on (``--yes`` skips the question). Where
    stdin is not a terminal (scripts, CI, pipes) nobody is asked: the run goes on."""
    stdin = stdin or sys.stdin
    out = out or sys.stderr
    print(message, file=out, flush=True)
    if yes or not stdin.isatty():
        return True
    print("Go on? [y/N] ", end="", file=out, flush=True)
    reply = stdin.readline().strip().lower()
    return reply in ("y", "yes")


def announce_plan(
    plans: Sequence[StrategyPlan],
    speed: ModelSpeed | None,
    model: str,
    *,
    yes: bool = False,
    out: Any = None,
) -> bool:
    """Print the plan; when it exceeds :data:`CONFIRM_MINUTES`, warn and (on a terminal, without
    ``yes``) ask whether to go on. Returns whether to go on."""
    text = describe_plan(plans, model, speed)
    if not too_slow(plans):
        print(text, file=out or sys.stderr, flush=True)
        return True
    text += (
        f"\nWarning: that is over {CONFIRM_MINUTES:.0f} minutes on this machine. A served model "
        "(--llm openai:MODEL) is much faster; fewer questions (--limit) or strategies are "
        "quicker."
    )
    return confirm(text, yes=yes, out=out)


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
