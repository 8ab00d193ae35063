"""Official settings that reach the request: LongBench v2's RAG chunk order and CoT setting,
LongBench v1's samsum stop. Checked by what a run sends to a recording server.

Expected prompts are written here from THUDM/LongBench's ``pred.py`` and ``prompts/`` (v2)
and ``LongBench/pred.py`` (v1), independently of the loaders' own copies.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from longctx import make_chat_model
from longctx.experiments.benchmarks import load_benchmark, score
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from tests.recording_server import RecordingServer, prompt_of

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"

V2_COT = (
    "Please read the following text and answer the questions below.\n\n<text>\n{doc}\n</text>\n\n"
    "What is the correct answer to this question: {q}\nChoices:\n(A) {a}\n(B) {b}\n(C) {c}\n"
    "(D) {d}\n\nLet\u2019s think step by step:"
)
V2_COT_ANS = (
    "Please read the following text and answer the questions below.\n\n"
    "The text is too long and omitted here.\n\nWhat is the correct answer to this question: {q}\n"
    "Choices:\n(A) {a}\n(B) {b}\n(C) {c}\n(D) {d}\n\nLet\u2019s think step by step: {cot}\n\n"
    "Based on the above, what is the single, most likely answer choice? Format your response as "
    'follows: "The correct answer is (insert answer here)".'
)


def _budget(request: dict) -> int | None:
    return request.get("max_tokens", request.get("max_completion_tokens"))


# -- LongBench v2 RAG: chunks in document (c_idx) order under the default assembly -----------------
def test_longbench_v2_default_rag_puts_chunks_in_document_order(tmp_path, monkeypatch):
    """``pred.py --rag`` sorts the retrieved chunks by ``c_idx``; the default RAG (rank order,
    ``assembly="benchmark"``) must send them so, though retrieval ranks a late chunk first."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    filler = " ".join(f"filler{j}" for j in range(140))
    zebras = {2: 2, 5: 1, 8: 6}  # chunk -> how often the query word occurs: rank order 8, 2, 5
    sentences = [f"Marker{i} {' '.join(['zebra'] * zebras.get(i, 0))} {filler}." for i in range(10)]
    record = {
        "_id": "v2-order",
        "domain": "Single-Document QA",
        "sub_domain": "x",
        "difficulty": "easy",
        "length": "short",
        "question": "Which zebra?",
        "choice_A": "one",
        "choice_B": "two",
        "choice_C": "three",
        "choice_D": "four",
        "answer": "A",
        "context": " ".join(sentences),
    }
    data = tmp_path / "v2"
    data.mkdir()
    (data / "data.json").write_text(json.dumps([record]))
    with RecordingServer(lambda request: "The correct answer is (A)") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench_v2", strategies=("rag",), data_path=str(data), llm_cache=False
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    (request,) = server.requests
    prompt = prompt_of(request)
    assert prompt.startswith(
        "Please read the following retrieved text chunks and answer the question below."
    )
    sent = [int(m) for m in re.findall(r"Retrieved chunk \d+: Marker(\d+)", prompt)]
    (row,) = read_rows(tmp_path / "run")
    ranked = [int(re.match(r"Marker(\d+)", e["snippet"]).group(1)) for e in row["evidence"]]
    assert ranked[0] == 8 and ranked != sorted(ranked)  # retrieval's order is not the document's
    assert sent == sorted(ranked)
    assert next(s for s in row["steps"] if s["node"] == "build_prompt")["order"] == "document"


# -- LongBench v2 CoT: two calls, the official prompts, budgets and extraction ---------------------
def _cot_reply(request: dict) -> str:
    return (
        "  Report 2 names 2020, so B.  "
        if prompt_of(request).endswith("Let\u2019s think step by step:")
        else "The correct answer is (B)"
    )


def test_longbench_v2_cot_setting_sends_both_official_calls_and_scores_the_second(tmp_path):
    with RecordingServer(_cot_reply) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench_v2",
            strategies=("full_context",),
            data_path=str(FIXTURES / "longbench_v2"),
            llm_cache=False,
            limit=2,
            loader_options={"setting": "cot"},
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    records = {
        r["_id"]: r for r in json.loads((FIXTURES / "longbench_v2" / "data.json").read_text())
    }
    r = records["v2-2"]
    fields = {
        "q": r["question"].strip(),
        "a": r["choice_A"].strip(),
        "b": r["choice_B"].strip(),
        "c": r["choice_C"].strip(),
        "d": r["choice_D"].strip(),
    }
    reasoning = V2_COT.format(doc=r["context"].strip(), **fields)
    answer = V2_COT_ANS.format(cot="Report 2 names 2020, so B.", **fields)
    sent = [prompt_of(q) for q in server.requests]
    assert len(sent) == 4 and reasoning in sent and answer in sent
    by_prompt = {prompt_of(q): q for q in server.requests}
    assert _budget(by_prompt[reasoning]) == 1024 and _budget(by_prompt[answer]) == 128
    assert {q["temperature"] for q in server.requests} == {0.1}
    rows = {row["sample_id"]: row for row in read_rows(tmp_path / "run")}
    assert rows["v2-2"]["prediction"] == "The correct answer is (B)"
    generate = next(s for s in rows["v2-2"]["steps"] if s["node"] == "generate")
    assert (
        generate["reasoning"].strip() == "Report 2 names 2020, so B."
        and generate["reasoning_max_new_tokens"] == 1024
    )
    samples = load_benchmark("longbench_v2", FIXTURES / "longbench_v2", setting="cot")
    scored = score(
        "longbench_v2",
        [(s, rows[s.sample_id]["prediction"]) for s in samples if s.sample_id in rows],
    )
    assert scored["per_sample"] == {"v2-1": 0.0, "v2-2": 100.0}


def test_longbench_v2_default_setting_is_one_call_and_bad_settings_fail_clearly():
    (sample, *_) = load_benchmark("longbench_v2", FIXTURES / "longbench_v2")
    assert sample.question.protocol.answer_prompt is None and sample.metadata["setting"] == "0shot"
    with pytest.raises(ValueError, match="setting must be one of 0shot, cot, got 'cots'"):
        load_benchmark("longbench_v2", FIXTURES / "longbench_v2", setting="cots")


# -- LongBench v1 samsum: the newline stop reaches the request -------------------------------------
def test_samsum_final_calls_stop_at_a_newline_and_other_datasets_send_no_stop(
    tmp_path, monkeypatch
):
    """``LongBench/pred.py`` adds the newline token to ``eos_token_id`` for samsum only."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "longbench"
    data.mkdir()
    samsum = {
        "input": "Dialogue: Ann: hi\nBob: hello\nSummary: ",
        "context": "Dialogue: Cy: lunch?\nDee: sure\nSummary: Cy and Dee lunch.\n",
        "answers": ["Ann and Bob greet."],
        "length": 20,
        "dataset": "samsum",
        "language": "en",
        "all_classes": None,
        "_id": "samsum-1",
    }
    (data / "samsum.jsonl").write_text(json.dumps(samsum) + "\n")
    (data / "hotpotqa.jsonl").write_text(
        (FIXTURES / "longbench" / "hotpotqa.jsonl").read_text().splitlines()[0] + "\n"
    )
    strategies = ("full_context", "rag", "memagent")
    with RecordingServer(lambda request: "Ann and Bob greet.") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench",
            strategies=strategies,
            data_path=str(data),
            datasets=("samsum", "hotpotqa"),
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    finals = [r for r in server.requests if not prompt_of(r).endswith("Updated memory:\n")]
    samsum_finals = [r for r in finals if "Ann: hi" in prompt_of(r)]
    assert len(samsum_finals) == len(strategies)
    assert all(r.get("stop") == ["\n"] for r in samsum_finals)
    assert all(
        not r.get("stop") for r in server.requests if r not in samsum_finals
    )  # memory updates and hotpotqa: none
    rows = read_rows(tmp_path / "run")
    assert all(r["status"] == "ok" for r in rows) and len(rows) == 2 * len(strategies)
