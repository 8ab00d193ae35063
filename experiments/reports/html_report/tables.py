"""The report's tables of numbers: the summary (score beside its interval), the paired
comparison of scores as a matrix, and the score by corpus length."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.experiments.reports import stats
from longctx.experiments.reports.html_report.cells import e, number, swatch, usd

#: The summary's first columns on the page: the score beside its interval and n,
#: in view without scrolling.
LEAD_COLUMNS = ("strategy", "score", "score_ci", "n_scored")

#: A paired cell whose differences are all equal: resampling cannot vary, and [100,
#: 100] would read as certainty.
_NO_PAIRED_CI = (
    '<span class="na" title="every shared question differs by the same amount: resampling cannot '
    'show the uncertainty">no interval</span>'
)


def summary_section(table: list[dict[str, Any]]) -> str:
    """The summary table, one row per strategy
    (:func:`~experiments.reports.html_report.costs.summary_table`'s rows)."""
    if not table:
        return '<section id="summary"><h2>Summary</h2><p>No answers in this run.</p></section>'
    columns = _summary_columns(table)
    head = "".join(f"<th>{'95% interval' if c == 'score_ci' else e(c)}</th>" for c in columns)
    body = [
        f'<tr data-strategy="{e(row["strategy"])}">'
        + "".join(_summary_cell(c, row) for c in columns)
        + "</tr>"
        for row in table
    ]
    return (
        '<section id="summary"><h2>Summary</h2><p class="note">score: the benchmark\'s official '
        "headline, with its 95% bootstrap "
        "interval over the n_scored questions (exact binomial where every answer scored the "
        "same); llm_calls, tokens and "
        "seconds: means per answered question; cost_usd: estimated USD per answer, total_usd: "
        "the whole run (see below); "
        "rerank_calls and rerank_tokens (where a strategy reranks): its reranker's calls and "
        "tokens per answer, besides llm_calls, "
        "and rerank_usd their part of cost_usd where the reranker has a price.</p>"
        '<div class="wide"><table '
        f'class="summary"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div></section>"
    )


def _summary_columns(table: list[dict[str, Any]]) -> list[str]:
    """The summary's columns: :data:`LEAD_COLUMNS` first (the interval as one column), then the
    rest as found."""
    seen = list(dict.fromkeys(k for row in table for k in row))
    present = {*seen, *(("score_ci",) if "score_ci_low" in seen else ())}
    return [c for c in LEAD_COLUMNS if c in present] + [
        c for c in seen if c not in (*LEAD_COLUMNS, "score_ci_low", "score_ci_high")
    ]


def _summary_cell(column: str, row: Mapping[str, Any]) -> str:
    """One cell of the summary table."""
    if column == "strategy":
        return f"<td>{swatch(row['strategy'])}</td>"
    if column == "score_ci":
        return f'<td class="num ci">{score_interval(row)}</td>'
    if column in ("cost_usd", "total_usd", "rerank_usd"):
        return f'<td class="num">{usd(row.get(column))}</td>'
    return f'<td class="num">{e(number(row.get(column)))}</td>'


def score_interval(row: Mapping[str, Any]) -> str:
    """``[low, high]`` of the score, or why there is none (never a zero-width interval shown
    as certainty)."""
    low, high = row.get("score_ci_low"), row.get("score_ci_high")
    if low is not None and high is not None:
        return f"[{e(number(low, 1))}, {e(number(high, 1))}]"
    if row.get("score") is None:
        return ""
    return (
        '<span class="na" title="every question scored the same, so resampling cannot show how '
        'uncertain the score is">n/a</span>'
    )


def pairwise_section(pairs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
    """The score's paired comparisons as a matrix: row minus column, 95% interval, adjusted p."""
    if len(names) < 2 or not pairs:
        return ""
    cells = _both_ways(pairs)
    head = "".join(f"<th>{swatch(n)}</th>" for n in names)
    body = [
        f"<tr><th>{swatch(a)}</th>"
        + "".join(_pair_cell(a, b, cells.get((a, b))) for b in names)
        + "</tr>"
        for a in names
    ]
    return (
        '<section id="pairwise"><h2>Paired comparison of scores</h2><p class="note">Each cell: '
        "row minus column on the questions both "
        "answered, its 95% paired-bootstrap interval, and the p-value of McNemar's exact test "
        "(0/1 scores) or a paired sign-flip "
        "permutation test, Holm-adjusted across the pairs; bold cells differ beyond chance. Also "
        "in <code>pairwise.csv</code>.</p>"
        '<div class="wide"><table '
        f'class="pairwise"><thead><tr><th></th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div></section>"
    )


def _both_ways(pairs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """Each comparison under (a, b) as computed and under (b, a) with the difference and
    interval negated."""
    cell: dict[tuple[str, str], Mapping[str, Any]] = {}
    for pr in pairs:
        cell[(pr["strategy_a"], pr["strategy_b"])] = pr
        flipped = {
            **pr,
            "mean_diff": None if pr["mean_diff"] is None else -pr["mean_diff"],
            "ci_low": None if pr["ci_high"] is None else -pr["ci_high"],
            "ci_high": None if pr["ci_low"] is None else -pr["ci_low"],
        }
        cell[(pr["strategy_b"], pr["strategy_a"])] = flipped
    return cell


def _pair_cell(a: str, b: str, r: Mapping[str, Any] | None) -> str:
    """The matrix cell of row ``a`` minus column ``b``."""
    if a == b or r is None or r["mean_diff"] is None:
        return '<td class="na">·</td>'
    significant = r["p_adjusted"] is not None and r["p_adjusted"] < 0.05
    p_text = stats.format_p(r["p_adjusted"])
    ci = (
        f"[{e(number(r['ci_low'], 1))}, {e(number(r['ci_high'], 1))}]"
        if r["ci_low"] is not None and r["ci_high"] is not None
        else _NO_PAIRED_CI
    )
    return (
        f'<td class="num{" sig" if significant else ""}" '
        f'data-pair="{e(a)}|{e(b)}">{e(number(r["mean_diff"], 1))}'
        f'<br><span class="ci">{ci}</span><br><span class="p">p {e(p_text)} · n '
        f"{e(r['n'])}</span></td>"
    )


def by_length_section(by_length: Sequence[Mapping[str, Any]]) -> str:
    """Mean score per corpus-length bucket, one column per strategy."""
    if not by_length:
        return ""
    columns = list(dict.fromkeys(k for row in by_length for k in row))
    head = "".join(f"<th>{swatch(c) if c != 'length' else e(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{e(number(row.get(c)))}</td>' for c in columns) + "</tr>"
        for row in by_length
    )
    return (
        '<section id="by-length"><h2>Score by corpus length</h2><p class="note">Mean '
        "per-question score in each corpus-length bucket (tokens).</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>"
    )
