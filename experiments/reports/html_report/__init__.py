"""``report/report.html``: one self-contained page that compares the strategies of a run and
shows why each one answered as it did.

The page has the summary table, the plots (embedded PNG), the winner per metric (best value; the
cheaper strategy wins a tie), an estimated money cost per strategy
(:mod:`longctx.experiments.planning.prices`), a question's cost as the questions over one corpus
accumulate with the break-even points (:mod:`longctx.experiments.planning.amortized_costs`),
BABILong's accuracy per task x length and the cost per context with a legend per column
(:mod:`~experiments.reports.html_report.contexts`), and a collapsible drill-down per question: the
question, the gold answers, and for each strategy its answer, score, cost, evidence and steps: each
step as its strategy's registry entry shows it (``presentation.step_views`` and ``run_views``,
declared in the strategy's package), every other step as its facts.

Self-contained: inline CSS and a little inline JavaScript, images as ``data:`` URIs, no
request at view time. Every string that comes from the data is HTML-escaped. Per-sample
scores are the benchmark scorer's (``official["per_sample"]``), never recomputed here.
Opening ``report.html#q-<sample id>`` opens that question's drill-down.

One module per idea: the data the page shows (:mod:`~experiments.reports.html_report.costs`,
:mod:`~experiments.reports.html_report.winners`), values as HTML text
(:mod:`~experiments.reports.html_report.cells`), the sections
(:mod:`~experiments.reports.html_report.sections`, :mod:`~experiments.reports.html_report.tables`,
:mod:`~experiments.reports.html_report.amortized`,
:mod:`~experiments.reports.html_report.drilldown`, :mod:`~experiments.reports.html_report.steps`),
the inline assets (:mod:`~experiments.reports.html_report.assets`) and the page
(:mod:`~experiments.reports.html_report.page`).
"""

from __future__ import annotations

from longctx.experiments.reports.html_report.costs import row_model, strategy_costs, summary_table
from longctx.experiments.reports.html_report.page import HTML_FILE, write_html_report
from longctx.experiments.reports.html_report.winners import pick_winners, significance_text

__all__ = [
    "HTML_FILE",
    "pick_winners",
    "row_model",
    "significance_text",
    "strategy_costs",
    "summary_table",
    "write_html_report",
]
