"""How reports, plots and the demo show the structured strategy, and its Map stage on Ray
(``--ray``)."""

from __future__ import annotations

from longctx.graphs.plugin.api import MAP_ON_RAY, StrategyPresentation

PRESENTATION = StrategyPresentation(
    color="#17becf",
    # one retry per call and short budgets; records extracted for one question's table serve the
    # next that reuses it
    demo_options={
        "retries": 1,
        "sql_retries": 1,
        "plan_max_tokens": 512,
        "extract_max_tokens": 768,
        "answer_max_tokens": 32,
    },
)


#: The Map stage on Ray (``--ray``, ``--endpoints``): the options every stage on Ray shares.
RAY_STAGE = MAP_ON_RAY
