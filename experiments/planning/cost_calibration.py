"""A strategy's typical cost calibrated from earlier runs' usage (issue #47).

The run plan's typical calls and tokens come from the strategy's cost model
(:mod:`longctx.graphs.metering.costs`): for a loop (an agent, PAI's judge), a guessed constant.
Where a result folder already holds answers of the same strategy with the same settings (the pairs a
resumed run skips: :func:`longctx.experiments.runner.resume.answered_pairs`), their usage says what
a question really costs. The plan's question-time part is scaled, per count (calls, prompt tokens,
completion tokens), by what those answers used over what the model predicted for their corpora (a
ratio, so a corpus of another size is still planned by the model's formula); the index-time part,
built once per corpus, is left as modelled. A ratio is taken only from answers that finished
(``ok``, not stopped by a budget) and whose corpus the run's samples give a size for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from longctx.agents.calibration import ModelSpeed
from longctx.agents.run_plan import StrategyPlan
from longctx.graphs import STRATEGIES
from longctx.graphs.plugin.config import StrategyConfig

#: Usage fields of a question-time count and their index-time part
#: (``longctx.retrieval.contract.Usage``).
COUNTS = (
    ("llm_calls", "index_llm_calls"),
    ("prompt_tokens", "index_prompt_tokens"),
    ("completion_tokens", "index_completion_tokens"),
)


@dataclass(frozen=True)
class CostCalibration:
    """Measured over modelled question-time cost of one strategy's earlier answers.

    Attributes:
        strategy: Registry name.
        answers: Earlier answers it is taken from.
        calls / prompt_tokens / completion_tokens: Ratio of what they used to what the
            model predicted.
    """

    strategy: str
    answers: int
    calls: float
    prompt_tokens: float
    completion_tokens: float


def calibrate(
    strategy: str,
    cfg: StrategyConfig,
    rows: Iterable[Mapping[str, Any]],
    sizes: Mapping[str, tuple[int, int]],
    window: int | None = None,
) -> CostCalibration | None:
    """The calibration of ``strategy`` (config ``cfg``) from ``rows`` (earlier answers with these
    settings), ``sizes`` giving each sample's corpus (tokens, documents); ``None`` without a usable
    row or a typical cost to compare."""
    costs = STRATEGIES.get(strategy).costs
    if costs is None or not costs.has_typical:
        return None
    measured, modelled, answers = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], 0
    for row in rows:
        usage, size = row.get("usage"), sizes.get(row.get("sample_id", ""))
        if (
            row.get("status") != "ok"
            or row.get("stopped")
            or not isinstance(usage, Mapping)
            or size is None
        ):
            continue
        each = costs.typical(
            cfg, corpus_tokens=size[0], documents=size[1], window=window
        ).per_question
        for i, (count, index) in enumerate(COUNTS):
            measured[i] += max(0, (usage.get(count) or 0) - (usage.get(index) or 0))
        modelled[0] += each.calls
        modelled[1] += each.prompt_tokens
        modelled[2] += each.completion_tokens
        answers += 1
    if not answers:
        return None
    ratio = [m / p if p > 0 else 1.0 for m, p in zip(measured, modelled, strict=True)]
    return CostCalibration(strategy, answers, *ratio)


def calibrated(
    plan: StrategyPlan, calibration: CostCalibration, speed: ModelSpeed | None = None
) -> StrategyPlan:
    """``plan`` with its question-time calls and tokens scaled by ``calibration`` (the index-time
    part as modelled), its minutes recomputed at ``speed`` where known."""

    def scaled(total: float, index: float, ratio: float) -> float:
        return index + (total - index) * ratio

    c = calibration
    calls = scaled(plan.calls, plan.index_calls, c.calls)
    prompt = scaled(plan.prompt_tokens, plan.index_prompt_tokens, c.prompt_tokens)
    completion = scaled(plan.completion_tokens, plan.index_completion_tokens, c.completion_tokens)
    seconds = speed.seconds(prompt, completion) if speed is not None else plan.seconds
    return dataclasses.replace(
        plan,
        calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        seconds=seconds,
        calibrated_from=c.answers,
    )
