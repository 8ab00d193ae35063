"""Fixes found by running every strategy over a 10M-token corpus
(``benchmarks/bench_scale.py``, docs/scale.md)."""

from __future__ import annotations

from longctx.retrieval.tokenizers import Tokenizer, clean_cut, decode_prefix, split_ids


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
    tok = Tokenizer(
        id="chars",
        encode_fn=lambda t: [ord(c) for c in t],
        decode_fn=lambda ids: "".join(map(chr, ids)),
    )
    text = "abcdefghij" * 5_000
    windows = split_ids(text, 1_000, tok)
    assert "".join(w for w, _ in windows) == text
    assert [n for _, n in windows] == [1_000] * 50


# -- MemAgent's checkpoint storage stays bounded while a long run goes on --------------------


def _checkpoint_rows_now(cache) -> int:
    from longctx.memory import CHECKPOINTS_FILE
    from longctx.memory.checkpoints import checkpoint_rows

    dbs = list((cache / "memagent").glob(f"*/{CHECKPOINTS_FILE}"))
    return checkpoint_rows(dbs[0]) if dbs else 0


def test_a_long_memagent_run_keeps_few_checkpoints_while_it_runs(isolated_cache):
    from longctx import answer
    from longctx.graphs.runtime.batched import PRUNE_EVERY_CHUNKS
    from tests.scripted import ScriptedChatModel
    from tests.test_memagent import corpus_of, echo_model

    echo = echo_model()
    seen: list[int] = []

    def reply(prompt: str) -> str:
        seen.append(_checkpoint_rows_now(isolated_cache))
        return echo.reply_fn(prompt)

    corpus = corpus_of(
        [24_000]
    )  # ~240 chunks of 100 tokens: ~2 checkpoints a chunk without pruning
    result = answer(
        corpus,
        "q",
        strategy="memagent",
        llm=ScriptedChatModel(reply_fn=reply),
        chunk_tokens=100,
        show_progress=False,
    )
    chunks = result.steps[-1]["chunks"]
    assert chunks > 4 * PRUNE_EVERY_CHUNKS and result.answer == "42"
    assert (
        max(seen) <= 2 * PRUNE_EVERY_CHUNKS + 5 < chunks
    )  # bounded by the pruning period, not the corpus


def test_a_run_pruned_while_running_resumes_where_it_stopped(isolated_cache):
    from longctx import answer
    from longctx.graphs.runtime.batched import PRUNE_EVERY_CHUNKS
    from tests.test_memagent import (
        Crash,
        corpus_of,
        crashing_model,
        echo_model,
        memory_in,
        section_in,
    )

    corpus = corpus_of([24_000])
    crash_at = 2 * PRUNE_EVERY_CHUNKS + 20  # after two in-run prunes
    first = crashing_model(crash_at=crash_at)
    try:
        answer(corpus, "q", strategy="memagent", llm=first, chunk_tokens=100, show_progress=False)
    except Crash:
        pass
    else:
        raise AssertionError("the scripted model should have crashed")
    second = echo_model()
    result = answer(
        corpus, "q", strategy="memagent", llm=second, chunk_tokens=100, show_progress=False
    )
    n = result.steps[-1]["chunks"]
    assert result.steps[-1]["resumed_from"] == crash_at - 1
    assert (
        len(second.calls) == n + 1 - (crash_at - 1)
        and result.usage.run_llm_calls == n + 1
        and result.usage.llm_calls == len(second.calls)
    )
    assert (
        memory_in(second.calls[0]["prompt"])
        == f"mem after {section_in(first.calls[crash_at - 2]['prompt'])[:20]}"
    )
    assert [s["chunk"] for s in result.steps if s["node"] == "update_memory"] == list(range(n))


# -- full context: only as much of a huge prompt's ends is tokenized as the window keeps -----


def _texts() -> dict[str, str]:
    import random

    rng = random.Random(0)
    words = " ".join(f"word{rng.randint(0, 10**6)}" for _ in range(40_000))
    mixed = "".join(
        rng.choice(
            ["Revenue 12,345.6 million. ", "鼹鼠饕餮魑魅。", "   \n\n", "naïve café ", "x" * 37]
        )
        for _ in range(20_000)
    )
    dense = (
        "=" * 30 + " revenue "
    ) * 20_000  # ~13 characters a token: the first slice is too short and grows
    return {"words": words, "mixed": mixed, "dense": dense}


def test_truncating_a_huge_prompt_tokenizes_a_bit_more_than_it_keeps_and_equals_cutting_all():
    from longctx.graphs.full_context import truncate_prompt, truncation_cut
    from longctx.graphs.full_context.graph import CHARS_PER_TOKEN_BOUND
    from longctx.retrieval import middle_truncate
    from longctx.retrieval.tokenizers import tiktoken_tokenizer

    tok = tiktoken_tokenizer("cl100k_base")
    budget = 4_000
    for name, prompt in _texts().items():
        assert len(prompt) > 2 * CHARS_PER_TOKEN_BOUND * budget, name  # the ends-only path
        encoded: list[int] = []

        def encode(text: str) -> list[int]:
            encoded.append(len(text))
            return tok.encode(text)

        text, truncated = truncate_prompt(prompt, budget, encode, tok.decode)
        kept = middle_truncate(tok.encode(prompt), budget)
        assert truncated and text == tok.decode(kept[: budget // 2]) + tok.decode(
            kept[budget // 2 :]
        ), name
        head, tail = truncation_cut(prompt, budget, tok.encode, tok.decode)
        assert text == prompt[:head] + prompt[len(prompt) - tail :], name
        if (
            name == "words"
        ):  # ~3 tokens a word: the first slice per end is enough, less than the bound
            assert len(encoded) == 2 and sum(encoded) < 2 * CHARS_PER_TOKEN_BOUND * budget * 0.6
        if name == "dense":  # the first slice held too few tokens: it grew
            assert len(encoded) > 2


def test_questions_over_one_huge_corpus_share_its_tokenized_head_and_get_the_same_prompt():
    from longctx.graphs.full_context import FULL_CONTEXT_TEMPLATE, truncate_prompt
    from longctx.graphs.full_context.graph import truncate_our_prompt
    from longctx.graphs.full_context.prepared import (
        clear_prepared,
        prepared_context,
        question_suffix,
    )
    from longctx.graphs.prompts import fill, format_documents
    from longctx.retrieval import Corpus
    from longctx.retrieval.contract import Question
    from longctx.retrieval.tokenizers import tiktoken_tokenizer

    tok = tiktoken_tokenizer("cl100k_base")
    texts = _texts()
    corpus = Corpus.from_texts([texts["words"], texts["mixed"]], titles=["Words", "Mixed"])
    budget = 4_000
    questions = [
        Question(text="Which {braces} stay?"),
        Question(text="q2 " * 300, instruction="Answer with a number."),
    ]
    encoded: list[list[int]] = []
    clear_prepared()
    for q in questions:
        sizes: list[int] = []
        encoded.append(sizes)

        def encode(text: str, sizes=sizes) -> list[int]:
            sizes.append(len(text))
            return tok.encode(text)

        text, truncated = truncate_our_prompt(
            corpus, q, budget, encode, tok.decode, "tiktoken:cl100k_base"
        )
        prompt = fill(FULL_CONTEXT_TEMPLATE, format_documents(corpus.documents), q)
        assert truncated and (text, True) == truncate_prompt(prompt, budget, tok.encode, tok.decode)
    # the first question prepares the corpus (its head, its end, a check of the stretch) and
    # encodes the stretch with its suffix; the second encodes only that: ~500 characters and its
    # own text
    stretch = prepared_context(
        corpus, budget, tok.encode, tok.decode, "tiktoken:cl100k_base"
    ).stretch_text
    assert len(encoded[0]) == 4 and encoded[1] == [
        len(stretch) + len(question_suffix(questions[1]))
    ]
