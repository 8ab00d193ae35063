"""Full context over a huge corpus: the stitched tail is exactly the official cut.

``truncate_our_prompt`` tokenizes the body's end once per corpus, up to an anchor just after
a newline, and per question only the stretch from the anchor on. These tests hold it to
tokenizing the whole filled prompt and middle-truncating it (``truncate_prompt``), over
corpora and questions chosen to stress pre-tokenization (unicode, whitespace runs,
numbers, CJK, documents that end without a newline) and several real tokenizers.
"""

import random

import pytest

from graphs.full_context import FULL_CONTEXT_TEMPLATE, truncate_prompt
from graphs.full_context import graph as fc
from graphs.prompts import fill, format_documents
from retrieval import Corpus
from retrieval.contract import Question
from retrieval.embedders import offline_minilm_path
from retrieval.tokenizers import hf_tokenizer, tiktoken_tokenizer

BUDGET = 2_000  # a prompt beyond 2 x 16 x BUDGET characters takes the ends-only path


def _corpus(kind: str, seed: int) -> Corpus:
    rng = random.Random(seed)
    pieces = {
        "prose": lambda: " ".join(rng.choice(["revenue", "grew", "by", "12.5%", "in", "FY2024", "Acme", "Ltd.", "the"]) for _ in range(30)) + ".\n",
        "unicode": lambda: rng.choice(["naïve café ", "鼹鼠饕餮魑魅。", "Zürich – 東京 ", "emoji 🚀🚀 ", "Ωμέγα "]) * rng.randint(1, 4) + "\n",
        "spaces": lambda: rng.choice(["a   b", "\t\tindent", "   \n\n   ", "line\r\n", "x" * rng.randint(1, 80)]) + rng.choice(["\n", " ", "\n\n"]),
        "numbers": lambda: "".join(rng.choice("0123456789,.") for _ in range(rng.randint(1, 40))) + rng.choice(["\n", " USD\n", "%\n"]),
    }[kind]
    docs = []
    for d in range(6):
        text = "".join(pieces() for _ in range(900))
        docs.append(text.rstrip("\n") if d % 2 else text)  # some documents end without a newline
    return Corpus.from_texts(docs, titles=[f"{kind} report {i}" for i in range(len(docs))])


QUESTIONS = [
    Question(text="Which company grew fastest?"),
    Question(text="Wie hoch war der Umsatz 2024 in €?", instruction="Antworte mit einer Zahl."),
    Question(text="鼹鼠的收入是多少？"),
    Question(text="   leading spaces and {braces} and a long tail " + "x" * 300),
    Question(text="\n\nstarts with newlines\n"),
]


def _reference(corpus: Corpus, question: Question, tok) -> str:
    prompt = fill(FULL_CONTEXT_TEMPLATE, format_documents(corpus.documents), question)
    text, truncated = truncate_prompt(prompt, BUDGET, tok.encode, tok.decode)
    assert truncated
    return text


def _tokenizers():
    yield "cl100k", tiktoken_tokenizer("cl100k_base")
    # a Hugging Face tokenizer with another pre-tokenizer (WordPiece, the packaged MiniLM's)
    yield "hf-wordpiece", hf_tokenizer(str(offline_minilm_path()))


@pytest.fixture(scope="module")
def embedded_tokenizer():
    """The embedded SmolLM2's own BPE (llama.cpp), the model the library runs by default."""
    from agents.chat_models import EmbeddedChatModel

    llm = EmbeddedChatModel()

    class Tok:
        encode = staticmethod(llm.tokenize)
        decode = staticmethod(llm.detokenize)

    return Tok()


@pytest.mark.parametrize("kind", ["prose", "unicode", "spaces", "numbers"])
@pytest.mark.parametrize("name,tok", list(_tokenizers()))
def test_the_stitched_tail_equals_truncating_the_whole_prompt(kind, name, tok):
    corpus = _corpus(kind, seed=hash((kind, name)) % 1000)
    for q in QUESTIONS:
        text, truncated = fc.truncate_our_prompt(corpus, q, BUDGET, tok.encode, tok.decode, f"test:{name}")
        assert truncated and text == _reference(corpus, q, tok), (kind, q.text)


@pytest.mark.parametrize("kind", ["prose", "unicode"])
def test_the_stitched_tail_equals_the_exact_cut_with_the_embedded_models_bpe(kind, embedded_tokenizer):
    corpus = _corpus(kind, seed=7)
    for q in QUESTIONS:
        text, _ = fc.truncate_our_prompt(corpus, q, BUDGET, embedded_tokenizer.encode, embedded_tokenizer.decode, "test:embedded")
        assert text == _reference(corpus, q, embedded_tokenizer), (kind, q.text)


def test_later_questions_tokenize_only_the_stretch_after_the_anchor():
    tok = tiktoken_tokenizer("cl100k_base")
    corpus = _corpus("prose", seed=1)
    sizes: list[list[int]] = []
    for q in QUESTIONS[:3]:
        seen: list[int] = []
        sizes.append(seen)

        def encode(text: str, seen=seen) -> list[int]:
            seen.append(len(text))
            return tok.encode(text)

        text, _ = fc.truncate_our_prompt(corpus, q, BUDGET, encode, tok.decode, "test:sizes")
        assert text == _reference(corpus, q, tok)
    anchor = fc._TAILS[(corpus.fingerprint, "test:sizes", BUDGET)]
    assert anchor is not None and anchor.verified
    for seen, q in zip(sizes[1:], QUESTIONS[1:3]):  # after the first question: one short encode each
        assert len(seen) == 1 and seen[0] <= fc.ANCHOR_MAX_CHARS + len(fc._question_tail(q))


def test_a_tokenizer_that_does_not_stitch_falls_back_to_the_exact_cut():
    """An encoder that adds a marker at the start of every text (as SentencePiece's dummy prefix
    space does) tokenizes the anchor's stretch differently alone: no anchor, the exact method."""
    base = tiktoken_tokenizer("cl100k_base")
    marker = base.encode("§")

    class Prefixed:
        @staticmethod
        def encode(text: str) -> list[int]:
            return marker + base.encode(text)

        @staticmethod
        def decode(ids: list[int]) -> str:
            return base.decode(ids)

    corpus = _corpus("prose", seed=3)
    for q in QUESTIONS[:2]:
        text, _ = fc.truncate_our_prompt(corpus, q, BUDGET, Prefixed.encode, Prefixed.decode, "test:prefixed")
        assert text == _reference(corpus, q, Prefixed)
    assert fc._TAILS[(corpus.fingerprint, "test:prefixed", BUDGET)] is None
