"""The page: ``report/report.html`` put together from its sections, redacted and written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.planning.amortized_costs import amortization
from longctx.experiments.planning.context_costs import per_context_table
from longctx.experiments.planning.prices import PriceRow
from longctx.experiments.reports.html_report.amortized import amortized_section
from longctx.experiments.reports.html_report.assets import CSS, SCRIPT
from longctx.experiments.reports.html_report.cells import e
from longctx.experiments.reports.html_report.contexts import (
    per_context_section,
    task_length_section,
)
from longctx.experiments.reports.html_report.costs import strategy_costs, summary_table
from longctx.experiments.reports.html_report.drilldown import drilldown_section
from longctx.experiments.reports.html_report.prompt_cache import prompt_cache_section
from longctx.experiments.reports.html_report.sections import (
    costs_section,
    header_section,
    incomplete_section,
    plots_section,
    winners_section,
)
from longctx.experiments.reports.html_report.tables import (
    by_length_section,
    pairwise_section,
    summary_section,
)
from longctx.experiments.reports.html_report.winners import pick_winners
from longctx.retrieval.redaction import redact

HTML_FILE = "report.html"


def write_html_report(
    folder: str | Path,
    *,
    benchmark: str,
    manifest: Mapping[str, Any],
    summary: Sequence[Mapping[str, Any]],
    by_length: Sequence[Mapping[str, Any]],
    per_strategy: Mapping[str, Mapping[str, Any]],
    samples: Mapping[str, Any],
    prices: Mapping[str, PriceRow] | None = None,
    winners: Sequence[Mapping[str, Any]] | None = None,
    pairwise: Sequence[Mapping[str, Any]] | None = None,
    missing: Mapping[str, int] | None = None,
    costs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Path:
    """Write ``folder/report.html`` (see :mod:`longctx.experiments.reports.html_report`) and
    return its path.

    Args:
        folder: The report folder (plots already written there are embedded).
        benchmark: Benchmark name, for the title.
        manifest: The run's ``manifest.json``.
        summary: :func:`longctx.experiments.reports.report.build_report`'s summary rows.
        by_length: Its accuracy-by-length rows.
        per_strategy: Strategy -> ``{"official", "rows", "per_sample": [(row, score)]}``.
        samples: Sample id -> sample (question and gold answers).
        prices: The user's price table (:func:`longctx.experiments.planning.prices.load_prices`).
        winners: :func:`pick_winners` with per-question values (the report's); none named without.
        pairwise: The score's pairwise table (``longctx.experiments.reports.comparison.pairwise``),
            shown as a matrix.
        missing: Strategy -> questions it has not answered: an incomplete run says so at the top
            and names no winner.
        costs: :func:`strategy_costs` of these rows and prices, when the caller has them already.
    """
    folder = Path(folder)
    costs = costs if costs is not None else strategy_costs(per_strategy, manifest, prices)
    table = summary_table(summary, costs)
    parts = [
        _head(benchmark),
        header_section(benchmark, manifest, per_strategy, samples),
        incomplete_section(missing or {}, len(samples)),
        winners_section(
            [] if missing else list(winners) if winners is not None else pick_winners(table)
        ),
        summary_section(table),
        pairwise_section(pairwise or [], list(per_strategy)),
        costs_section(costs, prices),
        amortized_section(amortization(per_strategy, costs)),
        prompt_cache_section(table, costs),
        by_length_section(by_length),
        task_length_section({n: d["official"] for n, d in per_strategy.items()}),
        per_context_section(per_context_table(per_strategy)),
        plots_section(folder),
        drilldown_section(per_strategy, samples, costs, manifest),
        SCRIPT,
        "</body></html>\n",
    ]
    path = folder / HTML_FILE
    path.write_text(redact("\n".join(parts)), encoding="utf-8")
    return path


def _head(benchmark: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src '
        "data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>longctx report: {e(benchmark)}</title><style>{CSS}</style></head><body>"
    )
