"""``report/report.html``: one self-contained page that compares the strategies of a run and
shows why each one answered as it did.

The page has the summary table, the plots (embedded PNG), the winner per metric (best
value; the cheaper strategy wins a tie), an estimated money cost per strategy
(:mod:`experiments.prices`), and a collapsible drill-down per question: the question, the
gold answers, and for each strategy its answer, score, cost, evidence and steps: each step as
its strategy's registry entry shows it (``presentation.step_views`` and ``run_views``, declared
in the strategy's package), every other step as its facts.

Self-contained: inline CSS and a little inline JavaScript, images as ``data:`` URIs, no
request at view time. Every string that comes from the data is HTML-escaped. Per-sample
scores are the benchmark scorer's (``official["per_sample"]``), never recomputed here.
Opening ``report.html#q-<sample id>`` opens that question's drill-down.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agents.jsonsafe import dumps
from experiments import comparison, stats
from experiments.plots import strategy_color
from experiments.prices import DEFAULT_PRICES_DATE, Price, PriceRow, price_for, row_cost, row_index_cost
from graphs.presentation import LEG_KEY, StrategyPresentation, escape
from graphs.presentation import text as cut
from graphs.registry import STRATEGIES
from retrieval.redaction import redact

HTML_FILE = "report.html"
#: Metrics that can have a winner: (summary key, label, higher is better).
METRICS = (
    ("score", "Best score", True),
    ("evidence_recall", "Best evidence recall", True),
    ("cost_usd", "Cheapest (estimated USD per answer)", False),
    ("tokens", "Fewest tokens per answer", False),
    ("seconds", "Fastest (seconds per answer)", False),
)


def e(value: Any) -> str:
    """HTML-escaped text of any value (``None`` is empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def anchor(sample_id: Any) -> str:
    """The element id of a question's drill-down (``q-<id>``, safe characters only)."""
    return "q-" + re.sub(r"[^A-Za-z0-9_.-]", "_", str(sample_id))


# -- costs and winners ------------------------------------------------------------------------------
def row_model(row: Mapping[str, Any], manifest: Mapping[str, Any]) -> str | None:
    """The model that answered a row: its own config, else the run's manifest."""
    return (row.get("config") or {}).get("llm") or manifest.get("model")


def strategy_costs(per_strategy: Mapping[str, Mapping[str, Any]], manifest: Mapping[str, Any],
                   prices: Mapping[str, PriceRow] | None) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Per strategy: total and per-answer estimated USD over its answered rows (cached prompt tokens
    at the cached rate), the same without a prompt cache (``usd_per_answer_uncached``: every prompt
    token at the prompt rate), the part of the total spent at index time (``index_usd``), and the
    prices used (``None`` costs when some model has no price)."""
    out = {}
    for name, data in per_strategy.items():
        ok = [r for r in data["rows"] if r.get("status") == "ok"]
        used: dict[str, Price | None] = {}
        costs, uncached, index_costs = [], [], []
        for row in ok:
            model = row_model(row, manifest) or "unknown"
            if model not in used:
                used[model] = price_for(model, prices)
            costs.append(row_cost(row, used[model], prices))
            uncached.append(row_cost(row, used[model], prices, cached=False))
            index_costs.append(row_index_cost(row, used[model]))
        known = bool(costs) and all(c is not None for c in costs)
        total = sum(costs) if known else None  # type: ignore[arg-type]
        total_uncached = sum(uncached) if known else None  # type: ignore[arg-type]
        index_total = sum(index_costs) if known else None  # type: ignore[arg-type]
        out[name] = {"total_usd": total, "usd_per_answer": total / len(costs) if total is not None else None,
                     "usd_per_answer_uncached": total_uncached / len(costs) if total_uncached is not None else None,
                     "cached_prompt_tokens": sum((r.get("usage") or {}).get("cached_prompt_tokens", 0) for r in ok), "index_usd": index_total,
                     "prices": used, "table": prices}  # fmt: skip
    return out


#: How each metric's differences read in a sentence.
UNITS = {"score": "points", "evidence_recall": "points", "cost_usd": "USD", "tokens": "tokens", "seconds": "seconds"}


def pick_winners(rows: Sequence[Mapping[str, Any]], per_question: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None) -> list[dict[str, Any]]:
    """Per metric, the leader (the best value; among equal values the cheaper strategy, or for the
    cost metrics the better-scoring one) and whether the data makes it the winner.

    A winner is named (``strategies``) only when the leader beats every other strategy on the
    questions they share with a Holm-adjusted paired p below 0.05 (``experiments.comparison``);
    otherwise ``strategies`` is empty and ``note`` says so, with n and the smallest difference
    these questions could detect. Without ``per_question`` (metric -> strategy -> question id ->
    value) nothing can be tested and no winner is named.

    ``rows`` are summary rows with ``strategy``, ``score``, ``cost_usd``, ``tokens`` and
    ``seconds`` (missing or ``None`` values take no part).
    """
    winners = []
    for key, label, higher in METRICS:
        candidates = [r for r in rows if isinstance(r.get(key), (int, float))]
        if not candidates:
            continue
        best = max(r[key] for r in candidates) if higher else min(r[key] for r in candidates)
        tied = [r for r in candidates if abs(r[key] - best) <= 1e-9]
        top = (_cheaper if key in ("score", "evidence_recall") else _better_scoring)(tied)
        leader = top[0]["strategy"]
        others = [r["strategy"] for r in candidates if r["strategy"] != leader]
        values = (per_question or {}).get(key)
        if not others:
            verdict = {"significant": False, "n": 0, "detectable": None, "closest": None, "p_adjusted": None}
            note = f"{label}: only {leader} has a value; nothing to compare."
        elif values is None:
            verdict = {"significant": False, "n": 0, "detectable": None, "closest": None, "p_adjusted": None}
            note = f"{label}: not tested (no per-question values); best value {leader}."
        else:
            pairs = comparison.pairwise({r["strategy"]: values.get(r["strategy"], {}) for r in candidates}, metric=key)
            verdict = comparison.significant_winner(leader, others, pairs, higher=higher)
            note = comparison.verdict_line(label, leader, verdict, UNITS.get(key, "points"))
        winners.append({"metric": key, "label": label, "strategies": [leader] if verdict["significant"] else [], "leader": leader,
                        "value": best, "significant": verdict["significant"], "n": verdict["n"], "detectable": verdict["detectable"],
                        "note": note})  # fmt: skip
    return winners


def incomplete_line(missing: Mapping[str, int], questions: int) -> str:
    """What an unfinished run lacks, and how to finish it."""
    parts = ", ".join(f"{name} {n} of {questions}" for name, n in missing.items())
    return (f"Incomplete run: answers missing ({parts}). No winner is named until every strategy has answered every "
            "question: rerun the same 'longctx run' command (same --out) to finish it.")  # fmt: skip


def significance_text(winners: Sequence[Mapping[str, Any]], *, missing: Mapping[str, int] | None = None, questions: int = 0) -> str:
    """The verdict of every metric, one line each (the terminal's and ``significance.md``'s text)."""
    if missing:
        return incomplete_line(missing, questions) + "\n"
    head = "Winners (paired tests on the shared questions, Holm-adjusted, 5%)"
    lines = [f"{head}:"] + [f"- {w['note']}" for w in winners]
    return "\n".join(lines) + "\n"


def summary_table(summary: Sequence[Mapping[str, Any]], costs: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Summary rows with ``tokens`` (prompt + completion per answer), ``cost_usd``, ``total_usd`` and
    ``index_usd`` (the part of ``total_usd`` spent on index-time calls)."""
    table = []
    for row in summary:
        cost = costs.get(row["strategy"], {})
        tokens = (row.get("prompt_tokens") or 0) + (row.get("completion_tokens") or 0) if row.get("prompt_tokens") is not None else None
        table.append({**row, "tokens": tokens, "cost_usd": cost.get("usd_per_answer"), "total_usd": cost.get("total_usd"),
                      "index_usd": cost.get("index_usd")})
    return table


def _cheaper(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    for key in ("cost_usd", "tokens"):
        known = [r for r in rows if isinstance(r.get(key), (int, float))]
        if len(known) == len(rows) and len(rows) > 1:
            low = min(r[key] for r in rows)
            rows = [r for r in rows if abs(r[key] - low) <= 1e-12]
    return rows


def _better_scoring(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    known = [r for r in rows if isinstance(r.get("score"), (int, float))]
    if len(known) == len(rows) and len(rows) > 1:
        high = max(r["score"] for r in rows)
        rows = [r for r in rows if abs(r["score"] - high) <= 1e-9]
    return rows


# -- the page ---------------------------------------------------------------------------------------
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
    """Write ``folder/report.html`` (see the module docstring) and return its path.

    Args:
        folder: The report folder (plots already written there are embedded).
        benchmark: Benchmark name, for the title.
        manifest: The run's ``manifest.json``.
        summary: :func:`experiments.report.build_report`'s summary rows.
        by_length: Its accuracy-by-length rows.
        per_strategy: Strategy -> ``{"official", "rows", "per_sample": [(row, score)]}``.
        samples: Sample id -> sample (question and gold answers).
        prices: The user's price table (:func:`experiments.prices.load_prices`).
        winners: :func:`pick_winners` with per-question values (the report's); none named without.
        pairwise: The score's pairwise table (``experiments.comparison.pairwise``), shown as a matrix.
        missing: Strategy -> questions it has not answered: an incomplete run says so at the top
            and names no winner.
        costs: :func:`strategy_costs` of these rows and prices, when the caller has them already.
    """
    folder = Path(folder)
    costs = costs if costs is not None else strategy_costs(per_strategy, manifest, prices)
    table = summary_table(summary, costs)
    parts = [
        _head(benchmark),
        _header(benchmark, manifest, per_strategy, samples),
        _incomplete(missing or {}, len(samples)),
        _winners([] if missing else list(winners) if winners is not None else pick_winners(table)),
        _summary(table),
        _pairwise(pairwise or [], list(per_strategy)),
        _costs(costs, prices),
        _by_length(by_length),
        _plots(folder),
        _drilldown(per_strategy, samples, costs, manifest),
        _SCRIPT,
        "</body></html>\n",
    ]
    path = folder / HTML_FILE
    path.write_text(redact("\n".join(parts)), encoding="utf-8")
    return path


def _head(benchmark: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>longctx report: {e(benchmark)}</title><style>{_CSS}</style></head><body>"
    )


def _header(benchmark: str, manifest: Mapping[str, Any], per_strategy: Mapping[str, Any], samples: Mapping[str, Any]) -> str:
    invocations = manifest.get("invocations") or [{}]
    facts = {
        "model": manifest.get("model"),
        "strategies": ", ".join(per_strategy),
        "questions": len(samples),
        "run": f"{invocations[0].get('started', '?')} to {invocations[-1].get('finished', '?')}",
        "library": manifest.get("library_version"),
        "git": (invocations[-1].get("git_revision") or "")[:12] or None,
    }
    items = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts.items() if v not in (None, ""))
    return f'<header><h1>longctx report: {e(benchmark)}</h1><dl class="facts">{items}</dl></header>'


def _swatch(name: str) -> str:
    return f'<span class="swatch" style="background:{e(strategy_color(name))}"></span>{e(name)}'


def _num(value: Any, digits: int = 2) -> str:
    """A number for a table cell (unescaped: callers escape)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)  # callers escape
    if not isinstance(value, float):
        return f"{value:,}"
    text = f"{value:,.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text  # a tiny negative rounds to zero, not to "-0"


def _usd(value: float | None) -> str:
    if value is None:
        return '<span class="na" title="no price for this model: give one with --prices">n/a</span>'
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


def _winners(winners: Sequence[Mapping[str, Any]]) -> str:
    if not winners:
        return ""
    items = []
    for w in winners:
        if w["strategies"]:
            value = _usd(w["value"]) if w["metric"] == "cost_usd" else e(_num(w["value"]))
            names = ", ".join(_swatch(n) for n in w["strategies"])
            items.append(f'<li data-metric="{e(w["metric"])}" data-significant="1"><b>{e(w["label"])}</b>: {names} ({value}) '
                         f'<span class="note">{e(w["note"])}</span></li>')  # fmt: skip
        else:
            items.append(f'<li data-metric="{e(w["metric"])}" data-significant="0"><span class="nowin">{e(w["note"])}</span></li>')
    return (
        '<section id="winners"><h2>Winner per metric</h2><p class="note">A winner is named only when it beats every other '
        "strategy on the questions they share (paired test, Holm-adjusted p &lt; 0.05); see the matrix below.</p>"
        f'<ul class="winners">{"".join(items)}</ul></section>'
    )


def _incomplete(missing: Mapping[str, int], questions: int) -> str:
    if not missing:
        return ""
    return f'<section id="incomplete" class="incomplete"><p><b>{e(incomplete_line(missing, questions))}</b></p></section>'


def _pairwise(pairs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> str:
    """The score's paired comparisons as a matrix: row minus column, 95% interval, adjusted p."""
    if len(names) < 2 or not pairs:
        return ""
    cell: dict[tuple[str, str], Mapping[str, Any]] = {}
    for pr in pairs:
        cell[(pr["strategy_a"], pr["strategy_b"])] = pr
        flipped = {**pr, "mean_diff": None if pr["mean_diff"] is None else -pr["mean_diff"],
                   "ci_low": None if pr["ci_high"] is None else -pr["ci_high"], "ci_high": None if pr["ci_low"] is None else -pr["ci_low"]}  # fmt: skip
        cell[(pr["strategy_b"], pr["strategy_a"])] = flipped
    head = "".join(f"<th>{_swatch(n)}</th>" for n in names)
    body = []
    for a in names:
        cells = []
        for b in names:
            r = cell.get((a, b))
            if a == b or r is None or r["mean_diff"] is None:
                cells.append('<td class="na">·</td>')
                continue
            significant = r["p_adjusted"] is not None and r["p_adjusted"] < 0.05
            p_text = stats.format_p(r["p_adjusted"])
            ci = f'[{e(_num(r["ci_low"], 1))}, {e(_num(r["ci_high"], 1))}]' if r["ci_low"] is not None and r["ci_high"] is not None else _NO_PAIRED_CI
            cells.append(f'<td class="num{" sig" if significant else ""}" data-pair="{e(a)}|{e(b)}">{e(_num(r["mean_diff"], 1))}'
                         f'<br><span class="ci">{ci}</span><br><span class="p">p {e(p_text)} · n {e(r["n"])}</span></td>')  # fmt: skip
        body.append(f"<tr><th>{_swatch(a)}</th>{''.join(cells)}</tr>")
    return (
        '<section id="pairwise"><h2>Paired comparison of scores</h2><p class="note">Each cell: row minus column on the questions both '
        "answered, its 95% paired-bootstrap interval, and the p-value of McNemar's exact test (0/1 scores) or a paired sign-flip "
        "permutation test, Holm-adjusted across the pairs; bold cells differ beyond chance. Also in <code>pairwise.csv</code>.</p>"
        f'<div class="wide"><table class="pairwise"><thead><tr><th></th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div></section>'
    )


#: The summary's first columns on the page: the score beside its interval and n, in view without scrolling.
LEAD_COLUMNS = ("strategy", "score", "score_ci", "n_scored")


#: A paired cell whose differences are all equal: resampling cannot vary, and [100, 100] would read as certainty.
_NO_PAIRED_CI = '<span class="na" title="every shared question differs by the same amount: resampling cannot show the uncertainty">no interval</span>'


def _summary(table: list[dict[str, Any]]) -> str:
    if not table:
        return '<section id="summary"><h2>Summary</h2><p>No answers in this run.</p></section>'
    seen = list(dict.fromkeys(k for row in table for k in row))
    present = {*seen, *(("score_ci",) if "score_ci_low" in seen else ())}
    columns = [c for c in LEAD_COLUMNS if c in present] + [c for c in seen if c not in (*LEAD_COLUMNS, "score_ci_low", "score_ci_high")]
    head = "".join(f"<th>{'95% interval' if c == 'score_ci' else e(c)}</th>" for c in columns)
    body = []
    for row in table:
        cells = []
        for c in columns:
            value = row.get(c)
            if c == "strategy":
                cells.append(f"<td>{_swatch(row['strategy'])}</td>")
            elif c == "score_ci":
                cells.append(f'<td class="num ci">{_score_interval(row)}</td>')
            elif c in ("cost_usd", "total_usd"):
                cells.append(f'<td class="num">{_usd(value)}</td>')
            else:
                cells.append(f'<td class="num">{e(_num(value))}</td>')
        body.append(f'<tr data-strategy="{e(row["strategy"])}">{"".join(cells)}</tr>')
    return (
        '<section id="summary"><h2>Summary</h2><p class="note">score: the benchmark\'s official headline, with its 95% bootstrap '
        "interval over the n_scored questions (exact binomial where every answer scored the same); llm_calls, tokens and "
        "seconds: means per answered question; cost_usd: estimated USD per answer, total_usd: the whole run (see below).</p>"
        f'<div class="wide"><table class="summary"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div></section>'
    )


def _score_interval(row: Mapping[str, Any]) -> str:
    """``[low, high]`` of the score, or why there is none (never a zero-width interval shown as certainty)."""
    low, high = row.get("score_ci_low"), row.get("score_ci_high")
    if low is not None and high is not None:
        return f"[{e(_num(low, 1))}, {e(_num(high, 1))}]"
    if row.get("score") is None:
        return ""
    return '<span class="na" title="every question scored the same, so resampling cannot show how uncertain the score is">n/a</span>'


def _costs(costs: Mapping[str, Mapping[str, Any]], prices: Mapping[str, Any] | None) -> str:
    used: dict[str, Price | None] = {}
    for data in costs.values():
        used.update(data["prices"])
    rows = []
    for model, price in used.items():
        if price is None:
            how, prompt, cached, completion = "unknown: add it to a --prices file", "", "", ""
        else:
            how = {"user": "your --prices file", "local": "local model: free",
                   "default": f"built-in list price as of {DEFAULT_PRICES_DATE} (estimate)"}[price.source]  # fmt: skip
            if price.source != "local" and price.key != model:
                how += f", entry {price.key!r}"
            prompt, completion = f"${price.prompt:g}", f"${price.completion:g}"
            cached = f"${price.cached:g}" if price.cached is not None else f"${price.prompt:g} (no discount known)"
        cells = "".join(f'<td class="num">{e(v)}</td>' for v in (prompt, cached, completion))
        rows.append(f"<tr><td>{e(model)}</td>{cells}<td>{e(how)}</td></tr>")
    return (
        '<section id="costs"><h2>Estimated cost</h2><p class="note">An <b>estimate</b>: tokens as the model reported them '
        f"(or counted), times USD per 1M tokens; built-in prices are public list prices as of {e(DEFAULT_PRICES_DATE)}. Prompt tokens "
        "the server reported as read from its prompt cache are charged at the cached-input rate; batch discounts and cache writes "
        "are left out. Calls replayed from the LLM cache cost nothing. Set your own with "
        '<code>longctx report DIR --prices prices.json</code>, e.g. <code>{"gpt-4o-mini": {"prompt": 0.15, "cached": 0.075, "completion": 0.6}}</code>.</p>'
        '<table class="prices"><thead><tr><th>model</th><th>USD / 1M prompt</th><th>USD / 1M cached prompt</th><th>USD / 1M completion</th>'
        f'<th>price from</th></tr></thead><tbody>{"".join(rows)}</tbody></table>{_cache_savings(costs)}</section>'
    )


def _cache_savings(costs: Mapping[str, Mapping[str, Any]]) -> str:
    """Per strategy: cached prompt tokens and USD per answer with the server's prompt cache and without one,
    and what its prompts start with for every question (its declared ``prompt_sharing``: where a cache can help)."""
    rows = []
    for name, data in costs.items():
        with_cache, without = data.get("usd_per_answer"), data.get("usd_per_answer_uncached")
        cells = [f"{data.get('cached_prompt_tokens', 0):,}", _usd_exact(with_cache), _usd_exact(without)]
        sharing = STRATEGIES.get(name).prompt_sharing if name in STRATEGIES else None
        shared = sharing.what if sharing is not None else "what differs per question"
        rows.append(f"<tr><td>{e(name)}</td>{''.join(f'<td class=num>{e(c)}</td>' for c in cells)}<td>{e(shared)}</td></tr>")
    return (
        '<table class="prices"><thead><tr><th>strategy</th><th>cached prompt tokens</th><th>USD / answer with the prompt cache</th>'
        f'<th>USD / answer without</th><th>its prompts start with</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _usd_exact(value: float | None) -> str:
    """USD to the millionth (a cached prompt's saving per answer is often below a cent); blank when unknown."""
    return "" if value is None else f"${value:,.6f}"


def _by_length(by_length: Sequence[Mapping[str, Any]]) -> str:
    if not by_length:
        return ""
    columns = list(dict.fromkeys(k for row in by_length for k in row))
    head = "".join(f"<th>{_swatch(c) if c != 'length' else e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f'<td class="num">{e(_num(row.get(c)))}</td>' for c in columns) + "</tr>" for row in by_length)
    return (
        '<section id="by-length"><h2>Score by corpus length</h2><p class="note">Mean per-question score in each corpus-length bucket (tokens).</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>"
    )


def _plots(folder: Path) -> str:
    images = []
    for name, caption in (("accuracy_vs_tokens.png", "Accuracy vs tokens spent per answer"),
                          ("accuracy_vs_length.png", "Accuracy vs corpus length")):  # fmt: skip
        path = folder / name
        if path.is_file():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            images.append(f'<figure><img alt="{e(caption)}" src="data:image/png;base64,{data}"><figcaption>{e(caption)}</figcaption></figure>')
    return f'<section id="plots"><h2>Plots</h2>{"".join(images)}</section>' if images else ""


# -- drill-down -------------------------------------------------------------------------------------
def _drilldown(per_strategy: Mapping[str, Mapping[str, Any]], samples: Mapping[str, Any], costs: Mapping[str, Any],
               manifest: Mapping[str, Any]) -> str:  # fmt: skip
    answers: dict[str, dict[str, tuple[dict[str, Any], Any]]] = {}
    for name, data in per_strategy.items():
        for row, value in data["per_sample"]:
            answers.setdefault(row["sample_id"], {})[name] = (row, value)
    order = list(samples) + [sid for sid in answers if sid not in samples]  # every question, answered or not
    blocks = [_question(sid, samples.get(sid), answers.get(sid, {}), costs, manifest, list(per_strategy)) for sid in order]
    return (
        '<section id="questions"><h2>Questions</h2><p class="note">Click a question to see each strategy\'s answer, evidence and steps.</p>'
        '<div class="tools"><input id="filter" type="search" placeholder="filter questions" aria-label="filter questions">'
        '<button type="button" id="expand">expand all</button><button type="button" id="collapse">collapse all</button></div>'
        f'{"".join(blocks)}</section>'
    )


def _question(sample_id: str, sample: Any, answers: Mapping[str, tuple[dict[str, Any], Any]], costs: Mapping[str, Any],
              manifest: Mapping[str, Any], strategies: Sequence[str] = ()) -> str:  # fmt: skip
    question = getattr(sample, "question", None)
    first = next(iter(answers.values()), ({}, None))[0]
    text = getattr(question, "text", None) or first.get("metadata", {}).get("question") or sample_id
    gold = [str(a) for a in (getattr(sample, "answers", None) or ())]
    missing = [n for n in strategies if n not in answers]
    badges = "".join(
        f'<span class="badge" style="border-color:{e(strategy_color(n))}" title="{e(n)}">{e(n)}: {_score(v, row)}</span>'
        for n, (row, v) in answers.items()
    ) + "".join(f'<span class="badge missing" title="{e(n)}">{e(n)}: <span class="na">not answered</span></span>' for n in missing)
    choices = getattr(question, "choices", None) or {}
    choice_html = "".join(f"<li><b>{e(k)}</b> {e(v)}</li>" for k, v in choices.items())
    info = [f'<p class="q"><b>Question</b> <span class="qtext">{cut(text)}</span></p>']
    if choice_html:
        info.append(f'<ul class="choices">{choice_html}</ul>')
    info.append(
        f'<p class="gold"><b>Gold answer</b> {" | ".join(f"<span>{cut(g, 1000)}</span>" for g in gold)}</p>' if gold
        else '<p class="gold"><b>Gold answer</b> <span class="na">none: unscored</span></p>'
    )
    info.append(f'<p class="meta">id {e(sample_id)}{_sample_meta(sample)}</p>')
    strategies = "".join(_answer(n, row, v, costs[n], manifest) for n, (row, v) in answers.items()) + "".join(
        f'<details class="answer missing" data-strategy="{e(n)}"><summary>{_swatch(n)} <span class="na">not answered yet</span></summary>'
        '<p class="na">This strategy has no row for this question: the run was interrupted or is still going.</p></details>'
        for n in missing
    )
    return (
        f'<details class="question" id="{e(anchor(sample_id))}" data-sample="{e(sample_id)}"><summary><span class="qtext">{cut(text, 300)}</span>'
        f'<span class="badges">{badges}</span></summary>{"".join(info)}<div class="answers">{strategies}</div></details>'
    )


def _sample_meta(sample: Any) -> str:
    if sample is None:
        return ""
    bits = [f"{k} {v}" for k, v in (("dataset", getattr(sample, "dataset", None)),) if v]
    corpus = getattr(sample, "corpus", None)
    if corpus is not None:
        bits.append(f"corpus {getattr(corpus, 'num_tokens', '?'):,} tokens in {len(getattr(corpus, 'documents', ()) or ())} documents")
    return "".join(f" · {e(b)}" for b in bits)


def _score(value: Any, row: Mapping[str, Any]) -> str:
    if row.get("status") != "ok":
        return '<span class="fail">failed</span>'
    if not isinstance(value, (int, float)):
        return '<span class="na">unscored</span>'
    return f'<span class="score">{e(_num(float(value), 1))}</span>'


def _answer(name: str, row: Mapping[str, Any], value: Any, cost: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    model = row_model(row, manifest) or "unknown"
    usd = row_cost(row, cost["prices"].get(model), cost.get("table"))
    head = (f'<summary>{_swatch(name)} <span class="sc">score {_score(value, row)}</span>{_rule(row, value)} '
            f'<span class="cost">{_usd(usd) if row.get("status") == "ok" else ""}</span></summary>')
    if row.get("status") != "ok":
        body = (f'<p class="fail"><b>Failed</b>: {cut(row.get("error"))}</p>'
                f'<details class="tb"><summary>traceback</summary><pre>{cut(row.get("traceback"))}</pre></details>')  # fmt: skip
        return f'<details class="answer" data-strategy="{e(name)}">{head}{body}</details>'
    usage = row.get("usage") or {}
    facts = (f'{e(_num(usage.get("llm_calls")))} calls · {e(_num(usage.get("prompt_tokens")))} prompt + '
             f'{e(_num(usage.get("completion_tokens")))} completion tokens{" (estimated)" if usage.get("estimated") else ""} · '
             f'{e(_num(row.get("seconds")))} s · model {e(model)}')  # fmt: skip
    prediction = row.get("prediction")
    parts = [f'<div class="reply"><b>Answer</b><pre class="ans">{cut(row.get("answer"))}</pre></div>']
    if prediction is not None and prediction != row.get("answer"):
        parts.append(f'<div class="reply"><b>Scored reply</b><pre>{cut(prediction)}</pre></div>')
    parts.append(f'<p class="usage">{facts}</p>')
    parts.append(_context_cut(row))
    parts.append(_messages(row.get("messages") or []))
    evidence = row.get("evidence") or []
    parts.append(_evidence(evidence))
    parts.append(_steps(name, row.get("steps") or [], evidence))
    return f'<details class="answer" data-strategy="{e(name)}">{head}{"".join(parts)}</details>'


def _context_cut(row: Mapping[str, Any]) -> str:
    """How much of the corpus a full-context prompt kept: the prompt tokens sent against the corpus."""
    built = next((st for st in row.get("steps") or [] if "truncated" in st), None)
    if built is None:
        return ""
    sent = (row.get("usage") or {}).get("prompt_tokens")
    corpus = row.get("corpus_tokens")
    if not built.get("truncated"):
        return f'<p class="cut">Context: the whole corpus ({e(_num(corpus))} tokens) fitted in the prompt.</p>'
    cut = f" (about {_num(max(0, corpus - sent))} cut from the middle)" if isinstance(corpus, int) and isinstance(sent, int) else ""
    return (f'<p class="cut"><b>Context cut</b>: {e(_num(sent))} prompt tokens sent of a {e(_num(corpus))}-token corpus{e(cut)}; '
            f'input budget {e(_num(built.get("max_input_tokens")))} tokens of a {e(_num(built.get("context_window")))}-token window.</p>')  # fmt: skip


def _messages(messages: Sequence[Mapping[str, Any]]) -> str:
    """The last model call's messages, collapsed: the exact prompt behind the answer."""
    if not messages:
        return ""
    body = "".join(f'<div class="msg"><div class="role">{e(m.get("role"))}</div><pre>{cut(m.get("content"), 30_000)}</pre></div>' for m in messages)
    size = sum(len(str(m.get("content") or "")) for m in messages)
    return f'<details class="messages"><summary>Messages sent (last model call, {len(messages)} message(s), {size:,} characters)</summary>{body}</details>'


def _rule(row: Mapping[str, Any], value: Any) -> str:
    """Why the answer counted (or not), where the scorer says: exact, typed, phrase, judge."""
    if "match_rule" not in row or row.get("status") != "ok" or not isinstance(value, (int, float)):
        return ""
    rule = row["match_rule"]
    label = f"matched: {rule}" if rule else "no rule matched"
    return f' <span class="rule" data-rule="{e(rule or "none")}" title="the scoring rule that decided this answer">{e(label)}</span>'


def _evidence(evidence: Sequence[Mapping[str, Any]]) -> str:
    if not evidence:
        return (
            '<div class="evidence"><b>Evidence</b> '
            '<span class="na">none recorded (no chunks cited: the strategy read the corpus or its context whole)</span></div>'
        )
    items = "".join(
        f'<li><span class="title">{e(ev.get("title") or ev.get("doc_id"))}</span> <span class="meta">doc {e(ev.get("doc_id"))}'
        f'{" · chunk " + e(ev.get("chunk_id")) if ev.get("chunk_id") is not None else ""}'
        f'{" · score " + e(_num(ev.get("score"), 3)) if isinstance(ev.get("score"), (int, float)) else ""}</span>'
        f'<blockquote class="snippet">{cut(ev.get("snippet"), 1000)}</blockquote></li>'
        for ev in evidence
    )
    return f'<div class="evidence"><b>Evidence</b> ({len(evidence)})<ol>{items}</ol></div>'


def _presentation(strategy: Any) -> StrategyPresentation:
    """How ``strategy`` is shown: its registry entry's, or the default for a name this process has not registered."""
    return STRATEGIES.get(strategy).presentation if isinstance(strategy, str) and strategy in STRATEGIES else StrategyPresentation()


def _steps(strategy: str, steps: Sequence[Mapping[str, Any]], evidence: Sequence[Mapping[str, Any]]) -> str:
    """The steps in order, each as its strategy shows it (a nested run's step as that run's strategy does)."""
    if not steps:
        return '<div class="steps"><b>Steps</b> <span class="na">none recorded</span></div>'
    by_chunk = {ev.get("chunk_id"): ev for ev in evidence if ev.get("chunk_id") is not None}
    blocks, i = [], 0
    while i < len(steps):
        node, looks = str(steps[i].get("node", "?")), _presentation(steps[i].get(LEG_KEY) or strategy)
        run_view = looks.run_views.get(node)
        if run_view is not None:  # consecutive steps of this node are one block
            j = i
            while j < len(steps) and steps[j].get("node") == node and steps[j].get(LEG_KEY) == steps[i].get(LEG_KEY):
                j += 1
            blocks.append(_step_box(node, escape(run_view(steps[i:j]))))
            i = j
            continue
        view = looks.step_views.get(node)
        if view is None:
            blocks.append(_step_box(node, _facts(steps[i])))
        else:
            seen = view(steps[i], by_chunk)
            blocks.append(_step_box(node, escape(seen.html), _facts(steps[i], seen.keys)))
        i += 1
    return f'<details class="steps" open><summary><b>Steps</b> ({len(steps)})</summary>{"".join(blocks)}</details>'


def _step_box(node: str, body: str, extra: str = "") -> str:
    return f'<div class="step" data-node="{e(node)}"><div class="node">{e(node)}</div>{body}{extra}</div>'


def _facts(step: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    """The step's remaining facts as a definition list (non-scalars as JSON)."""
    skip = {"node", *skip}
    items = []
    for key, value in step.items():
        if key in skip:
            continue
        text = value if isinstance(value, str) else dumps(value)
        tag = "pre" if isinstance(value, str) and "\n" in value else "span"
        items.append(f"<dt>{e(key)}</dt><dd><{tag}>{cut(text)}</{tag}></dd>")
    return f'<dl class="kv">{"".join(items)}</dl>' if items else ""


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:16px 24px;color:#1d1d1f}
h1{font-size:22px;margin:4px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
dl.facts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:4px 0;color:#555}dl.facts dt{font-weight:600}dl.facts dd{margin:0 0 0 4px}
dl.facts dt:after{content:":"}dl.facts div{display:flex}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.wide{overflow-x:auto}table.summary td:first-child,table.summary td.ci,table.pairwise .ci{white-space:nowrap}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;vertical-align:baseline}
.note{color:#666;font-size:13px}.na{color:#999}.fail{color:#b00020}.score{font-weight:600}
ul.winners li{margin:3px 0}details.messages .role{font-weight:600;font-size:12px;color:#555}p.cut{font-size:13px}
.incomplete{border:2px solid #c62828;background:#fdecea;padding:4px 12px;border-radius:4px}.nowin{color:#555}
table.pairwise td.sig{font-weight:700;background:#eef6ee}table.pairwise .ci,table.pairwise .p{font-size:11px;color:#555}
figure{display:inline-block;margin:6px 12px 6px 0}figure img{max-width:100%;border:1px solid #eee}figcaption{color:#666;font-size:12px}
details.question{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:4px 10px;background:#fff}
details.question>summary{cursor:pointer;display:flex;flex-wrap:wrap;gap:6px;align-items:baseline}
details.question>summary .qtext{font-weight:600;margin-right:8px}
.badge{border:1px solid;border-radius:10px;padding:0 7px;font-size:12px;white-space:nowrap}
details.answer{border-left:4px solid #ccc;margin:8px 0 8px 6px;padding:2px 10px;background:#fafafa}
details.answer>summary{cursor:pointer;font-weight:600}details.answer .sc,details.answer .cost,details.answer .rule{font-weight:400;margin-left:10px;color:#444}
pre{white-space:pre-wrap;word-break:break-word;background:#f4f4f6;padding:6px 8px;border-radius:4px;margin:4px 0;font-size:12.5px}
blockquote.snippet{margin:2px 0 6px 0;padding:2px 8px;border-left:3px solid #ddd;color:#333;white-space:pre-wrap;font-size:12.5px}
.evidence .title{font-weight:600}.meta{color:#777;font-size:12px}
.step{border:1px solid #e4e4e8;border-radius:4px;margin:6px 0;padding:4px 8px;background:#fff}
.step .node{font-family:ui-monospace,Menlo,monospace;font-size:12px;color:#fff;background:#555;display:inline-block;padding:0 6px;border-radius:3px}
.what{font-weight:600;margin:4px 0 2px}.route{background:#fff4d6;padding:3px 6px;border-radius:3px}
.follow{font-style:italic}.sub{color:#0b5}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:1px 10px;margin:4px 0;font-size:12px;color:#555}dl.kv dd{margin:0}dl.kv pre{margin:0}
table.memory pre{margin:0;max-height:12em;overflow:auto}
.tools{margin:6px 0}.tools input{padding:3px 6px;width:280px;margin-right:8px}.hidden{display:none}
"""

_SCRIPT = """<script>
(function () {
  "use strict";
  var questions = Array.prototype.slice.call(document.querySelectorAll("details.question"));
  function openQuestion(el) {
    el.open = true;
    Array.prototype.forEach.call(el.querySelectorAll("details.answer"), function (d) { d.open = true; });
  }
  function fromHash() {
    var id = decodeURIComponent((window.location.hash || "").slice(1));
    var el = id ? document.getElementById(id) : null;
    if (el && el.classList.contains("question")) { openQuestion(el); el.scrollIntoView(); }
  }
  document.getElementById("expand").addEventListener("click", function () { questions.forEach(openQuestion); });
  document.getElementById("collapse").addEventListener("click", function () {
    Array.prototype.forEach.call(document.querySelectorAll("details.question, details.answer"), function (d) { d.open = false; });
  });
  document.getElementById("filter").addEventListener("input", function (ev) {
    var needle = ev.target.value.toLowerCase();
    questions.forEach(function (q) { q.classList.toggle("hidden", needle !== "" && q.textContent.toLowerCase().indexOf(needle) < 0); });
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
  document.body.setAttribute("data-ready", "1");
})();
</script>"""
