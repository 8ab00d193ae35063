"""Protocol-exact runs, checked by what a run *sends* (a recording server) and what gets scored.

The expected prompts are written here from the benchmarks' official code (LongBench
``config/dataset2prompt.json`` and ``prompts/0shot.txt``, LV-Eval's ``DATASET_PROMPT``),
independently of the loaders' own copies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longctx import make_chat_model
from longctx.experiments.benchmarks import load_benchmark, score
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.graphs import STRATEGIES
from longctx.retrieval.tokens import get_encoding
from tests.recording_server import RecordingServer, prompt_of
from tests.registries import built_in
from tests.scripted import ScriptedChatModel

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"

HOTPOTQA = (
    "Answer the question based on the given passages. Only give me the answer and do not output "
    "any other words.\n\nThe following are given passages.\n{context}\n\n"
    "Answer the question based on the given passages. Only give me the answer and do not output "
    "any other words.\n\nQuestion: {input}\nAnswer:"
)
V2_0SHOT = (
    "Please read the following text and answer the question below.\n\n<text>\n{doc}\n</text>\n\n"
    "What is the correct answer to this question: {q}\nChoices:\n(A) {a}\n(B) {b}\n(C) {c}\n"
    '(D) {d}\n\nFormat your response as follows: "The correct answer is (insert answer here)".'
)
FACTRECALL_EN = (
    "Please answer the following questions based on the given article.\n\nArticle: {context}\n\n"
    "Please answer the following questions based on the above article.\n\nQuestion: {input}\n"
    "Answer:"
)


def _budget(request: dict) -> int | None:
    """The answer budget a request carries (the OpenAI client may send either field)."""
    return request.get("max_tokens", request.get("max_completion_tokens"))


def _paris(request: dict) -> str:
    return (
        "So the final answer is: Paris"
        if "Are follow up questions needed here" in prompt_of(request)
        else "Paris"
    )


def test_longbench_v1_hotpotqa_full_context_and_self_ask_send_and_score_the_official_way(tmp_path):
    with RecordingServer(_paris) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench",
            strategies=("full_context", "self_ask"),
            data_path=str(FIXTURES / "longbench"),
            datasets=("hotpotqa",),
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path, llm=llm, show_progress=False)
    records = [
        json.loads(line)
        for line in (FIXTURES / "longbench" / "hotpotqa.jsonl").read_text().splitlines()
    ]
    expected = {HOTPOTQA.format(context=r["context"], input=r["input"]) for r in records}
    full = [r for r in server.requests if "Are follow up questions needed here" not in prompt_of(r)]
    assert {r["messages"][0]["content"] for r in full} == expected
    assert all(
        r["messages"] == [{"role": "user", "content": r["messages"][0]["content"]}] for r in full
    )  # one user turn, no system
    assert {_budget(r) for r in full} == {32} and {r["temperature"] for r in full} == {0.0}
    rows = {(r["sample_id"], r["strategy"]): r for r in read_rows(tmp_path)}
    samples = {
        s.sample_id: s
        for s in load_benchmark("longbench", FIXTURES / "longbench", datasets=["hotpotqa"])
    }
    for strategy in ("full_context", "self_ask"):
        row = rows[("hotpotqa-002", strategy)]
        assert row["prediction"] == "Paris", strategy  # the final answer, never a transcript
        scored = score("longbench", [(samples["hotpotqa-002"], row["prediction"])])
        assert scored["per_sample"]["hotpotqa-002"] == 100.0
        assert row["config"]["tokenizer"] and row["config"]["prompts_version"]


def test_longbench_v2_full_context_truncates_to_120000_tokens_and_answers_in_128(tmp_path):
    records = json.loads((FIXTURES / "longbench_v2" / "data.json").read_text())[:1]
    records[0]["context"] = " ".join(
        f"line{i} of a very long contract." for i in range(40_000)
    )  # ~200K tokens
    data = tmp_path / "v2"
    data.mkdir()
    (data / "data.json").write_text(json.dumps(records))
    with RecordingServer(lambda request: "The correct answer is (B)") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench_v2",
            strategies=("full_context",),
            data_path=str(data),
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    r = records[0]
    official = V2_0SHOT.format(
        doc=r["context"].strip(),
        q=r["question"].strip(),
        a=r["choice_A"].strip(),
        b=r["choice_B"].strip(),
        c=r["choice_C"].strip(),
        d=r["choice_D"].strip(),
    )
    enc = get_encoding()
    ids = enc.encode(official, disallowed_special=())
    assert len(ids) > 120_000
    expected = enc.decode(ids[:60_000]) + enc.decode(ids[-60_000:])
    (request,) = server.requests
    assert request["messages"] == [{"role": "user", "content": expected}]
    assert _budget(request) == 128 and request["temperature"] == 0.1
    row = read_rows(tmp_path / "run")[0]
    assert (
        row["steps"][0]["max_input_tokens"] == 120_000 and row["steps"][0]["prompt"] == "benchmark"
    )


def test_lveval_factrecall_sends_its_prompt_with_its_answer_budget(tmp_path):
    data = tmp_path / "lveval"
    data.mkdir()
    record = {
        "input": "What is the secret word?",
        "context": "The secret word is teapot. " * 400,
        "answers": ["teapot"],
        "length": 16000,
        "dataset": "factrecall_en",
        "language": "en",
        "answer_keywords": "teapot",
        "confusing_facts": [],
    }
    for level in (
        "16k",
        "32k",
        "64k",
        "128k",
        "256k",
    ):  # every level shares the item, as the official files do
        (data / f"factrecall_en_{level}.jsonl").write_text(json.dumps(record) + "\n")
    with RecordingServer(lambda request: "teapot") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="lveval",
            strategies=("full_context", "rag"),
            data_path=str(data),
            datasets=("factrecall_en",),
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    official = FACTRECALL_EN.format(context=record["context"], input=record["input"])
    full = [r for r in server.requests if r["messages"][0]["content"] == official]
    assert len(full) == 5 and {_budget(r) for r in full} == {16}
    rag = [r for r in server.requests if r["messages"][0]["content"] != official]
    assert len(rag) == 5 and {_budget(r) for r in rag} == {16}
    assert all(
        r["messages"][0]["content"].startswith(
            "Please answer the following questions based on the given article."
        )
        for r in rag
    )


# -- the scored field is the final answer, for every strategy on every benchmark -------------------
def _final_answer_model() -> ScriptedChatModel:
    def reply(prompt: str) -> str:
        if "Are follow up questions needed here" in prompt:
            return "So the final answer is: GOLD"
        if "Updated memory:" in prompt:
            return "memory notes"
        return "GOLD"

    return ScriptedChatModel(reply_fn=reply)


@pytest.mark.parametrize(
    "benchmark,datasets",
    [
        ("longbench", ("hotpotqa",)),
        ("longbench_v2", ()),
        ("lveval", ("hotpotwikiqa_mixup",)),
        ("corpusqa", ()),
    ],
)
@pytest.mark.parametrize("strategy", built_in(STRATEGIES))
def test_every_strategy_stores_its_final_answer_as_the_prediction(
    tmp_path, monkeypatch, benchmark, datasets, strategy
):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    options = {"lengths": ["16k"]} if benchmark == "lveval" else {}
    cfg = RunConfig(
        benchmark=benchmark,
        strategies=(strategy,),
        data_path=str(FIXTURES / benchmark),
        datasets=datasets,
        llm_cache=False,
        limit=1,
        loader_options=options,
    )
    run_experiment(cfg, tmp_path / "run", llm=_final_answer_model(), show_progress=False)
    (row,) = read_rows(tmp_path / "run")
    assert row["status"] == "ok", row.get("error")
    expected = (
        "Therefore, the answer is GOLD"
        if strategy == "memagent" and benchmark == "corpusqa"
        else "GOLD"
    )
    assert row["prediction"] in ("GOLD", expected), (strategy, row["prediction"])


# -- structured: each call's budget and tools, the benchmark's instruction on the final call -------
_FACTS = {
    "table": "facts",
    "entity": "company",
    "entity_description": "a company",
    "time": None,
    "attributes": [
        {
            "name": "revenue",
            "type": "number",
            "unit": "USD million",
            "description": "revenue",
            "static": False,
        }
    ],
}


def _structured_reply(request: dict) -> str:
    prompt = prompt_of(request)
    if prompt.startswith("A question will be answered"):
        return json.dumps(_FACTS)
    if prompt.startswith("Extract rows"):
        return json.dumps({"records": []})
    if prompt.startswith("Every document"):
        return "```sql\nSELECT COUNT(*) AS n FROM facts\n```"
    return "The answer is: 0"


@pytest.mark.parametrize("benchmark", ["corpusqa", "loong"])
def test_structured_sends_its_budgets_and_the_benchmarks_instruction(
    tmp_path, monkeypatch, benchmark
):
    """Plan, one extraction per document, SQL and the final call, each with its own budget and
    tool at temperature 0; the final call ends with the benchmark's instruction and carries the
    default answer budget (neither benchmark sets one); the stored prediction is its reply."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    (sample,) = load_benchmark(benchmark, FIXTURES / benchmark)[:1]
    with RecordingServer(_structured_reply) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark=benchmark,
            strategies=("structured",),
            data_path=str(FIXTURES / benchmark),
            llm_cache=False,
            limit=1,
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    kinds = {
        "plan": "A question will be answered",
        "extract": "Extract rows",
        "sql": "Every document",
        "answer": "A question about a collection",
    }
    sent = {k: [r for r in server.requests if prompt_of(r).startswith(v)] for k, v in kinds.items()}
    assert sum(map(len, sent.values())) == len(server.requests)
    assert len(sent["plan"]) == len(sent["sql"]) == len(sent["answer"]) == 1
    assert len(sent["extract"]) == len(
        sample.corpus
    )  # every document read once, in one window each
    budgets = {k: {_budget(r) for r in rs} for k, rs in sent.items()}
    assert budgets == {"plan": {1024}, "extract": {2048}, "sql": {512}, "answer": {256}}
    assert all(
        r["temperature"] == 0.0 and len(r["messages"]) == 1 and r["messages"][0]["role"] == "user"
        for r in server.requests
    )

    def forced(name: str) -> dict:
        return {"tools": [name], "tool_choice": {"type": "function", "function": {"name": name}}}

    tools = {
        k: [
            {
                "tools": [t["function"]["name"] for t in r.get("tools", [])],
                "tool_choice": r.get("tool_choice"),
            }
            for r in rs
        ]
        for k, rs in sent.items()
    }
    assert tools["plan"] == [forced("define_table")] and all(
        t == forced("record_rows") for t in tools["extract"]
    )
    assert tools["sql"] == tools["answer"] == [{"tools": [], "tool_choice": None}]
    (final,) = sent["answer"]
    assert prompt_of(final).endswith(
        sample.question.instruction
    ) and sample.question.text in prompt_of(final)
    for doc in (
        sample.corpus
    ):  # each document's whole text, under its title, in exactly one extraction request
        assert (
            sum(
                f"Document: {doc.title}\n<document>\n{doc.text.strip()}\n</document>"
                in prompt_of(r)
                for r in sent["extract"]
            )
            == 1
        )
    (row,) = read_rows(tmp_path / "run")
    assert row["status"] == "ok" and row["prediction"] == "The answer is: 0"
    assert row["config"]["extract_max_tokens"] == 2048 and row["config"]["answer_max_tokens"] == 256
