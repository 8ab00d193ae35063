"""full_context's per-question cut, stitched onto the corpus's cached tokens, equals the official
rule applied to the whole prompt's tokens (``graphs/full_context/prepared.py``).

The reference tokenizes the whole filled prompt and middle-truncates its ids (LongBench's
``ids[:half] + ids[-half:]``, each half decoded); the strategy tokenizes the corpus once and
per question only a short stretch plus the question's suffix. Compared over random corpora
(words, unicode, whitespace runs, digit runs, separators, very short texts, texts shorter
and far longer than the budget), questions and budgets, in tiktoken's cl100k and in Hugging
Face tokenizers (a byte-level BPE and a SentencePiece-style BPE trained here, the MiniLM
WordPiece and the one-token-per-character tokenizer the other tests use).
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from longctx.graphs.full_context import FULL_CONTEXT_TEMPLATE, truncate_prompt
from longctx.graphs.full_context.prepared import (
    STITCH_CHARS,
    clear_prepared,
    prepare_context,
    prepared_context,
    question_suffix,
    truncate_our_prompt,
)
from longctx.graphs.prompts import fill, format_documents
from longctx.retrieval import Corpus, middle_truncate
from longctx.retrieval.contract import Question
from longctx.retrieval.tokenizers import Tokenizer, hf_tokenizer, tiktoken_tokenizer

# -- tokenizers ------------------------------------------------------------------------------

TRAINING_TEXT = [
    "Revenue rose 12.5% to $1,234.56 million in 2023; the board's note (see p. 7) said so.",
    "The quick brown fox jumps over the lazy dog. Naïve café résumé — déjà vu!",
    "鼹鼠饕餮魑魅，问题：艾达出生在哪里？回答：伦敦。",
    "def f(x):\n    return x ** 2  # squares\n\n\tindented\ttabs",
    "==== ---- **** //// <text> </text> Question: Document 1: Title",
]


def _trained(path, kind: str) -> str:
    """A small BPE trained on ``TRAINING_TEXT``, saved as a local Hugging Face tokenizer folder."""
    from tokenizers import Tokenizer as RawTokenizer
    from tokenizers import decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if kind == "bytelevel":  # GPT-2 style: regex pre-tokenizer over bytes
        tok = RawTokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    else:  # SentencePiece style: spaces become "▁", a "▁" prepended to the text's first word
        tok = RawTokenizer(models.BPE(unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first")
        alphabet = sorted(set("".join(TRAINING_TEXT)))
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=alphabet, special_tokens=["<unk>"], show_progress=False
    )
    tok.train_from_iterator(TRAINING_TEXT * 20, trainer)
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(str(path))
    return str(path)


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory) -> dict[str, Tokenizer]:
    from longctx.retrieval.embedders import offline_minilm_path
    from tests.test_tokenizers import char_vocab_tokenizer

    return {
        "cl100k": tiktoken_tokenizer("cl100k_base"),
        "bytelevel-bpe": hf_tokenizer(_trained(tmp_path_factory.mktemp("bytelevel"), "bytelevel")),
        "metaspace-bpe": hf_tokenizer(_trained(tmp_path_factory.mktemp("metaspace"), "metaspace")),
        "minilm-wordpiece": hf_tokenizer(str(offline_minilm_path())),
        "chars": hf_tokenizer(char_vocab_tokenizer(tmp_path_factory.mktemp("chars"))),
    }


# -- the reference: tokenize everything, cut by the official rule ------------------------------


def reference_cut(prompt: str, budget: int, tok: Tokenizer) -> tuple[str, bool]:
    ids = tok.encode(prompt)
    if len(ids) <= budget:
        return prompt, False
    kept = middle_truncate(ids, budget)
    half = len(kept) // 2
    return tok.decode(kept[:half]) + tok.decode(kept[half:]), True


# -- random corpora and questions --------------------------------------------------------------

PIECES = {
    "words": lambda r: (
        " ".join(
            r.choice(
                ["revenue", "the", "Q3", "board's", "naïve", "fox", "I'll", "x" * r.randint(1, 40)]
            )
            for _ in range(r.randint(1, 12))
        )
        + r.choice([". ", ", ", "; ", "\n"])
    ),
    "unicode": lambda r: r.choice(
        [
            "鼹鼠饕餮",
            "魑魅。",
            "Ωμέγα ",
            "résumé ",
            "🙂🚀",
            "e\u0301",
            "עברית ",
            "𝔘𝔫𝔦 ",
            "\u200b",
            "ß",
        ]
    ),
    "whitespace": lambda r: (
        r.choice([" ", "\t", "\n", "\r\n", "\u3000", "\xa0"]) * r.choice([1, 2, 3, 7, 40, 300])
        + r.choice(["a", "1", ".", ""])
    ),
    "numbers": lambda r: (
        "".join(r.choice("0123456789") for _ in range(r.choice([1, 2, 3, 4, 7, 50, 400])))
        + r.choice([" ", ",", ".", "", "\n"])
    ),
    "separators": lambda r: (
        r.choice(["=", "-", "*", "/", "<", ">", "|"]) * r.choice([1, 3, 30, 200])
        + r.choice([" revenue ", "\n", ""])
    ),
}


def random_text(rng: random.Random, chars: int) -> str:
    kinds = rng.sample(sorted(PIECES), rng.randint(1, len(PIECES)))
    out: list[str] = []
    size = 0
    while size < chars:
        piece = PIECES[rng.choice(kinds)](rng)
        out.append(piece)
        size += len(piece)
    return "".join(out)[:chars] or "a"


def random_corpus(rng: random.Random) -> Corpus:
    size = rng.choice([1, 2, 5, 40, 300, 2_000, 8_000, 30_000])
    n = rng.randint(1, 4)
    texts = [random_text(rng, max(1, size // n)) for _ in range(n)]
    texts = [t if t.strip() else "a" for t in texts]
    return Corpus.from_texts(
        texts, titles=[rng.choice(["Title", "鼹鼠", "  spaced  ", "T{1}", "12"]) for _ in texts]
    )


QUESTIONS = [
    Question(text="Which {braces} stay?"),
    Question(text="  leading and trailing spaces  "),
    Question(text="\n\nstarts with newlines"),
    Question(text="12345 starts with digits"),
    Question(text="鼹鼠在哪里？"),
    Question(text="...punctuation first?"),
    Question(text="🙂 emoji first"),
    Question(text="q2 " * 300, instruction="Answer with a number."),
    Question(
        text="Which one?",
        choices={"A": "lion", "B": "zebra  "},
        instruction='Reply "The answer is (X)".',
    ),
    Question(text="=" * 50),
]

BUDGETS = [16, 33, 100, 257, 1000, 4096]


def whole_prompt(corpus: Corpus, question: Question) -> str:
    return fill(FULL_CONTEXT_TEMPLATE, format_documents(corpus.documents), question)


# -- the table: stitched cut == whole-prompt cut -------------------------------------------------


def check_cut(
    got: tuple[str, bool], prompt: str, budget: int, tok: Tokenizer, stitched: bool
) -> bool:
    """``got`` is the whole prompt's cut; returns whether that is also what the exact path
    (:func:`truncate_prompt`, the method the stitch replaces) gives.

    The exact path tokenizes only the ends of a prompt beyond ``32 x budget`` characters,
    assuming at most 16 characters a token and BPE words far shorter than its margin; a
    tokenizer that drops whitespace (WordPiece) or BPE over one 2,000-character word (2,000
    "x" in cl100k, a run of newlines in the SentencePiece-style BPE) breaks that, and the
    exact path differs from the whole prompt's cut. There the stitched cut must still be
    the whole prompt's, and an unstitched one the exact path's (as before the stitch)."""
    exact = truncate_prompt(prompt, budget, tok.encode, tok.decode)
    reference = reference_cut(prompt, budget, tok)
    if stitched or exact == reference:
        assert got == reference
    else:
        assert got == exact
    return exact == reference


@pytest.mark.parametrize(
    "name", ["cl100k", "bytelevel-bpe", "metaspace-bpe", "minilm-wordpiece", "chars"]
)
def test_the_stitched_cut_equals_cutting_the_whole_prompts_tokens(tokenizers, name):
    tok = tokenizers[name]
    rng = random.Random(f"stitch-{name}")
    clear_prepared()
    cases = stitched = truncated = untruncated = exact_differs = 0
    for _ in range(30):
        corpus = random_corpus(rng)
        budget = rng.choice(BUDGETS)
        for q in rng.sample(QUESTIONS, 3):
            got = truncate_our_prompt(corpus, q, budget, tok.encode, tok.decode, tok.id)
            prep = prepared_context(corpus, budget, tok.encode, tok.decode, tok.id)
            used = prep.stitched(question_suffix(q), tok.encode) is not None
            exact_differs += not check_cut(got, whole_prompt(corpus, q), budget, tok, used)
            cases, stitched, truncated, untruncated = (
                cases + 1,
                stitched + used,
                truncated + got[1],
                untruncated + (not got[1]),
            )
    assert truncated >= 20 and untruncated >= 5  # both sides of the budget were compared
    if name in (
        "cl100k",
        "bytelevel-bpe",
    ):  # real BPE tokenizers: every cut is the whole prompt's, nearly all stitched
        assert exact_differs == 0 and stitched >= 0.9 * cases, (exact_differs, stitched, cases)
    if (
        name == "minilm-wordpiece"
    ):  # lower-cases, so decoding does not give the text back: the exact path always
        assert stitched == 0


@pytest.mark.parametrize("name", ["cl100k", "bytelevel-bpe"])
def test_the_stitched_tokens_are_the_whole_prompts_tokens(tokenizers, name):
    """Not only the decoded cut: the token list itself, for contexts within the budget's
    character bound (whose tokens are all cached)."""
    tok = tokenizers[name]
    rng = random.Random(f"ids-{name}")
    for _ in range(40):
        corpus = random_corpus(rng)
        context = whole_prompt(corpus, Question(text="x"))[
            : -len(question_suffix(Question(text="x")))
        ]
        prep = prepare_context(context, 10**9, tok.encode, tok.decode)
        assert prep.total == len(tok.encode(context))
        for q in rng.sample(QUESTIONS, 3):
            suffix = question_suffix(q)
            fresh = prep.stitched(suffix, tok.encode)
            assert fresh is not None
            assert prep.ids[: len(prep.ids) - prep.stretch] + fresh == tok.encode(context + suffix)


#: Contexts ending in a long run of one kind of character, and suffixes that continue the run
#: or not.
RUNS = [
    "x" * 2000,
    " " * 2000,
    "\n" * 2000,
    "\t \n" * 700,
    "1" * 2000,
    "1234567" * 300,
    "=" * 2000,
    "é" * 2000,
    "鼹" * 2000,
    "🙂" * 1000,
    "e\u0301" * 1000,
    "word " * 400,
    "\r\n" * 1000,
]
SUFFIXES = [
    "",
    "y",
    "yyy tail",
    " word",
    "\n",
    "\n\nQ",
    "  ",
    "234",
    "9",
    "==",
    "鼹鼠",
    "🙂",
    "\u0301",
    "\r",
    "'s",
]


@pytest.mark.parametrize("name", ["cl100k", "bytelevel-bpe", "metaspace-bpe"])
def test_contexts_ending_in_long_runs_stitch_exactly_or_take_the_exact_path(tokenizers, name):
    tok = tokenizers[name]
    rng = random.Random(f"runs-{name}")
    for run in RUNS:
        context = random_text(rng, 300) + run
        for budget in (64, 700, 100_000):  # far beyond (the ends only), beyond, within the budget
            prep = prepare_context(context, budget, tok.encode, tok.decode)
            for suffix in SUFFIXES:
                got = prep.cut(suffix, tok.encode, tok.decode)
                check_cut(
                    got,
                    context + suffix,
                    budget,
                    tok,
                    prep.stitched(suffix, tok.encode) is not None,
                )


# -- the checks that send a question to the exact path -----------------------------------------


def _codes(text: str) -> list[int]:
    return [ord(c) for c in text]


def _chars(ids: list[int]) -> str:
    return "".join("a" if i == 1000 else chr(i) for i in ids)


def test_a_suffix_that_changes_tokens_far_back_takes_the_exact_path():
    # a tokenizer where a final "!" re-tokenizes every "a" in the text: not local at all
    def encode(text: str) -> list[int]:
        return [1000 if c == "a" and text.endswith("!") else ord(c) for c in text]

    context = "banana " * 400
    prep = prepare_context(context, 100, encode, _chars)
    assert (
        prep.stretch and prep.stitched("?", encode) is not None
    )  # the stitch is checked, and holds...
    assert prep.stitched("!", encode) is None  # ...and is refused when the suffix reached back
    for suffix in ("?", "!", "a!"):
        ids = encode(context + suffix)
        kept = middle_truncate(ids, 100)
        assert prep.cut(suffix, encode, _chars) == (_chars(kept[:50]) + _chars(kept[50:]), True)


def test_a_tokenizer_that_does_not_restart_cleanly_never_stitches():
    # a start-of-text marker (as a BOS): the stretch alone never gives its cached tokens
    def encode(text: str) -> list[int]:
        return [0, *_codes(text)]

    def decode(ids: list[int]) -> str:
        return "".join(chr(i) for i in ids if i)

    context = "word " * 2000
    prep = prepare_context(context, 100, encode, decode)
    assert prep.stretch == 0 and prep.stitched("q", encode) is None
    kept = middle_truncate(encode(context + "q"), 100)
    assert prep.cut("q", encode, decode) == (decode(kept[:50]) + decode(kept[50:]), True)


# -- what a question costs once the corpus is prepared -------------------------------------------


def test_later_questions_tokenize_only_a_short_stretch_and_prepare_once_when_concurrent(
    tokenizers,
):
    tok = tokenizers["cl100k"]
    rng = random.Random(7)
    corpus = Corpus.from_texts([random_text(rng, 200_000) for _ in range(3)])
    budget = 4_000
    clear_prepared()
    sizes: list[int] = []
    lock = threading.Lock()

    def encode(text: str) -> list[int]:
        with lock:
            sizes.append(len(text))
        return tok.encode(text)

    prepared_context(corpus, budget, encode, tok.decode, tok.id)
    once = [
        s for s in sizes if s > STITCH_CHARS + 2_000
    ]  # the head and the end of the context (each grown once here)
    assert once and sum(once) < 0.3 * len(whole_prompt(corpus, QUESTIONS[0]))
    clear_prepared()
    sizes.clear()
    with ThreadPoolExecutor(
        8
    ) as pool:  # eight questions at once: one preparation, the others wait for it
        got = list(
            pool.map(
                lambda q: truncate_our_prompt(corpus, q, budget, encode, tok.decode, tok.id),
                QUESTIONS[:8],
            )
        )
    for q, cut in zip(QUESTIONS[:8], got):
        assert cut == reference_cut(whole_prompt(corpus, q), budget, tok)
    assert [s for s in sizes if s > STITCH_CHARS + 2_000] == once
    sizes.clear()
    for q in QUESTIONS[:8]:
        truncate_our_prompt(corpus, q, budget, encode, tok.decode, tok.id)
    assert sizes == [
        len(prepared_context(corpus, budget, tok.encode, tok.decode, tok.id).stretch_text)
        + len(question_suffix(q))
        for q in QUESTIONS[:8]
    ]


@pytest.fixture(scope="module")
def embedded_bpe():
    """The embedded SmolLM2's own byte-level BPE (llama.cpp), the library's default model."""
    from longctx.agents.chat_models import EmbeddedChatModel

    llm = EmbeddedChatModel()
    return llm.tokenize, llm.detokenize


@pytest.mark.parametrize(
    "text",
    [
        "Revenue grew 12.5% in FY2024 at Acme Ltd.\n" * 3000,
        "".join(
            ["naïve café 鼹鼠饕餮 Zürich – 東京 🚀\n", "   \n\n", "1,234,567.89 USD\n"][i % 3]
            for i in range(6000)
        ),
    ],
)
def test_the_stitched_cut_equals_the_exact_cut_with_the_embedded_models_bpe(text, embedded_bpe):
    from longctx.graphs.full_context import FULL_CONTEXT_TEMPLATE, truncate_prompt
    from longctx.graphs.full_context.prepared import clear_prepared, truncate_our_prompt
    from longctx.graphs.prompts import fill, format_documents
    from longctx.retrieval import Corpus
    from longctx.retrieval.contract import Question

    encode, decode = embedded_bpe
    clear_prepared()
    corpus = Corpus.from_texts([text, text[::-1]], titles=["A", "B"])
    for q in [
        Question(text="Which company grew fastest?"),
        Question(text="鼹鼠的收入是多少？", instruction="Answer with a number."),
        Question(text="\n\n x"),
    ]:
        got = truncate_our_prompt(corpus, q, 2_000, encode, decode, "test:embedded")
        prompt = fill(FULL_CONTEXT_TEMPLATE, format_documents(corpus.documents), q)
        assert got == truncate_prompt(prompt, 2_000, encode, decode), q.text
