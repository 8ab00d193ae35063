"""USD of token counts at a model's price: the one rule the report, the budgets and
``Workspace.compare`` share.

Providers bill the prompt tokens they read from their prompt cache at a cached-input rate (OpenAI:
half or a quarter of the prompt rate, Anthropic a tenth), so a price has three rates; without a
cached rate a cached token costs a prompt token. The report's price table
(``longctx.experiments.planning.prices``, whose ``Price`` is a :class:`TokenPrice`) sits above this
layer, so the budgets and the comparison take a price as a parameter and read it with
:func:`as_token_price`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: Tokens per unit of a rate: prices are USD per 1M tokens.
PER_TOKENS = 1_000_000


@dataclass(frozen=True)
class TokenPrice:
    """USD per 1M prompt, completion and cached prompt tokens of one model.

    Attributes:
        prompt: USD per 1M prompt (input) tokens.
        completion: USD per 1M completion (output) tokens.
        cached: USD per 1M prompt tokens the server read from its prompt cache (``None``: no
            discount known, they cost ``prompt``).
    """

    prompt: float
    completion: float
    cached: float | None = None

    def cost(
        self, prompt_tokens: float, completion_tokens: float, cached_prompt_tokens: float = 0
    ) -> float:
        """USD for these token counts (``cached_prompt_tokens``: the part of ``prompt_tokens`` read
        from the prompt cache)."""
        cached = min(max(cached_prompt_tokens, 0), prompt_tokens)
        cached_rate = self.prompt if self.cached is None else self.cached
        return (
            (prompt_tokens - cached) * self.prompt
            + cached * cached_rate
            + completion_tokens * self.completion
        ) / PER_TOKENS


def as_token_price(price: Any) -> TokenPrice | None:
    """``price`` as a :class:`TokenPrice`: ``None``, a ``TokenPrice``
    (``longctx.experiments.planning.prices.Price`` is one), ``(prompt, completion)`` or
    ``(prompt, completion, cached)`` USD per 1M tokens, or an object with ``prompt``, ``completion``
    and optionally ``cached`` attributes.

    Raises:
        ValueError: A price that is not such a value, or a rate that is negative or not a number.
    """
    if price is None or isinstance(price, TokenPrice):
        return price
    if hasattr(price, "prompt") and hasattr(price, "completion"):
        price = (price.prompt, price.completion, getattr(price, "cached", None))
    try:
        rates = (
            []
            if isinstance(price, (str, bytes))
            else [None if v is None else float(v) for v in price]
        )
    except (TypeError, ValueError):
        rates = []
    if len(rates) == 2:
        rates.append(None)
    if len(rates) != 3 or rates[0] is None or rates[1] is None:
        raise ValueError(
            "A price must be (prompt, completion) or (prompt, completion, cached) USD per 1M "
            f"tokens, got {price!r}"
        )
    if any(r is not None and (r < 0 or math.isnan(r)) for r in rates):
        raise ValueError(f"A price must be non-negative USD per 1M tokens, got {price!r}")
    return TokenPrice(rates[0], rates[1], rates[2])


__all__ = ["PER_TOKENS", "TokenPrice", "as_token_price"]
