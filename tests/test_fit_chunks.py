"""Chunks that fit the embedder: with the default settings no chunk is cut when embedded, for every
built-in embedder."""

import random
import warnings

import pytest

from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.index.retrieval_settings import RetrievalSettings
from longctx.retrieval import Corpus, build_index
from longctx.retrieval.chunking import Chunk
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.embedders import ContrieverEmbedder, OpenAIEmbedder, offline_minilm_path
from longctx.retrieval.fit import TokenLimit, fit_chunks, split_to_fit
from longctx.retrieval.tokens import count_tokens_batch
from tests.recording_server import RecordingServer
from tests.test_index_cache import CountingEmbedder


def pseudo_words(n: int, letters: int, seed: int) -> str:
    """``n`` made-up words of ``letters`` letters: each is several word pieces (MiniLM, Contriever)
    or cl100k tokens."""
    rng = random.Random(seed)
    return " ".join("".join(rng.choices("bcdfghjklmnpqrstvwxz", k=letters)) for _ in range(n)) + "."


#: Default chunks (200 words) of 6-12 word pieces a word (MiniLM and Contriever read 256 and 512),
#: and of ~100 cl100k tokens a word (OpenAI's models read 8,191): every one is over its
#: embedder's limit.
TEXTS = [
    pseudo_words(250, 14, seed=1),
    "A short document that fits.",
    pseudo_words(230, 250, seed=2),
]


def hf_lengths(tokenizer, texts: list[str]) -> list[int]:
    """Tokens of each text as the embedder's tokenizer makes them, special tokens included (what
    it truncates)."""
    return [
        len(ids)
        for ids in tokenizer(texts, add_special_tokens=True, truncation=False, verbose=False)[
            "input_ids"
        ]
    ]


def assert_pieces_of_the_documents(index, corpus: Corpus) -> None:
    """Every document's chunks, in order, are its text (up to the spaces between them), numbered as
    a chunking numbers them."""
    assert [c.chunk_id for c in index.chunks] == list(range(len(index)))
    for d, doc in enumerate(corpus):
        chunks = [c for c in index.chunks if c.doc_index == d]
        assert [c.position for c in chunks] == list(range(len(chunks)))
        assert "".join(c.text for c in chunks).split() == doc.text.split()


def test_default_dense_chunks_fit_minilm():
    corpus = Corpus.from_texts(TEXTS)
    settings = RetrievalSettings(retriever="dense")
    embedder = CountingEmbedder()
    embedded: list[str] = []
    original = embedder.embed_documents
    embedder.embed_documents = lambda texts: embedded.extend(texts) or original(texts)  # type: ignore[method-assign]
    index = build_index(corpus, DenseRetriever(embedder), chunking=settings.chunking())
    limit = embedder.model.max_seq_length
    assert limit == 256
    assert max(hf_lengths(embedder.model.tokenizer, [c.text for c in index.chunks])) <= limit
    assert embedded == [c.text for c in index.chunks]  # what was embedded is the fitted chunks
    assert_pieces_of_the_documents(index, corpus)
    unfitted = build_index(
        corpus, "bm25", chunking=settings.chunking()
    )  # the chunker's own 200-word chunks: over the limit
    assert max(hf_lengths(embedder.model.tokenizer, [c.text for c in unfitted.chunks])) > limit
    assert len(index) > len(unfitted)


def test_default_contriever_chunks_fit_its_512_tokens(tmp_path):
    """A tiny BERT built from a config (no weights downloaded) with MiniLM's WordPiece tokenizer:
    Contriever's recipe, 512 tokens."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(str(offline_minilm_path()))
    tokenizer.save_pretrained(tmp_path)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
    )
    BertModel(config).save_pretrained(tmp_path)
    corpus = Corpus.from_texts(TEXTS)
    settings = RetrievalSettings(retriever="contriever", retriever_options={"model": str(tmp_path)})
    index = RetrievalService(settings=settings).build_index(corpus)
    assert (
        max(hf_lengths(tokenizer, [c.text for c in index.chunks]))
        <= ContrieverEmbedder(str(tmp_path)).max_length
        == 512
    )
    assert_pieces_of_the_documents(index, corpus)
    assert index.search("a short document", 1)[0].chunk.doc_index in range(len(corpus))


@pytest.mark.parametrize("max_input_tokens", [None, 512])
def test_default_openai_chunks_fit_the_servers_input(max_input_tokens):
    corpus = Corpus.from_texts(TEXTS)
    options = {} if max_input_tokens is None else {"max_input_tokens": max_input_tokens}
    with RecordingServer() as server:
        settings = RetrievalSettings(
            retriever="openai",
            retriever_options={"base_url": server.url, "api_key": "test", **options},
        )
        index = RetrievalService(settings=settings).build_index(corpus)
    sent = [text for request in server.embedding_requests for text in request["input"]]
    limit = max_input_tokens or 8191
    assert sent == [c.text for c in index.chunks]
    assert max(count_tokens_batch(sent)) <= limit  # cl100k, what OpenAI's embedding models count
    assert_pieces_of_the_documents(index, corpus)
    if max_input_tokens is None:
        assert (
            max(
                count_tokens_batch(
                    [
                        c.text
                        for c in build_index(corpus, "bm25", chunking=settings.chunking()).chunks
                    ]
                )
            )
            > limit
        )


def test_unfitted_chunks_are_named_before_embedding_with_what_is_cut():
    corpus = Corpus.from_texts(TEXTS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        index = build_index(
            corpus,
            DenseRetriever(CountingEmbedder(), fit_chunks=False),
            chunking=RetrievalSettings().chunking(),
        )
    message = next(str(w.message) for w in caught if "cut when embedded" in str(w.message))
    lengths = hf_lengths(CountingEmbedder().model.tokenizer, [c.text for c in index.chunks])
    over = [n - 256 for n in lengths if n > 256]
    assert 0 < len(over) < len(index)
    assert message.startswith(
        f"{len(over)} of {len(index)} chunks exceed the 256 all-MiniLM-L6-v2 word pieces"
    )
    assert (
        f"{sum(over):,} tokens dropped in all, {max(over):,} from the longest; first: chunk 0"
        in message
    )
    assert len(index) == len(build_index(corpus, "bm25", chunking=RetrievalSettings().chunking()))


def test_fitted_and_unfitted_dense_indexes_have_their_own_cache_keys():
    fitted = DenseRetriever(CountingEmbedder()).cache_params()
    assert (
        fitted["fit_chunks"] is True
        and "fit_chunks" not in DenseRetriever(CountingEmbedder(), fit_chunks=False).cache_params()
    )
    small = DenseRetriever(
        OpenAIEmbedder(base_url="http://127.0.0.1:9/v1", max_input_tokens=512)
    ).cache_params()
    assert small["max_input_tokens"] == 512


# -- the split itself -------------------------------------------------------------------
def char_limit(budget: int, specials: int = 0) -> TokenLimit:
    """A tokenizer of one token per non-space character: lengths are easy to reason about."""

    def spans(text: str) -> list[tuple[int, int]]:
        return [(i, i + 1) for i, ch in enumerate(text) if not ch.isspace()]

    return TokenLimit(
        "characters",
        budget + specials,
        specials,
        lambda texts: [len(spans(t)) for t in texts],
        spans,
    )


@pytest.mark.parametrize(
    ("text", "budget", "expected"),
    [
        ("", 4, [""]),  # empty: kept as it is
        ("abc", 4, ["abc"]),  # fits
        ("abcd", 4, ["abcd"]),  # exactly the limit (a tie): kept whole
        ("abcde", 4, ["abc", "de"]),  # n=5 over 4: two balanced pieces, not 4 + 1
        ("ab cd ef gh", 4, ["ab cd ", "ef gh"]),  # cut at the space nearest the balanced length
        ("x" * 12, 4, ["xxxx", "xxxx", "xxxx"]),  # one long word: cut between tokens
        ("a", 1, ["a"]),  # n=1
    ],
)
def test_split_to_fit_balances_pieces_and_cuts_at_spaces(text, budget, expected):
    assert split_to_fit(text, char_limit(budget)) == expected


def test_split_to_fit_of_ten_thousand_tokens():
    text = " ".join(["abcdefg"] * 1250)  # 8,750 tokens, spaces every 7
    pieces = split_to_fit(text, char_limit(256, specials=2))
    assert "".join(pieces) == text and len(pieces) == 35  # ceil(8750 / 254)
    assert (
        max(len(p.replace(" ", "")) for p in pieces) <= 254
        and min(len(p.replace(" ", "")) for p in pieces) >= 200
    )


def test_fit_chunks_renumbers_ids_and_positions_per_document():
    chunks = [
        Chunk(5, 0, "a", "A", 0, "abcdef", 6),
        Chunk(6, 0, "a", "A", 1, "ab", 2),
        Chunk(7, 1, "b", "B", 0, "abcdefgh", 8),
    ]
    fitted = fit_chunks(chunks, char_limit(4), first_chunk_id=5)
    assert [(c.chunk_id, c.doc_index, c.position, c.text) for c in fitted] == [
        (5, 0, 0, "abc"),
        (6, 0, 1, "def"),
        (7, 0, 2, "ab"),
        (8, 1, 0, "abcd"),
        (9, 1, 1, "efgh"),
    ]
    assert fitted[2] == Chunk(
        7, 0, "a", "A", 2, "ab", 2
    )  # a chunk that fits keeps its cl100k count
    assert [c.num_tokens for c in fitted[:2]] == count_tokens_batch(["abc", "def"])
    assert fit_chunks([], char_limit(4)) == []
