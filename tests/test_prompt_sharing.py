"""Which strategies' prompts start with text every question over one corpus shares (issue #40 item 2):
declared on the registry entry, checked against the requests a real run sends, and said by the run plan."""

from __future__ import annotations

import pytest

from agents import answer_many
from agents.chat_models import make_chat_model
from agents.run_plan import describe_plan, estimate
from graphs.prompt_sharing import PromptSharing, shared_prompt_tokens
from graphs.registry import STRATEGIES
from retrieval import Corpus
from tests.recording_server import RecordingServer, prompt_of

TOPICS = ["river", "museum", "orchestra", "harbour", "library", "bridge", "market", "garden"]
DOCS = [" ".join(f"The {t} fact number {i} says the {t} holds {i * 3} {t} items." for i in range(20)) for t in TOPICS]


def shared_words(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split(), b.split()):
        if x != y:
            break
        n += 1
    return n


@pytest.mark.parametrize(("strategy", "options"), [("full_context", {}), ("rag", {"top_k": 2}), ("memagent", {"resume": False, "chunk_tokens": 400})])
def test_the_declaration_matches_the_requests_two_questions_send(strategy, options):
    """Questions about two different topics over one 8-document corpus: the longest start any call of
    the second shares with any call of the first is the corpus for a strategy that declares it, and
    a fraction of one document for those that do not."""
    corpus = Corpus.from_texts(DOCS, titles=TOPICS)
    questions = ["How many river items does the river hold?", "How many garden items does the garden hold?"]
    with RecordingServer(lambda request: "The answer is: 3") as server:
        llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
        answer_many(corpus, questions[:1], strategy=strategy, llm=llm, concurrency=1, **options)
        split = len(server.requests)  # one question at a time, so the requests of each are known
        answer_many(corpus, questions[1:], strategy=strategy, llm=llm, concurrency=1, **options)
    prompts = [prompt_of(r) for r in server.requests]
    first, second = prompts[:split], prompts[split:]
    longest = max(shared_words(a, b) for a in first for b in second)
    corpus_words = sum(len(d.split()) for d in DOCS)
    if STRATEGIES.get(strategy).prompt_sharing is not None:
        assert longest >= corpus_words
    else:
        assert longest < len(DOCS[0].split()) / 2


def test_every_built_in_strategy_declares_its_sharing_or_none():
    declared = {name: STRATEGIES.get(name).prompt_sharing for name in STRATEGIES.names()}
    assert isinstance(declared["full_context"], PromptSharing)
    assert declared["memagent"] is None  # the question comes before every chunk (the paper's order)
    self_route = STRATEGIES.get("self_route")
    assert self_route.prompt_sharing is not None
    assert self_route.prompt_sharing.share(self_route.make_config()) == pytest.approx(0.5)  # the declined half falls back to full context
    assert self_route.prompt_sharing.share(self_route.make_config(preset="beyond-window")) == 0.0  # memagent fallback


@pytest.mark.parametrize(("questions", "expected"), [(0, 0.0), (1, 0.0), (3, 2 * 6_000), (20, 19 * 6_000), (10_000, 9_999 * 6_000)])
def test_questions_after_the_first_read_the_corpus_from_the_cache(questions, expected):
    assert shared_prompt_tokens(PromptSharing("the corpus"), None, 6_000, questions, 6_300) == expected
    assert shared_prompt_tokens(None, None, 6_000, questions, 6_300) == 0.0
    # a corpus beyond the window: what each prompt holds of it
    assert shared_prompt_tokens(PromptSharing("the corpus"), None, 60_000, questions, 7_900) == pytest.approx(expected / 6_000 * 7_900)


def test_the_plan_says_which_strategies_can_profit_and_by_how_much():
    plans = [estimate(name, STRATEGIES.get(name).make_config(), 6_000, 3, 20, 8_192) for name in ("full_context", "self_route", "memagent", "rag")]
    by_name = {p.strategy: p for p in plans}
    assert by_name["full_context"].shared_prompt_tokens == pytest.approx(19 * 6_000)
    assert 0 < by_name["self_route"].shared_prompt_tokens < by_name["full_context"].shared_prompt_tokens
    assert by_name["memagent"].shared_prompt_tokens == 0 == by_name["rag"].shared_prompt_tokens
    text = describe_plan(plans, "gpt-4o-mini", None)
    share = round(100 * 19 * 6_000 / by_name["full_context"].prompt_tokens)
    assert f"~114,000 of its prompt tokens ({share}%) can be read from the cache" in text
    assert "memagent, rag: prompts start with what differs per question" in text
    one = describe_plan([estimate("full_context", STRATEGIES.get("full_context").make_config(), 6_000, 3, 1, 8_192)], "m", None)
    assert "cache" not in one  # one question: nothing to share
