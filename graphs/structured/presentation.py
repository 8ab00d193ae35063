"""How reports, plots and the demo show the structured strategy, and its Map stage on Ray (``--ray``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphs.presentation import StrategyPresentation
from graphs.registry import RayStage

PRESENTATION = StrategyPresentation(
    color="#17becf",
    # one retry per call and short budgets; records extracted for one question's table serve the next that reuses it
    demo_options={
        "retries": 1,
        "sql_retries": 1,
        "plan_max_tokens": 512,
        "extract_max_tokens": 768,
        "answer_max_tokens": 32,
    },
)


def ray_options(address: str | None) -> dict[str, Any]:
    """The Map stage's extractions as Ray tasks, on the cluster at ``address`` (``None``: ``$RAY_ADDRESS`` or a new local one)."""
    return {"map_executor": "ray", **({"ray_address": address} if address else {})}


def spread_map(options: Mapping[str, Any], endpoints: Sequence[str]) -> Mapping[str, Any]:
    """``options`` whose Map stage on Ray also spreads its tasks over ``endpoints`` (their ``ray_endpoints``,
    unless the options set it): a run's unit is one question's answer, and its extractions are where the calls are."""
    if len(endpoints) < 2 or options.get("map_executor") != "ray" or "ray_endpoints" in options:
        return options
    return {**options, "ray_endpoints": list(endpoints)}


RAY_STAGE = RayStage(options=ray_options, spread=spread_map)
