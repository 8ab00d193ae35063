"""Fixes found by running every strategy over a 10M-token corpus (``experiments/perf/bench_scale.py``, docs/scale.md)."""

from __future__ import annotations

from retrieval.tokenizers import Tokenizer, clean_cut, decode_prefix, split_ids


class NoWholeCopy(list):
    """A token stream that fails when something iterates all of it (``list(ids)`` does)."""

    def __iter__(self):
        raise AssertionError("the whole token stream was copied")


def _decode(ids: list[int]) -> str:
    return "".join(f"{i} " for i in ids)


def test_cutting_a_window_never_copies_the_whole_stream():
    # MemAgent cuts a 10M-token stream into 2,000 windows; a copy of the stream per window
    # (two, with clean_cut) made preparing a 10M-token run take minutes.
    ids = NoWholeCopy(range(50_000))
    text, cut = decode_prefix(ids, 10_000, 15_000, _decode)
    assert cut == 15_000 and text == _decode(list(range(10_000, 15_000)))
    assert clean_cut(ids, 20_000, _decode) == 20_000


def test_split_ids_still_covers_the_stream_in_windows():
    tok = Tokenizer(id="chars", encode_fn=lambda t: [ord(c) for c in t], decode_fn=lambda ids: "".join(map(chr, ids)))
    text = "abcdefghij" * 5_000
    windows = split_ids(text, 1_000, tok)
    assert "".join(w for w, _ in windows) == text
    assert [n for _, n in windows] == [1_000] * 50
