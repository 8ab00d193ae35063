"""Which strategies' prompts start with text every question over one corpus shares (issue #40 item
2): declared on the registry entry, checked against the requests a real run sends, and said by the
run plan."""

from __future__ import annotations

import pytest

from longctx import answer_many
from longctx.agents.chat_models import make_chat_model
from longctx.agents.run_plan import describe_plan, estimate
from longctx.graphs.calls.prompt_sharing import PromptSharing, shared_prompt_tokens
from longctx.graphs.plugin.registry import STRATEGIES
from longctx.retrieval import Corpus
from tests.recording_server import RecordingServer, prompt_of, shared_words

TOPICS = ["river", "museum", "orchestra", "harbour", "library", "bridge", "market", "garden"]
DOCS = [
    " ".join(f"The {t} fact number {i} says the {t} holds {i * 3} {t} items." for i in range(20))
    for t in TOPICS
]


@pytest.mark.parametrize(
    ("strategy", "options"),
    [
        ("full_context", {}),
        ("rag", {"top_k": 2}),
        ("memagent", {"resume": False, "chunk_tokens": 400}),
    ],
)
def test_the_declaration_matches_the_requests_two_questions_send(strategy, options):
    """Questions about two different topics over one 8-document corpus: the longest start any call
    of the second shares with any call of the first is the corpus for a strategy that declares it,
    and a fraction of one document for those that do not."""
    corpus = Corpus.from_texts(DOCS, titles=TOPICS)
    questions = [
        "How many river items does the river hold?",
        "How many garden items does the garden hold?",
    ]
    with RecordingServer(lambda request: "The answer is: 3") as server:
        llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
        answer_many(corpus, questions[:1], strategy=strategy, llm=llm, concurrency=1, **options)
        split = len(server.requests)  # one question at a time, so the requests of each are known
        answer_many(corpus, questions[1:], strategy=strategy, llm=llm, concurrency=1, **options)
    prompts = [prompt_of(r) for r in server.requests]
    first, second = prompts[:split], prompts[split:]
    longest = max(shared_words(a.split(), b.split()) for a in first for b in second)
    corpus_words = sum(len(d.split()) for d in DOCS)
    spec = STRATEGIES.get(strategy)
    if (
        spec.prompt_sharing is not None
        and spec.prompt_sharing.share(spec.make_config(**options)) > 0
    ):
        assert longest >= corpus_words
    else:
        assert longest < len(DOCS[0].split()) / 2


def test_every_built_in_strategy_declares_its_sharing_or_none():
    declared = {name: STRATEGIES.get(name).prompt_sharing for name in STRATEGIES.names()}
    assert isinstance(declared["full_context"], PromptSharing)
    assert declared["memagent"] is None  # the question comes before every chunk (the paper's order)
    self_route = STRATEGIES.get("self_route")
    assert self_route.prompt_sharing is not None
    assert self_route.prompt_sharing.share(self_route.make_config()) == pytest.approx(
        0.5
    )  # the declined half falls back to full context
    assert (
        self_route.prompt_sharing.share(self_route.make_config(preset="beyond-window")) == 0.0
    )  # memagent fallback
    pai = STRATEGIES.get("pai")
    assert (
        pai.prompt_sharing is not None and pai.prompt_sharing.share(pai.make_config()) == 0.0
    )  # the paper's order: sub-question first
    assert pai.prompt_sharing.share(pai.make_config(**pai.prompt_sharing.options)) == 1.0


@pytest.mark.parametrize(
    ("questions", "expected"),
    [(0, 0.0), (1, 0.0), (3, 2 * 6_000), (20, 19 * 6_000), (10_000, 9_999 * 6_000)],
)
def test_questions_after_the_first_read_the_corpus_from_the_cache(questions, expected):
    assert (
        shared_prompt_tokens(PromptSharing("the corpus"), None, 6_000, questions, 6_300) == expected
    )
    assert shared_prompt_tokens(None, None, 6_000, questions, 6_300) == 0.0
    # a corpus beyond the window: what each prompt holds of it
    assert shared_prompt_tokens(
        PromptSharing("the corpus"), None, 60_000, questions, 7_900
    ) == pytest.approx(expected / 6_000 * 7_900)


def test_the_plan_says_which_strategies_can_profit_and_by_how_much():
    plans = [
        estimate(name, STRATEGIES.get(name).make_config(), 6_000, 3, 20, 8_192)
        for name in ("full_context", "self_route", "memagent", "rag")
    ]
    by_name = {p.strategy: p for p in plans}
    assert by_name["full_context"].shared_prompt_tokens == pytest.approx(19 * 6_000)
    assert (
        0
        < by_name["self_route"].shared_prompt_tokens
        < by_name["full_context"].shared_prompt_tokens
    )
    assert by_name["memagent"].shared_prompt_tokens == 0 == by_name["rag"].shared_prompt_tokens
    text = describe_plan(plans, "gpt-4o-mini", None)
    share = round(100 * 19 * 6_000 / by_name["full_context"].prompt_tokens)
    assert f"~114,000 of its prompt tokens ({share}%) can be read from the cache" in text
    assert "memagent, rag: prompts start with what differs per question" in text
    one = describe_plan(
        [
            estimate(
                "full_context", STRATEGIES.get("full_context").make_config(), 6_000, 3, 1, 8_192
            )
        ],
        "m",
        None,
    )
    assert "cache" not in one  # one question: nothing to share


def pai_world(request: dict) -> str:
    """PAI's calls in JSON mode: one property per topic the question names, every chunk kept,
    short answers."""
    prompt = prompt_of(request)
    if prompt.startswith("Identify the key properties"):
        return (
            '{"items": ['
            + ", ".join(
                '{"metric": "item count", "subject": "the ' + t + '"}'
                for t in TOPICS
                if f"the {t} " in prompt
            )
            + "]}"
        )
    if "keep_context" in prompt:
        return '{"keep_context": true}'
    return "The answer is: 3"


@pytest.mark.parametrize("order", ["query_first", "chunk_first"])
def test_pai_chunk_first_judge_prompts_let_a_cache_serve_each_chunk_to_other_sub_questions(
    order,
):
    """One question naming two subjects, two one-chunk documents: each chunk is judged for both
    sub-questions. Chunk first, the second judge call of a chunk reads the whole chunk from the
    cache; query first (the paper's order), no judge call does."""
    corpus = Corpus.from_texts(DOCS[:2], titles=TOPICS[:2])
    question = "Does the river hold more items than the museum does?"
    with RecordingServer(pai_world, prompt_cache="openai", cache_size=64) as server:
        llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
        answer_many(
            corpus,
            [question],
            strategy="pai",
            llm=llm,
            concurrency=1,
            tool_mode="json",
            judge_mode="exhaustive",
            chunk_size=2_000,
            judge_order=order,
        )
    judges = [
        (prompt_of(r), cached)
        for r, cached in zip(server.requests, server.cached_tokens)
        if "keep_context" in prompt_of(r)
    ]
    assert len(judges) == 4  # 2 sub-questions x 2 chunks
    assert all(p.startswith('Context (from "') == (order == "chunk_first") for p, _ in judges)
    for doc in DOCS[:2]:
        cached = sorted(c for p, c in judges if doc in p)
        if order == "chunk_first":
            assert (
                cached[0] < len(doc.split()) <= cached[1]
            )  # read once, then served from the cache
        else:
            assert cached[1] < len(doc.split()) / 2


def test_own_corpora_get_the_shared_first_options_and_benchmarks_do_not():
    from longctx.experiments.runner import RunConfig

    own = RunConfig(benchmark="own", strategies=("pai", "full_context", "rag"))
    assert own.strategy_options == {"pai": {"judge_order": "chunk_first"}}
    assert RunConfig(
        benchmark="own",
        strategies=("pai",),
        strategy_options={"pai": {"judge_order": "query_first"}},
    ).strategy_options == {"pai": {"judge_order": "query_first"}}  # the user's choice wins
    assert RunConfig(
        benchmark="own", strategies=("pai",), strategy_options={"pai": {"preset": "paper"}}
    ).strategy_options == {"pai": {"preset": "paper"}}
    assert RunConfig(benchmark="synth", strategies=("pai",)).strategy_options == {}
    assert RunConfig(benchmark="loong", strategies=("pai", "pai_minus")).strategy_options == {}


def test_a_run_of_several_strategies_runs_a_strategys_questions_over_a_corpus_back_to_back(
    tmp_path,
):
    """On a server that keeps only the previous prompt (the embedded model, llama.cpp), full
    context's questions 2..N read the corpus from it only if no other strategy's call comes
    in between."""
    from longctx import Question
    from longctx.experiments.benchmarks import Sample
    from longctx.experiments.runner import RunConfig, read_rows, run_experiment

    corpus = Corpus.from_texts(DOCS[:2], titles=TOPICS[:2])
    samples = [
        Sample(
            sample_id=f"q{i}",
            benchmark="own",
            dataset="own",
            corpus=corpus,
            question=Question(text=f"How many river items, case {i}?"),
            answers=("3",),
            metadata={},
        )
        for i in range(3)
    ]
    with RecordingServer(lambda request: "The answer is: 3", prompt_cache="openai") as server:
        llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="own",
            strategies=("rag", "full_context"),
            llm_cache=False,
            concurrency=1,
            strategy_options={"rag": {"top_k": 1}},
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, samples=samples, show_progress=False)
    rows = {
        (r["strategy"], r["sample_id"]): r["usage"]["cached_prompt_tokens"]
        for r in read_rows(tmp_path / "run")
    }
    corpus_words = sum(len(d.split()) for d in DOCS[:2])
    cached = sorted(rows["full_context", f"q{i}"] for i in range(3))
    assert (
        cached[0] < corpus_words <= cached[1]
    )  # the first reads the corpus, the other two find it kept


def structured_world(request: dict) -> str:
    """The structured strategy's calls in JSON mode: no row in any document, a count query,
    its result."""
    prompt = prompt_of(request)
    if "Extract rows for the table below" in prompt:
        return '{"records": []}'
    return "```sql\nSELECT COUNT(*) FROM facts\n```" if prompt.startswith("Every document") else "0"


@pytest.mark.parametrize("order", ["table_first", "document_first"])
def test_structured_document_first_lets_a_cache_serve_each_document_to_a_later_questions_new_table(
    order, tmp_path
):
    """Two questions over two documents, each filling its own table (two schemas): every document is
    extracted once per table. Document first, the second table's extraction of a document reads the
    whole document from the cache; table first (the default), the shared start ends before
    the document."""
    corpus = Corpus.from_texts(DOCS[:2], titles=TOPICS[:2])
    tables = [
        {"entity": "topic", "attributes": [{"name": name, "type": "number", "unit": "count"}]}
        for name in ("items_held", "fact_number")
    ]
    with RecordingServer(structured_world, prompt_cache="openai", cache_size=16) as server:
        llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
        for i, table in enumerate(tables):
            answer_many(
                corpus,
                [f"How many items in total, case {i}?"],
                strategy="structured",
                llm=llm,
                concurrency=1,
                tool_mode="json",
                schema=table,
                extract_order=order,
                cache_dir=tmp_path,
            )
    extractions = [
        (prompt_of(r), c)
        for r, c in zip(server.requests, server.cached_tokens)
        if "Extract rows for the table below" in prompt_of(r)
    ]
    assert len(extractions) == 4  # 2 tables x 2 documents
    assert all(p.startswith("Document: ") == (order == "document_first") for p, _ in extractions)
    for doc in DOCS[:2]:
        (first_prompt, first), (_, second) = [(p, c) for p, c in extractions if doc in p]
        through_document = len(
            first_prompt[: first_prompt.index(doc) + len(doc)].split()
        )  # words up to the document's end
        if order == "document_first":
            assert (
                first < len(doc.split()) and second >= through_document
            )  # read once, then served from the cache to the new table
        else:
            assert second < through_document - len(
                doc.split()
            )  # the shared start ends before the document


def test_own_corpora_extract_structured_records_document_first():
    from longctx.experiments.runner import RunConfig

    spec = STRATEGIES.get("structured")
    assert spec.prompt_sharing is not None and spec.prompt_sharing.options == {
        "extract_order": "document_first"
    }
    assert RunConfig(benchmark="own", strategies=("structured",)).strategy_options == {
        "structured": {"extract_order": "document_first"}
    }
    assert RunConfig(benchmark="corpusqa", strategies=("structured",)).strategy_options == {}
    assert (
        spec.make_config().extract_order == "table_first"
    )  # answer() and benchmarks keep the default
