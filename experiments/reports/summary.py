"""The report's summary rows, one per strategy, and the per-question values behind them.

A row holds the official headline score (with its 95% bootstrap interval, standard error and n),
failures, mean calls, tokens and seconds per answer, index and rerank spend, evidence recall where
the samples name their evidence, estimated USD per answer (with and without the prompt cache), and
whether it sits on the cost-accuracy and token-accuracy frontiers. Written by
:func:`longctx.experiments.reports.report.build_report`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longctx.experiments.benchmarks import BENCHMARKS
from longctx.experiments.planning.prices import row_cost
from longctx.experiments.reports import comparison, stats
from longctx.experiments.reports.html_report import row_model
from longctx.experiments.synth import retrieval_recall

#: The aggregate key that headlines each benchmark (Loong reports its judge's average score).
HEADLINE = {"loong": "avg_score"}
#: Benchmarks whose official script leaves failed calls out of the denominator (LongBench v2
#: ``pred.py`` and CorpusQA ``infer.py`` write no line for them): the aggregation holding the
#: headline computed that way, shown beside ours as ``score_official_denominator``.
OFFICIAL_DENOMINATOR = {
    "longbench_v2": "official_drops_failed",
    "corpusqa": "official_drops_failed",
    "memoryagentbench": "official_drops_failed",
}


def headline(benchmark: str, scores: dict[str, Any]) -> float | None:
    """The one number that summarizes a benchmark's official aggregation."""
    value = scores.get(HEADLINE.get(benchmark, "overall"))
    return float(value) if isinstance(value, (int, float)) else None


def headline_official_denominator(benchmark: str, scores: dict[str, Any]) -> float | None:
    """The headline with failed calls left out of the denominator, as the official script computes
    it, or ``None`` where the official denominator is ours (see :data:`OFFICIAL_DENOMINATOR`)."""
    key = OFFICIAL_DENOMINATOR.get(benchmark)
    return headline(benchmark, scores.get(key) or {}) if key else None


def per_question_values(
    per_strategy: dict[str, dict[str, Any]],
    by_id: dict[str, Any],
    manifest: dict[str, Any],
    costs: dict[str, dict[str, Any]],
) -> dict[str, dict[str, dict[str, float | None]]]:
    """metric -> strategy -> question id -> value: the paired data behind every interval and winner.

    Scores are the scorer's (failed rows count as its rule says, unscored questions are None);
    tokens, seconds, cost and evidence recall exist for answered rows only (``costs``:
    :func:`strategy_costs`'s)."""
    out: dict[str, dict[str, dict[str, float | None]]] = {
        m: {} for m in ("score", "tokens", "seconds", "cost_usd", "evidence_recall")
    }
    for name, data in per_strategy.items():
        out["score"][name] = {r["sample_id"]: v for r, v in data["per_sample"]}
        ok = [r for r in data["rows"] if r["status"] == "ok"]
        out["tokens"][name] = {
            r["sample_id"]: r["usage"]["prompt_tokens"] + r["usage"]["completion_tokens"]
            for r in ok
        }
        out["seconds"][name] = {r["sample_id"]: r["seconds"] for r in ok}
        price = costs[name]["prices"]
        out["cost_usd"][name] = {
            r["sample_id"]: row_cost(
                r, price.get(row_model(r, manifest) or "unknown"), costs[name].get("table")
            )
            for r in ok
        }
        out["evidence_recall"][name] = {
            r["sample_id"]: _recall(by_id[r["sample_id"]], r) for r in ok
        }
    return out


def add_intervals(
    benchmark: str,
    samples: list[Any],
    summary: list[dict[str, Any]],
    scores: dict[str, dict[str, float | None]],
) -> None:
    """Each summary row's score gets its 95% bootstrap interval, standard error and n (stratified as
    the benchmark's headline averages sub-sets)."""
    spec = BENCHMARKS.get(benchmark) if benchmark in BENCHMARKS else None
    strata, weights = (
        spec.strata(samples) if spec is not None and spec.strata is not None else (None, None)
    )
    for row in summary:
        values = scores.get(row["strategy"], {})
        ids = [q for q, v in values.items() if v is not None]
        ci = stats.interval(
            [values[q] for q in ids], [strata[q] for q in ids] if strata else None, weights
        )
        row.update(
            {
                "n_scored": ci.n,
                "score_ci_low": _round(ci.low),
                "score_ci_high": _round(ci.high),
                "score_se": _round(ci.se),
            }
        )


def add_frontiers(summary: list[dict[str, Any]], table: list[dict[str, Any]]) -> None:
    """``frontier_cost`` / ``frontier_tokens``: on the Pareto front of (score, estimated USD per
    answer) and of (score, tokens per answer), or dominated by some other strategy (``table``:
    the summary with costs, :func:`summary_table`)."""
    for key, column in (("cost_usd", "frontier_cost"), ("tokens", "frontier_tokens")):
        front = comparison.frontier(table, key)
        known = {
            r["strategy"] for r in table if r.get("score") is not None and r.get(key) is not None
        }
        for row in summary:
            row[column] = (
                ("frontier" if front[row["strategy"]] else "dominated")
                if row["strategy"] in known
                else None
            )


def add_uncached_costs(
    summary: list[dict[str, Any]], table: list[dict[str, Any]], costs: dict[str, dict[str, Any]]
) -> None:
    """Where the server reported cached prompt tokens: USD per answer with the prompt cache
    (``cost_usd``) and without it (``cost_usd_uncached``: every prompt token at the prompt rate),
    and the cost frontier without it (``frontier_cost_uncached``), so the table shows the frontier
    that changes. Also the tokens the model computed per answer (``computed_tokens``: prompt tokens
    it did not read from its cache, plus completion tokens) and the frontier by them
    (``frontier_computed_tokens``, beside ``frontier_tokens`` by every token): the cost a cache
    changes on a free local model (its prefill)."""
    if not any(row.get("cached_prompt_tokens") for row in summary):
        return
    uncached = [
        {**row, "cost_usd": costs.get(row["strategy"], {}).get("usd_per_answer_uncached")}
        for row in table
    ]
    computed = [
        {
            **row,
            "computed_tokens": None
            if row.get("tokens") is None
            else row["tokens"] - (row.get("cached_prompt_tokens") or 0),
        }
        for row in table
    ]
    fronts = {
        "frontier_cost_uncached": (uncached, "cost_usd"),
        "frontier_computed_tokens": (computed, "computed_tokens"),
    }
    computed_by = {r["strategy"]: r["computed_tokens"] for r in computed}
    for row in summary:
        cost = costs.get(row["strategy"], {})
        row["cost_usd"] = _round(cost.get("usd_per_answer"), 8)
        row["cost_usd_uncached"] = _round(cost.get("usd_per_answer_uncached"), 8)
        row["computed_tokens"] = _round(computed_by.get(row["strategy"]))
    for column, (rows, key) in fronts.items():
        front = comparison.frontier(rows, key)
        known = {
            r["strategy"] for r in rows if r.get("score") is not None and r.get(key) is not None
        }
        for row in summary:
            row[column] = (
                ("frontier" if front[row["strategy"]] else "dominated")
                if row["strategy"] in known
                else None
            )


def _round(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


def rounded_mean(values: Sequence[float]) -> float | None:
    """The mean to two decimals, ``None`` of no values."""
    return round(sum(values) / len(values), 2) if values else None


def summary_row(
    benchmark: str, name: str, data: dict[str, Any], by_id: dict[str, Any]
) -> dict[str, Any]:
    """Strategy ``name``'s summary row: its headline score, answers, failures, and the mean spend
    per answered question."""
    ok = [r for r in data["rows"] if r["status"] == "ok"]
    usage = [r["usage"] for r in ok]
    row = {
        "strategy": name,
        "score": headline(benchmark, data["official"]),
        **(
            {
                "score_official_denominator": headline_official_denominator(
                    benchmark, data["official"]
                )
            }
            if benchmark in OFFICIAL_DENOMINATOR
            else {}
        ),
        "answers": len(data["rows"]),
        "failed": len(data["rows"]) - len(ok),
        "missing": len(by_id)
        - len(data["rows"]),  # questions of the run this strategy has not answered yet
        "llm_calls": rounded_mean([u["llm_calls"] for u in usage]),
        "prompt_tokens": rounded_mean([u["prompt_tokens"] for u in usage]),
        "cached_prompt_tokens": rounded_mean([u.get("cached_prompt_tokens", 0) for u in usage]),
        "completion_tokens": rounded_mean([u["completion_tokens"] for u in usage]),
        # the part of the calls and tokens above spent building what later questions reuse
        # (paid by the first answer)
        "index_llm_calls": rounded_mean([u.get("index_llm_calls", 0) for u in usage]),
        "index_prompt_tokens": rounded_mean([u.get("index_prompt_tokens", 0) for u in usage]),
        "index_completion_tokens": rounded_mean(
            [u.get("index_completion_tokens", 0) for u in usage]
        ),
        "seconds": rounded_mean([r["seconds"] for r in ok]),
        "cached_calls": sum(u.get("cached_calls", 0) for u in usage),
        # answers whose steps say they ran degraded (a fallback plan, malformed
        # extractions, a lost task)
        "degraded": sum(
            1
            for r in ok
            if any(isinstance(st, dict) and st.get("degraded") for st in r.get("steps") or [])
        ),
    }
    if any(
        u.get("rerank_calls") or u.get("rerank_failed_calls") for u in usage
    ):  # a second retrieval stage: its calls beside the model's
        row.update(
            {
                k: rounded_mean([u.get(k, 0) for u in usage])
                for k in ("rerank_calls", "rerank_failed_calls", "rerank_tokens")
            }
        )
    recalls = [_recall(by_id[r["sample_id"]], r) for r in ok]
    if any(v is not None for v in recalls):  # generated corpora know their evidence documents
        row["evidence_recall"] = rounded_mean([v for v in recalls if v is not None])
    return row


def add_rerank_costs(summary: list[dict[str, Any]], costs: dict[str, dict[str, Any]]) -> None:
    """``rerank_usd`` (USD per answer of its rerank calls, part of ``cost_usd``) beside the
    rerank columns of a strategy whose reranker has a price in the table (a local one is
    free: no column)."""
    for row in summary:
        cost = costs.get(row["strategy"], {})
        if "rerank_calls" in row and cost.get("rerank_priced"):
            row["rerank_usd"] = _round(cost.get("rerank_usd"), 8)


def _recall(sample: Any, row: dict[str, Any]) -> float | None:
    """Share of the sample's evidence documents among the documents the answer cited."""
    evidence = sample.metadata.get("evidence_doc_ids")
    if not evidence or not row.get("evidence_doc_ids"):
        return None
    return retrieval_recall(list(evidence), row["evidence_doc_ids"])
