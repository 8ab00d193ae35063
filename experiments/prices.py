"""Estimated money cost of a run: USD per 1M prompt and completion tokens, per model id.

The built-in table lists a few well-known API models at their public list prices on
:data:`DEFAULT_PRICES_DATE`; it is an *estimate* (prices change, batch and cached-input
discounts are ignored). A user's table (``longctx report DIR --prices FILE``) overrides
and extends it::

    {"gpt-4o-mini": {"prompt": 0.15, "completion": 0.60},
     "my-finetune @ http://gpu-box:8000/v1": {"prompt": 0.05, "completion": 0.05}}

Local models cost 0: the embedded GGUF model, any ``.gguf`` file, and any server on
localhost or a private address (unless the user's table prices them). Calls replayed from
the LLM cache are free already: usage counts only calls that reached the model.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

#: When the built-in list prices were read.
DEFAULT_PRICES_DATE = "2025-06"
#: USD per 1M tokens (prompt, completion): public list prices on DEFAULT_PRICES_DATE, standard tier.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3-mini": (1.10, 4.40),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "gemini-2.0-flash": (0.10, 0.40),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-pro": (1.25, 10.00),
}


@dataclass(frozen=True)
class Price:
    """USD per 1M prompt and completion tokens of one model, and where the price came from.

    Attributes:
        prompt: USD per 1M prompt (input) tokens.
        completion: USD per 1M completion (output) tokens.
        source: ``"user"`` (the ``--prices`` file), ``"default"`` (the built-in estimate) or
            ``"local"`` (a local model: free).
        key: The table entry that matched (the model id itself for local models).
    """

    prompt: float
    completion: float
    source: str
    key: str

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """USD for these token counts."""
        return (prompt_tokens * self.prompt + completion_tokens * self.completion) / 1_000_000


class PriceTableError(ValueError):
    """A ``--prices`` file that cannot be read as a price table (the message says why)."""


def load_prices(path: str | Path) -> dict[str, tuple[float, float]]:
    """A user's price table from a JSON file: ``{model_id: {"prompt": USD, "completion": USD}}``
    per 1M tokens (``input``/``output`` are accepted as the key names too)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PriceTableError(f"Cannot read the price table {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise PriceTableError(f"The price table {path} is not valid JSON: {exc}") from None
    return parse_prices(data, where=str(path))


def parse_prices(data: Any, *, where: str = "price table") -> dict[str, tuple[float, float]]:
    """Validate a price table given as a mapping (see :func:`load_prices`)."""
    if not isinstance(data, Mapping):
        raise PriceTableError(f'{where}: expected an object of model ids, e.g. {{"gpt-4o": {{"prompt": 2.5, "completion": 10}}}}')
    table: dict[str, tuple[float, float]] = {}
    for model, entry in data.items():
        if not isinstance(entry, Mapping):
            raise PriceTableError(f"{where}: {model!r} needs an object with 'prompt' and 'completion' USD per 1M tokens")
        values = []
        for name, alias in (("prompt", "input"), ("completion", "output")):
            value = entry.get(name, entry.get(alias))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise PriceTableError(f"{where}: {model!r} needs a non-negative number for {name!r} (USD per 1M tokens), got {value!r}")
            values.append(float(value))
        table[str(model)] = (values[0], values[1])
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


def _lookup(name: str, table: Mapping[str, tuple[float, float]]) -> str | None:
    """The table key for a model name: exact, without a provider prefix, or the longest key
    the name starts with followed by ``-`` (dated snapshots: ``gpt-4o-2024-08-06`` -> ``gpt-4o``)."""
    candidates = [name, name.split(":", 1)[-1], name.rsplit("/", 1)[-1]]
    for candidate in candidates:
        if candidate in table:
            return candidate
    for candidate in candidates:
        prefixes = [k for k in table if candidate.startswith(k + "-")]
        if prefixes:
            return max(prefixes, key=len)
    return None


def price_for(model: str | None, user: Mapping[str, tuple[float, float]] | None = None) -> Price | None:
    """The price of ``model`` (a run's model id): the user's table first, then free for local
    models, then the built-in estimate; ``None`` when unknown (the report says so)."""
    if not model:
        return None
    name, _ = split_model_id(model)
    user = user or {}
    for candidate in (model, name):
        if candidate in user:
            return Price(*user[candidate], source="user", key=candidate)
    key = _lookup(name, user)
    if key is not None:
        return Price(*user[key], source="user", key=key)
    if is_local(model):
        return Price(0.0, 0.0, source="local", key=model)
    key = _lookup(name, DEFAULT_PRICES)
    if key is not None:
        return Price(*DEFAULT_PRICES[key], source="default", key=key)
    return None


def row_cost(row: Mapping[str, Any], price: Price | None) -> float | None:
    """USD of one result row (``None`` for a failed row or an unknown price)."""
    usage = row.get("usage")
    if price is None or row.get("status") != "ok" or not usage:
        return None
    return price.cost(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))


def row_index_cost(row: Mapping[str, Any], price: Price | None) -> float | None:
    """USD of the index-time part of one result row (``usage.index_*``: 0 for a row that reused
    an index or built none; ``None`` for a failed row or an unknown price)."""
    usage = row.get("usage")
    if price is None or row.get("status") != "ok" or not usage:
        return None
    return price.cost(usage.get("index_prompt_tokens", 0), usage.get("index_completion_tokens", 0))
