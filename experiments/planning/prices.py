"""Estimated money cost of a run: USD per 1M prompt, cached prompt and completion tokens,
per model id.

The built-in table lists a few well-known API models at their public list prices on
:data:`DEFAULT_PRICES_DATE`, with the price of a prompt token the provider read from its prompt
cache (OpenAI, Gemini: cached input; Anthropic: cache read; cache writes and batch discounts are
ignored); it is an *estimate* (prices change). A user's table (``longctx report DIR --prices FILE``,
or the one ``longctx run --prices`` kept in DIR: :mod:`longctx.experiments.planning.run_prices`)
overrides and extends it; ``cached`` is optional (without it a cached token costs a prompt
token)::

    {"gpt-4o-mini": {"prompt": 0.15, "cached": 0.075, "completion": 0.60},
     "my-finetune @ http://gpu-box:8000/v1": {"prompt": 0.05, "completion": 0.05}}

Local models cost 0: the embedded GGUF model, any ``.gguf`` file, and any server on localhost or a
private address (unless the user's table prices them). A rerank server's tokens
(``usage.rerank_tokens``) are priced the same way, at its model's prompt price. Calls replayed from
the LLM cache are free already: usage counts only calls that reached the model.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from longctx.graphs.metering.pricing import TokenPrice
from longctx.retrieval.contract.errors import DataError

#: When the built-in list prices were read (the providers' pricing pages, standard tier).
DEFAULT_PRICES_DATE = "2025-06"
#: One table entry: USD per 1M ``(prompt, completion)`` tokens, or
#: ``(prompt, completion, cached prompt)``.
PriceRow = tuple[float, float] | tuple[float, float, float]
#: USD per 1M tokens (prompt, completion, cached prompt): public list prices on DEFAULT_PRICES_DATE,
#: standard tier (cached: OpenAI's and Gemini's cached input, Anthropic's cache read; Gemini 2.5 Pro
#: at prompts up to 200K tokens).
DEFAULT_PRICES: dict[str, PriceRow] = {
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-4.1-nano": (0.10, 0.40, 0.025),
    "o3-mini": (1.10, 4.40, 0.55),
    "claude-3-5-haiku": (0.80, 4.00, 0.08),
    "claude-3-5-sonnet": (3.00, 15.00, 0.30),
    "claude-3-7-sonnet": (3.00, 15.00, 0.30),
    "claude-sonnet-4": (3.00, 15.00, 0.30),
    "claude-opus-4": (15.00, 75.00, 1.50),
    "gemini-2.0-flash": (0.10, 0.40, 0.025),
    "gemini-2.5-flash": (0.30, 2.50, 0.075),
    "gemini-2.5-pro": (1.25, 10.00, 0.31),
}


@dataclass(frozen=True)
class Price(TokenPrice):
    """USD per 1M prompt, completion and cached prompt tokens of one model (a
    :class:`~graphs.metering.pricing.TokenPrice`, whose ``cost`` the budgets and
    ``Workspace.compare`` use too), and where the price came from.

    Attributes:
        source: ``"user"`` (the ``--prices`` file), ``"default"`` (the built-in estimate) or
            ``"local"`` (a local model: free).
        key: The table entry that matched (the model id itself for local models).
    """

    source: str = field(kw_only=True)
    key: str = field(kw_only=True)

    @classmethod
    def of(cls, row: PriceRow, *, source: str, key: str) -> Price:
        """The price of one table entry."""
        return cls(row[0], row[1], row[2] if len(row) > 2 else None, source=source, key=key)


class PriceTableError(DataError):
    """A ``--prices`` file that cannot be read as a price table (the message says why)."""


#: The names an entry of a price table may use (``input``/``output``/``cached_input``: the
#: same rates by other names).
PRICE_KEYS = ("prompt", "completion", "cached", "input", "output", "cached_input")


def load_prices(path: str | Path) -> dict[str, PriceRow]:
    """A user's price table from a JSON file:
    ``{model_id: {"prompt": USD, "completion": USD, "cached": USD}}`` per 1M tokens
    (``input``/``output``/``cached_input`` are accepted as the key names too; ``cached``
    is optional)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriceTableError(
            f"Cannot read the price table {path}: {exc.strerror or exc}"
        ) from None
    except json.JSONDecodeError as exc:
        raise PriceTableError(f"The price table {path} is not valid JSON: {exc}") from None
    return parse_prices(data, where=str(path))


def _usd(value: Any, model: Any, name: str, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PriceTableError(
            f"{where}: {model!r} needs a non-negative number for {name!r} (USD per 1M tokens), "
            f"got {value!r}"
        )
    return float(value)


def parse_prices(data: Any, *, where: str = "price table") -> dict[str, PriceRow]:
    """Validate a price table given as a mapping (see :func:`load_prices`)."""
    if not isinstance(data, Mapping):
        raise PriceTableError(
            f'{where}: expected an object of model ids, e.g. {{"gpt-4o": {{"prompt": 2.5, '
            '"completion": 10}}'
        )
    table: dict[str, PriceRow] = {}
    for model, entry in data.items():
        if not isinstance(entry, Mapping):
            raise PriceTableError(
                f"{where}: {model!r} needs an object with 'prompt' and 'completion' USD per "
                "1M tokens"
            )
        unknown = sorted(str(k) for k in entry if k not in PRICE_KEYS)
        if (
            unknown
        ):  # a misspelt rate would otherwise fall back to another and price every token wrong
            raise PriceTableError(
                f"{where}: {model!r} has unknown key(s) {', '.join(map(repr, unknown))}; "
                f"known keys: {', '.join(PRICE_KEYS)}"
            )
        prompt = _usd(entry.get("prompt", entry.get("input")), model, "prompt", where)
        completion = _usd(entry.get("completion", entry.get("output")), model, "completion", where)
        cached = entry.get("cached", entry.get("cached_input"))
        table[str(model)] = (
            (prompt, completion)
            if cached is None
            else (prompt, completion, _usd(cached, model, "cached", where))
        )
    return table


def split_model_id(model: str) -> tuple[str, str | None]:
    """``"name @ url"`` (how runs record models) -> ``(name, url)``."""
    name, sep, url = model.partition(" @ ")
    return name.strip(), (url.strip() or None) if sep else None


def is_local(model: str) -> bool:
    """True for the embedded model, GGUF files and servers on localhost or a private network."""
    name, url = split_model_id(model)
    if name.lower().endswith(".gguf") or name.startswith("embedded"):
        return True
    if not url:
        return False
    host = (urlparse(url if "://" in url else f"http://{url}").hostname or "").lower()
    if host in {"localhost", "host.docker.internal"} or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def _lookup(name: str, table: Mapping[str, PriceRow]) -> str | None:
    """The table key for a model name: exact, without a provider prefix, or the longest key the name
    starts with followed by ``-`` (dated snapshots: ``gpt-4o-2024-08-06`` -> ``gpt-4o``)."""
    candidates = [name, name.split(":", 1)[-1], name.rsplit("/", 1)[-1]]
    for candidate in candidates:
        if candidate in table:
            return candidate
    for candidate in candidates:
        prefixes = [k for k in table if candidate.startswith(k + "-")]
        if prefixes:
            return max(prefixes, key=len)
    return None


def price_for(model: str | None, user: Mapping[str, PriceRow] | None = None) -> Price | None:
    """The price of ``model`` (a run's model id): the user's table first, then free for local
    models, then the built-in estimate; ``None`` when unknown (the report says so)."""
    if not model:
        return None
    name, _ = split_model_id(model)
    user = user or {}
    for candidate in (model, name):
        if candidate in user:
            return Price.of(user[candidate], source="user", key=candidate)
    key = _lookup(name, user)
    if key is not None:
        return Price.of(user[key], source="user", key=key)
    if is_local(model):
        return Price(0.0, 0.0, source="local", key=model)
    key = _lookup(name, DEFAULT_PRICES)
    if key is not None:
        return Price.of(DEFAULT_PRICES[key], source="default", key=key)
    return None


def row_cost(
    row: Mapping[str, Any],
    price: Price | None,
    prices: Mapping[str, PriceRow] | None = None,
    *,
    cached: bool = True,
) -> float | None:
    """USD of one result row (``None`` for a failed row or an unknown price); its cached prompt
    tokens at the cached rate, or every prompt token at the prompt rate when ``cached`` is false
    (what the row would have cost without a prompt cache).

    A row whose answer called a rerank server adds its ``rerank_tokens`` at the reranker's
    prompt price (:func:`rerank_model`; from ``prices``, the user's table, as any model's;
    free when local); an unpriced hosted reranker makes the row's cost unknown, as an unpriced
    chat model does.
    """
    usage = row.get("usage")
    if price is None or row.get("status") != "ok" or not usage:
        return None
    cost = price.cost(
        usage.get("prompt_tokens", 0),
        usage.get("completion_tokens", 0),
        usage.get("cached_prompt_tokens", 0) if cached else 0,
    )
    reranked = row_rerank_cost(row, prices)
    return None if reranked is None else cost + reranked


def row_rerank_cost(
    row: Mapping[str, Any], prices: Mapping[str, PriceRow] | None = None
) -> float | None:
    """USD of one result row's rerank tokens at its reranker's prompt price (:func:`rerank_model`; 0
    without a reranker or for a local one); ``None`` for a failed row or a hosted reranker the table
    does not price."""
    usage = row.get("usage")
    if row.get("status") != "ok" or not usage:
        return None
    reranker = rerank_model(row)
    if reranker is None or not usage.get("rerank_tokens"):
        return 0.0
    price = price_for(reranker, prices)
    return None if price is None else price.cost(usage["rerank_tokens"], 0)


def rerank_model(row: Mapping[str, Any]) -> str | None:
    """The reranker a row's answer called, as a model id: ``"NAME @ URL"`` for a rerank server
    (priced like a chat model), ``"embedded cross-encoder"`` for an in-process cross-encoder (local:
    free); None when the row's config names no reranker."""
    config = row.get("config") or {}
    kind = config.get("rerank") if isinstance(config, Mapping) else None
    if not kind:
        return None
    options = config.get("rerank_options") or {}
    if kind != "server":
        return "embedded cross-encoder"
    return f"{options.get('model') or 'reranker'} @ {options.get('base_url') or ''}"


def rerank_price(
    configs: Iterable[Mapping[str, Any]], user: Mapping[str, PriceRow] | None = None
) -> Price | None:
    """The price a budget counts rerank tokens at (its prompt price): the dearest of the rerankers
    ``configs`` (strategy options) name; ``None`` when they name none or only local ones (free).

    Raises:
        ValueError: A hosted reranker the price table does not list (its cost could not be counted).
    """
    found: list[Price] = []
    for config in configs:
        model = rerank_model({"config": config})
        if model is None:
            continue
        price = price_for(model, user)
        if price is None:
            raise ValueError(
                f"--max-cost needs the price of the reranker {model.split(' @ ')[0]!r}, which "
                "the price table (experiments/planning/prices.py) does not list: give it with "
                "--prices FILE, or use --max-calls / --max-tokens"
            )
        found.append(price)
    priced = [p for p in found if p.prompt > 0]
    return max(priced, key=lambda p: p.prompt) if priced else None


def row_index_cost(row: Mapping[str, Any], price: Price | None) -> float | None:
    """USD of the index-time part of one result row (``usage.index_*``: 0 for a row that reused
    an index or built none; ``None`` for a failed row or an unknown price)."""
    usage = row.get("usage")
    if price is None or row.get("status") != "ok" or not usage:
        return None
    return price.cost(usage.get("index_prompt_tokens", 0), usage.get("index_completion_tokens", 0))
