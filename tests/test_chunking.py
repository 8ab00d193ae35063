import pytest

from longctx.retrieval import ChunkingConfig, Corpus, chunk_corpus
from longctx.retrieval.chunking import split_sentences, split_tokens, split_words, word_len
from longctx.retrieval.tokens import count_tokens


@pytest.fixture
def corpus():
    return Corpus.from_texts(
        [
            "The cat sat on the mat. " * 60,
            "北京是中国的首都。上海是最大的城市。" * 40,
            "Short one.",
        ],
        titles=["Cats", "Cities", "Short"],
    )


def test_token_chunks_respect_size_and_are_exact_substrings(corpus):
    chunks = chunk_corpus(corpus, ChunkingConfig(unit="tokens", size=50))
    assert all(c.num_tokens <= 50 for c in chunks)
    for c in chunks:
        assert c.text in corpus[c.doc_index].text
        assert c.title == corpus[c.doc_index].title and c.doc_id == corpus[c.doc_index].doc_id
    assert [c.chunk_id for c in chunks] == list(range(len(chunks)))
    # positions restart at 0 for each document and are consecutive
    for doc_index in range(len(corpus)):
        positions = [c.position for c in chunks if c.doc_index == doc_index]
        assert positions == list(range(len(positions)))


def test_token_chunks_cover_the_document_without_overlap(corpus):
    text = corpus[0].text
    pieces = [t for t, _ in split_tokens(text, 37)]
    assert "".join(pieces) == text
    assert sum(n for _, n in split_tokens(text, 37)) == count_tokens(text)


def test_token_chunks_never_split_cjk_characters(corpus):
    text = corpus[1].text
    pieces = [t for t, _ in split_tokens(text, 7)]
    assert "".join(pieces) == text  # a character cut in half would not survive the round trip
    assert all("\ufffd" not in p for p in pieces)


def test_token_overlap_shares_tokens():
    text = " ".join(f"w{i}" for i in range(300))
    no_overlap = list(split_tokens(text, 50, 0))
    overlapped = list(split_tokens(text, 50, 10))
    assert len(overlapped) > len(no_overlap)
    first, second = overlapped[0][0], overlapped[1][0]
    assert first[-15:].strip().split()[-1] in second  # the tail of one chunk opens the next


@pytest.mark.parametrize(
    "text,expected",
    [("Hello, world!", 2), ("北京是首都", 5), ("GPT-4 在北京", 5), ("", 0), ("don't stop", 3)],
)
def test_word_len_counts_cjk_characters_as_words(text, expected):
    assert word_len(text) == expected


def test_sentence_split_keeps_delimiters():
    assert split_sentences("One. Two! 三。四") == ["One. ", "Two! ", "三。", "四"]


def test_word_chunks_pack_whole_sentences_under_the_cap():
    text = "".join(f"Sentence number {i} has six words. " for i in range(40))
    chunks = list(split_words(text, 20))
    assert all(word_len(c) <= 20 for c in chunks)
    assert all(c.endswith(". ") for c in chunks)  # cut only at sentence ends
    assert "".join(chunks) == text


def test_word_chunks_cut_overlong_sentences():
    text = " ".join(["word"] * 55) + "."
    chunks = list(split_words(text, 20))
    assert [word_len(c) for c in chunks] == [20, 20, 15]


def test_word_overlap_carries_trailing_sentences():
    text = "".join(f"S{i} a b c. " for i in range(10))  # 4 words per sentence
    chunks = list(split_words(text, 12, overlap=4))
    assert chunks[0] == "S0 a b c. S1 a b c. S2 a b c. "
    assert chunks[1].startswith("S2 a b c. S3")  # the last sentence (4 words) is carried over


@pytest.mark.parametrize("bad", [dict(size=0), dict(size=10, overlap=10), dict(unit="chars")])
def test_invalid_chunking_config(bad):
    with pytest.raises(ValueError):
        ChunkingConfig(**bad)


#: Pieces that stress tokenization at a cut: CJK, emoji, accents and combining marks, digits,
#: contractions, runs of spaces and newlines, punctuation.
_PIECES = [
    "the",
    "a",
    "ünïcode",
    "Straße",
    "长上下文",
    "推理",
    "😀",
    "🇫🇷",
    "123",
    "4567890",
    "x²",
    "don't",
    "we'll",
    "  ",
    " ",
    "\n",
    "\n\n",
    "\t",
    ".",
    "!?",
    "—",
    "'s",
    "Ⅻ",
    "мир",
    "e\u0301",
    "_x",
    "$%^",
    "http://x.y/z?q=1",
    "。",
    "；",
]


def _random_text(rng, n):
    return "".join(rng.choice(_PIECES) + rng.choice(["", " ", " ", "  "]) for _ in range(n))


def test_a_text_encoded_a_segment_at_a_time_has_the_same_tokens_and_chunks():
    """Streaming a long text (tiny segments here) changes no token and no chunk: the result is the
    whole text's, for 300 random texts of mixed scripts, sizes and overlaps."""
    import random

    from longctx.retrieval.tokens import encode, encode_segments, text_segments

    rng = random.Random(0)
    for _ in range(300):
        text = _random_text(rng, rng.randint(1, 300))
        segment = rng.randint(1, 60)
        assert "".join(text_segments(text, segment)) == text
        assert [i for ids in encode_segments(text, segment) for i in ids] == encode(text)
        size = rng.randint(1, 40)
        overlap = rng.randint(0, size - 1)
        whole = list(split_tokens(text, size, overlap, segment_chars=10**9))
        assert list(split_tokens(text, size, overlap, segment_chars=segment)) == whole
        if whole:
            assert whole[0][0] in text


def test_count_tokens_of_long_and_batched_texts_matches_one_encode(monkeypatch):
    import longctx.retrieval.tokens as tokens

    monkeypatch.setattr(tokens, "SEGMENT_CHARS", 50)
    monkeypatch.setattr(tokens, "_BATCH_CHARS", 120)
    texts = ["word " * 100, "", "short text", "长上下文推理 " * 30, "a b c"] * 3
    expected = [len(tokens.encode(t)) for t in texts]
    assert tokens.count_tokens_batch(texts) == expected
    assert [tokens.count_tokens(t) for t in texts] == expected
