"""Middle truncation of one prompt to a token budget, the LongBench / LV-Eval rule: tokenize
the *filled* prompt and keep the first and last half of the budget. For a prompt far
beyond the budget only its two ends are tokenized (:func:`end_ids`), with the same result.
"""

from __future__ import annotations

from collections.abc import Callable

from longctx.graphs.plugin.api import middle_truncate

#: Characters kept per side before tokenizing a huge prompt; no tokenizer packs 16 chars per token.
CHARS_PER_TOKEN_BOUND = 16
#: First guess of characters per token when slicing a huge prompt's ends (grown until enough).
FIRST_CHARS_PER_TOKEN = 6
#: Tokens tokenized beyond the kept half at each end, so the cut of the slice cannot change the
#: kept tokens (a cut only re-tokenizes the word or character run it falls in).
END_MARGIN_TOKENS = 4096


def end_ids(prompt: str, half: int, encode: Callable[[str], list[int]], *, tail: bool) -> list[int]:
    """The tokens of a slice at the start (or end, ``tail``) of ``prompt`` holding at least
    ``half`` tokens plus a margin: the slice starts at ``FIRST_CHARS_PER_TOKEN`` characters a
    token and grows by the density it found until it holds enough, up to the
    ``CHARS_PER_TOKEN_BOUND`` bound.

    Tokenizing 16 characters a token by default meant ~1M tokens encoded per question for a
    128K window over a 10M-token corpus (~0.5 s); this encodes ~1.5x the kept tokens.
    """
    bound = CHARS_PER_TOKEN_BOUND * 2 * half
    chars = FIRST_CHARS_PER_TOKEN * (half + END_MARGIN_TOKENS)
    while True:
        chars = min(chars, bound)
        ids = encode(prompt[-chars:] if tail else prompt[:chars])
        need = half + END_MARGIN_TOKENS
        if len(ids) >= need or chars >= bound:
            return ids
        # the density seen, 10% spare
        chars = max(int(chars * need / max(len(ids), 1) * 1.1), chars + chars // 4)


def truncation_cut(
    prompt: str,
    max_tokens: int,
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
) -> tuple[int, int] | None:
    """Characters of ``prompt`` that :func:`truncate_prompt` keeps at the head and at the tail,
    or ``None`` when the prompt fits (for measuring what reaches the model without a call)."""
    bound = CHARS_PER_TOKEN_BOUND * max_tokens
    if len(prompt) > 2 * bound:
        half = max_tokens // 2
        head, tail = (
            end_ids(prompt, half, encode, tail=False),
            end_ids(prompt, half, encode, tail=True),
        )
        return len(decode(head[:half])), len(decode(tail[len(tail) - half :]))
    ids = encode(prompt)
    if len(ids) <= max_tokens:
        return None
    kept = middle_truncate(ids, max_tokens)
    half = len(kept) // 2
    return len(decode(kept[:half])), len(decode(kept[half:]))


def truncate_prompt(
    prompt: str,
    max_tokens: int,
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
) -> tuple[str, bool]:
    """Middle-truncate ``prompt`` to ``max_tokens`` tokens; returns ``(text, was_truncated)``.

    For prompts far beyond the budget (a 10M-token corpus) only the two ends are
    tokenized (:func:`end_ids`): a slice per side holding half the budget plus a margin
    of tokens (at most ``16 * max_tokens`` characters, which always holds more than half
    the budget), so the result equals tokenizing everything.
    """
    bound = CHARS_PER_TOKEN_BOUND * max_tokens
    if len(prompt) > 2 * bound:
        half = max_tokens // 2
        head, tail = (
            end_ids(prompt, half, encode, tail=False),
            end_ids(prompt, half, encode, tail=True),
        )
        return decode(head[:half]) + decode(tail[len(tail) - half :]), True
    ids = encode(prompt)
    if len(ids) <= max_tokens:
        return prompt, False
    kept = middle_truncate(ids, max_tokens)
    half = len(kept) // 2
    return decode(kept[:half]) + decode(kept[half:]), True
