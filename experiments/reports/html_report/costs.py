"""Estimated money cost per strategy (:mod:`longctx.experiments.planning.prices`) and the summary
rows the page and the winners read (tokens and USD per answer beside the report's own columns)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.experiments.planning.prices import (
    Price,
    PriceRow,
    price_for,
    rerank_model,
    row_cost,
    row_index_cost,
    row_rerank_cost,
)


def row_model(row: Mapping[str, Any], manifest: Mapping[str, Any]) -> str | None:
    """The model that answered a row: its own config, else the run's manifest."""
    return (row.get("config") or {}).get("llm") or manifest.get("model")


def strategy_costs(
    per_strategy: Mapping[str, Mapping[str, Any]],
    manifest: Mapping[str, Any],
    prices: Mapping[str, PriceRow] | None,
) -> dict[str, dict[str, Any]]:
    """Per strategy: total and per-answer estimated USD over its answered rows (cached prompt tokens
    at the cached rate; ``question_usd``: each row's less its index-time part), the same without a
    prompt cache (``usd_per_answer_uncached``: every prompt token at the prompt rate), the part of
    the total spent at index time (``index_usd``), the part per answer spent on rerank calls
    (``rerank_usd``, with ``rerank_priced``: some reranker has a price in the table, not only local
    ones), and the prices used (``None`` costs when some model has no price)."""
    return {
        name: _strategy_cost(data["rows"], manifest, prices) for name, data in per_strategy.items()
    }


def _strategy_cost(
    rows: Sequence[Mapping[str, Any]],
    manifest: Mapping[str, Any],
    prices: Mapping[str, PriceRow] | None,
) -> dict[str, Any]:
    """One strategy's entry of :func:`strategy_costs`."""
    ok = [r for r in rows if r.get("status") == "ok"]
    used: dict[str, Price | None] = {}
    costs, uncached, index_costs = [], [], []
    for row in ok:
        model = row_model(row, manifest) or "unknown"
        if model not in used:
            used[model] = price_for(model, prices)
        costs.append(row_cost(row, used[model], prices))
        uncached.append(row_cost(row, used[model], prices, cached=False))
        index_costs.append(row_index_cost(row, used[model]))
    reranks = [row_rerank_cost(row, prices) for row in ok]
    priced = [c for c in reranks if c is not None]
    rerank_prices = [price_for(m, prices) for m in {rerank_model(row) for row in ok} - {None}]
    known = bool(costs) and all(c is not None for c in costs)
    total = sum(costs) if known else None  # type: ignore[arg-type]
    total_uncached = sum(uncached) if known else None  # type: ignore[arg-type]
    index_total = sum(index_costs) if known else None  # type: ignore[arg-type]
    question_usd = (
        [c - i for c, i in zip(costs, index_costs)]  # type: ignore[operator]
        if known
        else None
    )
    return {
        "total_usd": total,
        "usd_per_answer": total / len(costs) if total is not None else None,
        "question_usd": question_usd,
        "usd_per_answer_uncached": total_uncached / len(costs)
        if total_uncached is not None
        else None,
        "cached_prompt_tokens": sum(
            (r.get("usage") or {}).get("cached_prompt_tokens", 0) for r in ok
        ),
        "index_usd": index_total,
        "prices": used,
        "table": prices,
        "rerank_usd": sum(priced) / len(priced)
        if reranks and len(priced) == len(reranks)
        else None,
        "rerank_priced": any(p is not None and p.source != "local" for p in rerank_prices),
    }


def summary_table(
    summary: Sequence[Mapping[str, Any]], costs: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Summary rows with ``tokens`` (prompt + completion per answer), ``cost_usd``, ``total_usd``
    and ``index_usd`` (the part of ``total_usd`` spent on index-time calls)."""
    table = []
    for row in summary:
        cost = costs.get(row["strategy"], {})
        tokens = (
            (row.get("prompt_tokens") or 0) + (row.get("completion_tokens") or 0)
            if row.get("prompt_tokens") is not None
            else None
        )
        table.append(
            {
                **row,
                "tokens": tokens,
                "cost_usd": cost.get("usd_per_answer"),
                "total_usd": cost.get("total_usd"),
                "index_usd": cost.get("index_usd"),
            }
        )
    return table
