"""Cached prompt tokens (issue #40 item 1): what a server reports it read from its prompt cache is
kept per call, summed per answer, row, summary and report, and priced at the cached-input rate.

The caching stub (``RecordingServer(prompt_cache=...)``) computes the cached tokens from the words
each prompt shares at its start with the previous one, as a provider's prompt cache would."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest

from longctx import answer_many
from longctx.agents.cached_usage import reported_cached_tokens, reused_prefix
from longctx.agents.chat_models import make_chat_model, streaming_model
from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.planning.prices import (
    DEFAULT_PRICES,
    Price,
    PriceTableError,
    parse_prices,
    price_for,
    row_cost,
)
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Usage
from tests.recording_server import RecordingServer, prompt_of
from tests.servers import llama_server

PRICES = {"gpt-4o-mini": {"prompt": 0.15, "cached": 0.075, "completion": 0.60}}
DOCUMENT = " ".join(
    f"Line {i}: the depot at gate {i} stores {i * 7} crates of tinned pears." for i in range(60)
)


def shared_prefix(a: str, b: str) -> int:
    """Words two prompts share at their start (the stub's token unit), counted here apart from the
    stub's own :func:`tests.recording_server.shared_words`, so the test checks the stub's
    figure too."""
    n = 0
    for x, y in zip(a.split(), b.split()):
        if x != y:
            break
        n += 1
    return n


@pytest.fixture(scope="module")
def own_run(tmp_path_factory):
    """20 questions over one document, full context, one call at a time against the OpenAI-style
    caching stub."""
    tmp_path = tmp_path_factory.mktemp("cached")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "depot.md").write_text(DOCUMENT + "\n")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{i:02d}",
                    "question": f"How many crates are stored at gate {i}?",
                    "answer": str(i * 7),
                }
            )
            + "\n"
            for i in range(20)
        )
    )
    samples = load_benchmark("own", questions, corpus=docs)
    out = tmp_path / "run"
    with RecordingServer(lambda request: "The answer is: 7", prompt_cache="openai") as server:
        llm = make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="own", strategies=("full_context",), llm_cache=False, concurrency=1
        )
        run_experiment(cfg, out, llm=llm, samples=samples, show_progress=False)
    return {"out": out, "server": server, "samples": samples}


def test_a_20_question_full_context_run_reads_the_corpus_from_cache_after_the_first_call(
    own_run,
):
    server = own_run["server"]
    prompts = [prompt_of(r) for r in server.requests]
    assert len(prompts) == 20
    expected = [0] + [shared_prefix(a, b) for a, b in zip(prompts, prompts[1:])]
    assert server.cached_tokens == expected
    # the document comes before the question, so calls 2-20 find all of it in the cache
    assert all(cached > len(DOCUMENT.split()) for cached in expected[1:])
    rows = sorted(read_rows(own_run["out"]), key=lambda r: r["sample_id"])
    by_prompt = {p: c for p, c in zip(prompts, expected)}
    for row in rows:
        i = int(row["sample_id"][1:])
        prompt = next(p for p in prompts if f"gate {i}?" in p)
        assert row["usage"]["cached_prompt_tokens"] == by_prompt[prompt]
        assert row["usage"]["prompt_tokens"] == len(prompt.split())
    assert sum(r["usage"]["cached_prompt_tokens"] for r in rows) == sum(expected) > 0


def test_the_report_prices_cached_tokens_at_their_rate_and_shows_the_cost_without_cache(
    own_run,
):
    out = own_run["out"]
    result = build_report(out, samples=own_run["samples"], plots=False, prices=PRICES)
    rows = read_rows(out)
    prompt = sum(r["usage"]["prompt_tokens"] for r in rows)
    cached = sum(r["usage"]["cached_prompt_tokens"] for r in rows)
    completion = sum(r["usage"]["completion_tokens"] for r in rows)
    with_cache = ((prompt - cached) * 0.15 + cached * 0.075 + completion * 0.60) / 1e6 / len(rows)
    without = (prompt * 0.15 + completion * 0.60) / 1e6 / len(rows)
    summary = {r["strategy"]: r for r in result["summary"]}["full_context"]
    assert summary["cached_prompt_tokens"] == pytest.approx(cached / len(rows), abs=0.01)
    page = (out / "report" / "report.html").read_text(encoding="utf-8")
    assert (
        f"${with_cache:,.6f}" in page and f"${without:,.6f}" in page and with_cache < 0.6 * without
    )
    assert "USD / 1M cached prompt" in page and "$0.075" in page


@pytest.mark.parametrize("style", ["openai", "deepseek", "llama.cpp"])
def test_each_vendors_name_for_cached_tokens_reaches_the_answers_usage(style):
    corpus = Corpus.from_texts([DOCUMENT])
    with RecordingServer(lambda request: "The answer is: 7", prompt_cache=style) as server:
        llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
        answers = answer_many(
            corpus,
            [
                "How many crates at gate 1?",
                "How many crates at gate 2?",
                "How many crates at gate 3?",
            ],
            strategy="full_context",
            llm=llm,
            concurrency=1,
        )
    assert [a.usage.cached_prompt_tokens for a in answers] == server.cached_tokens
    assert server.cached_tokens[0] == 0 and min(server.cached_tokens[1:]) > len(DOCUMENT.split())


@pytest.mark.parametrize("style", ["openai", "deepseek", "moonshot", "llama.cpp"])
def test_a_streamed_answer_reports_the_cached_tokens_a_whole_reply_does(style):
    """A streamed reply's usage comes in its last chunk (``stream_usage``): the cached tokens in it,
    under each vendor's name (llama.cpp's ``timings`` with that chunk), reach the answer as a whole
    reply's do."""
    corpus = Corpus.from_texts([DOCUMENT])
    with RecordingServer(lambda request: "The answer is: 7", prompt_cache=style) as server:
        llm = streaming_model(make_chat_model("openai:m", base_url=server.url, max_retries=0), True)
        answers = answer_many(
            corpus,
            ["How many crates at gate 1?", "How many crates at gate 2?"],
            strategy="full_context",
            llm=llm,
            concurrency=1,
        )
    assert all(
        r["stream"] and r["stream_options"] == {"include_usage": True} for r in server.requests
    )
    assert [a.usage.cached_prompt_tokens for a in answers] == server.cached_tokens
    assert server.cached_tokens[0] == 0 and server.cached_tokens[1] > len(DOCUMENT.split())
    assert not any(a.usage.estimated for a in answers)


@pytest.mark.parametrize(
    ("usage", "timings", "expected"),
    [
        ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 8}}, None, 8),
        ({"prompt_tokens": 10, "prompt_tokens_details": None}, None, None),
        (
            {"prompt_tokens": 10, "prompt_cache_hit_tokens": 0, "prompt_cache_miss_tokens": 10},
            None,
            0,
        ),
        ({"prompt_tokens": 10, "cached_tokens": 4}, None, 4),
        ({"prompt_tokens": 10}, {"cache_n": 6, "prompt_n": 4}, 6),
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": "8"}},
            {"cache_n": -1},
            None,
        ),  # untrusted values
        ({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": True}}, None, None),
        (None, None, None),
    ],
)
def test_reported_cached_tokens_reads_each_name_and_ignores_junk(usage, timings, expected):
    assert reported_cached_tokens(usage, timings) == expected


@pytest.mark.parametrize(
    ("kept", "prompt", "reused"),
    [
        ([], [1, 2, 3], 0),
        ([1, 2, 3], [1, 2, 4], 2),
        ([1, 2, 3], [1, 2, 3], 2),
        ([1, 2, 3, 9, 9], [1, 2, 3, 4], 3),
        ([5], [1], 0),
        ([1], [1], 0),
    ],
)
def test_reused_prefix_is_what_llama_cpp_skips(kept, prompt, reused):
    assert reused_prefix(kept, prompt) == reused


def test_reused_prefix_of_10000_tokens():
    ids = list(range(10_000))
    assert reused_prefix(ids, ids[:9_000] + [-1] * 1_000) == 9_000


def test_usage_sums_cached_prompt_tokens():
    total = Usage(prompt_tokens=10, cached_prompt_tokens=8) + Usage(
        prompt_tokens=5, cached_prompt_tokens=0
    )
    assert total.cached_prompt_tokens == 8 and Usage.from_dict(total.to_dict()) == total


def test_every_built_in_price_has_a_cached_rate_below_its_prompt_rate():
    for model, row in DEFAULT_PRICES.items():
        assert len(row) == 3 and 0 < row[2] < row[0], model
    price = price_for("gpt-4o-mini")
    assert price is not None and price.cached == 0.075
    assert price.cost(1_000_000, 0, 1_000_000) == pytest.approx(0.075) and price.cost(
        1_000_000, 0
    ) == pytest.approx(0.15)


def test_a_users_price_without_a_cached_rate_charges_cached_tokens_at_the_prompt_rate():
    table = parse_prices(
        {
            "m": {"prompt": 1.0, "completion": 2.0},
            "n": {"input": 1.0, "output": 2.0, "cached_input": 0.25},
        }
    )
    row = {
        "status": "ok",
        "usage": {
            "prompt_tokens": 1_000_000,
            "cached_prompt_tokens": 800_000,
            "completion_tokens": 0,
        },
    }
    assert row_cost(row, price_for("m", table)) == pytest.approx(1.0)
    assert row_cost(row, price_for("n", table)) == pytest.approx(0.2 + 0.2)
    assert row_cost(row, price_for("n", table), cached=False) == pytest.approx(1.0)
    with pytest.raises(PriceTableError, match="cached"):
        parse_prices({"m": {"prompt": 1.0, "completion": 2.0, "cached": -1}})


def test_the_embedded_model_reports_the_prefix_it_kept():
    """Two questions after one text on the embedded model: the second call reads the text from
    llama.cpp's context (the prefix it kept), and says so."""
    llm = make_chat_model("embedded")
    corpus = Corpus.from_texts(["The red fox lives in the northern forest near the lake. " * 12])
    first, second = answer_many(
        corpus,
        ["Where does the fox live?", "What colour is the fox?"],
        strategy="full_context",
        llm=llm,
        concurrency=1,
        max_new_tokens=4,
    )
    assert (
        second.usage.cached_prompt_tokens > 100
        and second.usage.cached_prompt_tokens < second.usage.prompt_tokens
    )


# a real llama_cpp.server and two 400-token prompts: tens of seconds on 2 loaded cores
@pytest.mark.slow
def test_llama_cpp_python_server_reuses_the_prefix_but_reports_no_cached_tokens():
    """What ``python -m llama_cpp.server`` sends back for a prompt whose first 388 of 400 tokens it
    kept from the previous request (its log says "388 prefix-match hit"): prompt, completion and
    total tokens only, so an answer over it records no cached tokens (the README's "Prompt caching"
    says so)."""
    text = "The red fox lives in the northern forest near the lake. " * 30
    with llama_server() as url:
        replies = []
        for question in ("Where does the fox live?", "What colour is the fox?"):
            body = {
                "model": "smollm2",
                "messages": [{"role": "user", "content": f"{text}\nQuestion: {question}"}],
                "max_tokens": 4,
            }
            request = urllib.request.Request(
                f"{url}/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=300) as response:
                replies.append(json.loads(response.read()))
        llm = make_chat_model("openai:smollm2", base_url=url, max_retries=0)
        answers = answer_many(
            Corpus.from_texts([text]),
            ["Where does the fox live?", "Is there a lake?"],
            strategy="full_context",
            llm=llm,
            concurrency=1,
            max_new_tokens=4,
        )
    for reply in replies:
        assert (
            set(reply["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
            and "timings" not in reply
        )
        assert reported_cached_tokens(reply["usage"], reply.get("timings")) is None
    assert [a.usage.cached_prompt_tokens for a in answers] == [0, 0] and all(
        a.usage.prompt_tokens > 300 for a in answers
    )


@pytest.mark.parametrize("style", ["openai", "deepseek", "llama.cpp"])
def test_the_async_lean_path_reads_cached_tokens_too(style):
    """A run's async calls post through its own aiohttp session (``run_client``) and parse the reply
    as a dict."""
    import asyncio

    from langchain_core.messages import HumanMessage

    from longctx.graphs.calls.llm import reply_usage, run_client

    prompt = DOCUMENT + "\nQuestion: how many crates at gate 1?"

    async def two_calls(url: str) -> list[dict]:
        async with run_client(make_chat_model("openai:m", base_url=url, max_retries=0)) as llm:
            replies = [await llm.ainvoke([HumanMessage(content=prompt)]) for _ in range(2)]
        return [reply_usage(r, prompt, str(r.content)) for r in replies]

    with RecordingServer(lambda request: "7", prompt_cache=style) as server:
        usages = asyncio.run(two_calls(server.url))
    assert (
        [u["cached_prompt_tokens"] for u in usages]
        == [0, len(prompt.split())]
        == server.cached_tokens
    )


# -- one price everywhere: Workspace.compare and the budgets charge what the report charges --------

RATES = (
    1_000.0,
    2_000.0,
    100.0,
)  # USD per 1M prompt, completion, cached prompt tokens: a cached token a tenth of a prompt token
RATED = Price.of(
    RATES, source="user", key="m"
)  # as experiments.planning.prices.price_for gives it (longctx --max-cost's)
GATES = ["How many crates at gate 1?", "How many crates at gate 2?", "How many crates at gate 3?"]


def report_usd(usage) -> float:
    """What ``longctx report`` charges for one answer's usage at :data:`RATES`."""
    return row_cost({"status": "ok", "usage": usage.to_dict()}, RATED)


def test_workspace_compare_prices_cached_tokens_as_the_report_does(tmp_path):
    from longctx import Workspace

    with RecordingServer(lambda request: "The answer is: 7", prompt_cache="openai") as server:
        ws = Workspace(
            Corpus.from_texts([DOCUMENT]),
            llm=make_chat_model("openai:m", base_url=server.url, max_retries=0),
            cache_dir=tmp_path,
            price=RATED,
        )
        ws.answer(GATES[0], strategy="full_context")  # the corpus into the server's cache
        table = ws.compare(GATES[1], strategies=["full_context"])
    usage = table["full_context"].usage
    assert usage.cached_prompt_tokens > len(DOCUMENT.split())
    (row,) = table.to_rows()
    assert row["cost_usd"] == pytest.approx(report_usd(usage))
    assert (
        row["cost_usd"]
        < 0.3 * (usage.prompt_tokens * RATES[0] + usage.completion_tokens * RATES[1]) / 1e6
    )
    triple = Workspace(
        ws.corpus, llm=ws.llm, cache_dir=tmp_path, price=RATES
    ).price  # a plain triple reads as the same rates
    assert triple is not None and (triple.prompt, triple.completion, triple.cached) == RATES


def test_the_budget_guard_spends_what_the_report_charges():
    """Calls made under a :class:`BudgetGuard`: once they end, its USD is the report's for their
    usage (the server's prompt tokens, the cached ones at the cached rate), not the prompt counted
    before each call at the prompt rate."""
    from langchain_core.messages import HumanMessage

    from longctx.graphs.calls.llm import reply_usage, tokenizer_for
    from longctx.graphs.metering.budget import Budget
    from longctx.graphs.metering.budget_guard import BudgetGuard

    with RecordingServer(lambda request: "The answer is: 7", prompt_cache="openai") as server:
        llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
        guard = BudgetGuard(Budget(max_cost_usd=100.0, price=RATED), tokenizer_for(llm).count)
        prompts = [f"{DOCUMENT}\nQuestion: {q}" for q in GATES]
        replies = [
            llm.invoke([HumanMessage(content=p)], config={"callbacks": [guard]}) for p in prompts
        ]
    usage = Usage.from_dict(
        {
            k: sum(reply_usage(r, p, str(r.content))[k] for r, p in zip(replies, prompts))
            for k in ("prompt_tokens", "cached_prompt_tokens", "completion_tokens")
        }
    )
    assert usage.cached_prompt_tokens == sum(server.cached_tokens) > 0
    assert (
        guard.spent_usd == pytest.approx(report_usd(usage))
        and guard.cached_prompt_tokens == usage.cached_prompt_tokens
    )


# -- the report: cost per answer with and without the cache, and the frontier that changes ---------


def right_answer(request: dict) -> str:
    """The gold answer of the question a prompt asks (every strategy scores alike: the frontier is
    decided by cost)."""
    gate = re.findall(r"crates are stored at gate (\d+)\?", prompt_of(request))
    return f"The answer is: {int(gate[-1]) * 7}" if gate else "The answer is: 0"


def test_the_report_names_the_strategies_the_prompt_cache_moves_onto_or_off_the_frontier(tmp_path):
    """RAG (one chunk) and full context, six questions over one document: without a cache RAG costs
    less per answer at the same score; with it full context reads the document from the cache after
    the first question and takes RAG's place on the cost frontier and on the frontier of tokens the
    model computed."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "depot.md").write_text(DOCUMENT + "\n")
    questions = tmp_path / "q.jsonl"
    gates = [
        0,
        20,
        40,
        5,
        25,
        45,
    ]  # one after the other, RAG's questions retrieve different parts of the document
    questions.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{n}",
                    "question": f"How many crates are stored at gate {i}?",
                    "answer": str(i * 7),
                }
            )
            + "\n"
            for n, i in enumerate(gates)
        )
    )
    samples = load_benchmark("own", questions, corpus=docs)
    with RecordingServer(right_answer, prompt_cache="openai") as server:
        llm = make_chat_model("openai:m", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="own",
            strategies=("rag", "full_context"),
            llm_cache=False,
            concurrency=1,
            strategy_options={"rag": {"top_k": 1}},
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, samples=samples, show_progress=False)
    result = build_report(
        tmp_path / "run",
        samples=samples,
        plots=False,
        prices={"m": {"prompt": 1.0, "cached": 0.01, "completion": 1.0}},
    )
    summary = {r["strategy"]: r for r in result["summary"]}
    assert summary["rag"]["score"] == summary["full_context"]["score"] == 100
    assert [summary[s]["frontier_cost_uncached"] for s in ("rag", "full_context")] == [
        "frontier",
        "dominated",
    ]
    assert [summary[s]["frontier_cost"] for s in ("rag", "full_context")] == [
        "dominated",
        "frontier",
    ]
    for row in (
        summary.values()
    ):  # what the model computed: the prompt less what it read from its cache, plus the completion
        assert row["computed_tokens"] == pytest.approx(
            row["prompt_tokens"] - row["cached_prompt_tokens"] + row["completion_tokens"], abs=0.02
        )
    assert [summary[s]["frontier_tokens"] for s in ("rag", "full_context")] == [
        "frontier",
        "dominated",
    ]
    assert [summary[s]["frontier_computed_tokens"] for s in ("rag", "full_context")] == [
        "dominated",
        "frontier",
    ]
    page = (tmp_path / "run" / "report" / "report.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="prompt-cache">') :]
    assert (
        "On the frontier of score against USD per answer, with the prompt cache full_context "
        "joins it and rag leaves it." in section
    )
    assert (
        "On the frontier of score against tokens the model computed per answer, with the prompt "
        "cache full_context joins it" in section
    )
