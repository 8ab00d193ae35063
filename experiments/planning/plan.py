"""The up-front plan of an experiment: per strategy, the calls, tokens and minutes of the answers
still to give (finished ones in the result folder are not counted), at the measured model speed,
calibrated from the usage of the answers already there with the same settings
(:mod:`longctx.experiments.planning.cost_calibration`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.agents.calibration import ModelSpeed
from longctx.agents.run_plan import StrategyPlan, plan_for
from longctx.experiments.planning import cost_calibration
from longctx.experiments.runner import RunConfig, latest_rows, read_rows
from longctx.experiments.runner.resume import answered_pairs
from longctx.graphs import STRATEGIES


def plan_experiment(
    config: RunConfig,
    samples: list[Any],
    chat: BaseChatModel,
    out: str | Path | None = None,
    *,
    calibrate: bool | None = True,
) -> tuple[list[StrategyPlan], ModelSpeed | None]:
    """Plans of ``config``'s strategies over the ``samples`` not yet answered in ``out``, and the
    speed they assume (the embedded model is calibrated once per machine; see
    :func:`longctx.agents.run_plan.plan_for`)."""
    latest = latest_rows(read_rows(Path(out))) if out else {}
    done = answered_pairs(latest, config, chat)[0] if out else set()
    corpora: dict[str, list[tuple[int, int, int]]] = {}
    for name in config.strategies:
        groups: dict[str, list[int]] = {}
        for s in samples:
            if (s.sample_id, name) not in done:
                groups.setdefault(s.corpus.fingerprint, [s.corpus.num_tokens, len(s.corpus), 0])[
                    2
                ] += 1
        corpora[name] = [(tokens, docs, n) for tokens, docs, n in groups.values()]
    configs = {
        name: STRATEGIES.get(name).make_config(**dict(config.strategy_options.get(name, {})))
        for name in config.strategies
    }
    plans, speed = plan_for(configs, corpora, chat, calibrate=calibrate)
    sizes = {s.sample_id: (s.corpus.num_tokens, len(s.corpus)) for s in samples}
    window = getattr(chat, "context_window", None)
    for i, plan in enumerate(
        plans
    ):  # the typical cost, measured where this folder holds answers like these
        rows = [latest[key] for key in done if key[1] == plan.strategy]
        found = cost_calibration.calibrate(
            plan.strategy, configs[plan.strategy], rows, sizes, window
        )
        plans[i] = cost_calibration.calibrated(plan, found, speed) if found is not None else plan
    return plans, speed
