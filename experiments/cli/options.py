"""What the ``longctx`` command line's options become: strategy options, retrieval
overrides, a budget.

``--option STRATEGY.KEY=VALUE`` values are JSON (a bare string needs no quotes); the budget's
price comes from the report's price table, since the library's budget takes a price rather
than reading it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Mapping
from typing import Any

from longctx import Budget, make_chat_model
from longctx.experiments.planning.prices import Price, load_prices, price_for, rerank_price
from longctx.graphs.calls.llm import model_id


def budget_from_args(
    args: argparse.Namespace, llm: Any, configs: Iterable[Mapping[str, Any]] = ()
) -> tuple[Budget | None, Any]:
    """The :class:`~agents.Budget` of ``--max-calls/--max-tokens/--max-cost`` (``None``
    without them) and the model to run (made here when ``--max-cost`` needs its price, else
    ``llm`` as given).

    The price comes from the price table (``--prices FILE`` over the built-in one,
    :func:`longctx.experiments.planning.prices.price_for`; local models are free): the library's
    budget takes a price rather than reading a table above its layer. So does the reranker's, when
    the strategy options ``configs`` name one
    (:func:`longctx.experiments.planning.prices.rerank_price`). A ``--prices`` file is read (and a
    bad one refused) even without ``--max-cost``.

    Raises:
        ValueError: ``--max-cost`` for a model the table does not price, or for one it prices at
            nothing (a local server): such a limit would bind nothing.
    """
    table = load_prices(args.prices) if getattr(args, "prices", None) else None
    if args.max_calls is None and args.max_tokens is None and args.max_cost is None:
        return None, llm
    price = reranking = None
    if args.max_cost is not None:
        llm = make_chat_model(llm)
        name = model_id(llm).split(" @ ")[0]
        price = price_for(model_id(llm), table)
        if price is None:
            raise ValueError(
                f"--max-cost needs the price of {name!r}, which the price table "
                "(experiments/planning/prices.py) "
                "does not list: give it with --prices FILE, or use --max-calls / "
                "--max-tokens instead"
            )
        reranking = rerank_price(configs, table)
        if _free(price) and reranking is None:
            why = (
                "is a local model (free)"
                if price.source == "local"
                else f"is priced at 0 by {args.prices}"
            )
            raise ValueError(
                f"--max-cost {args.max_cost:g} would bind nothing: {name!r} {why}; give its "
                "price with "
                "--prices FILE, or use --max-calls / --max-tokens instead"
            )
    return Budget(
        max_llm_calls=args.max_calls,
        max_prompt_tokens=args.max_tokens,
        max_cost_usd=args.max_cost,
        price=price,
        rerank_price=reranking,
    ), llm


def _free(price: Price) -> bool:
    """Whether every rate of ``price`` is 0 (a cost limit at it binds nothing)."""
    return price.prompt == 0 and price.completion == 0 and not price.cached


def retrieval_overrides(args: argparse.Namespace) -> dict:
    """The retrieval settings given on the command line (retriever, chunking, its model and
    backend), unset ones left out."""
    overrides = {
        "retriever": args.retriever,
        "chunk_unit": args.chunk_unit,
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
    }
    options = {"model": args.retriever_model, "backend": args.embedding_backend}
    if any(options.values()):
        overrides["retriever_options"] = {k: v for k, v in options.items() if v}
    return {k: v for k, v in overrides.items() if v is not None}


def parse_value(item: str) -> tuple[str, Any]:
    """``"key=JSON"`` -> ``(key, value)``; a bare string value needs no quotes."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise ValueError(f"Expected KEY=VALUE, got {item!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def parse_options(items: list[str]) -> dict[str, dict]:
    """``["rag.top_k=5", 'rag.retriever="dense"']`` ->
    ``{"rag": {"top_k": 5, "retriever": "dense"}}``; a variant's name before the first dot
    (``rag@hybrid.retriever=hybrid``) keys its own options."""
    options: dict[str, dict] = {}
    for item in items:
        strategy, dot, field = item.partition("=")[0].partition(".")
        if "=" not in item or not dot:
            raise ValueError(
                "--option must look like STRATEGY.KEY=VALUE or STRATEGY@LABEL.KEY=VALUE, got "
                f"{item!r}"
            )
        options.setdefault(strategy, {})[field] = parse_value(item)[1]
    return options
