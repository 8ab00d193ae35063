"""MemoryAgentBench: loader, the official agents' requests, the official metrics and judges, a run
over one context.

``official_requests.json`` was recorded by running MemoryAgentBench's own ``agent.py`` and
``conversation_creator.py`` (@ 455306d, unchanged) on these fixture items, with only the
chunks, the tokenizer, the memorize time stamp and the OpenAI client injected (see
docs/protocols.md); the metric expectations are the official ``post_process``'s values.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from longctx import make_chat_model
from longctx.experiments.benchmarks import (
    BENCHMARKS,
    BenchmarkDataError,
    Prediction,
    load_benchmark,
    score,
)
from longctx.experiments.benchmarks import memoryagentbench as mab
from longctx.experiments.benchmarks import memoryagentbench_prompts as p
from longctx.experiments.metrics import memoryagentbench as m
from longctx.experiments.metrics import memoryagentbench_judge as mj
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from tests.recording_server import RecordingServer
from tests.scripted import ScriptedChatModel

DATA = Path(__file__).parent / "fixtures" / "benchmarks" / "memoryagentbench"
OFFICIAL = json.loads((DATA / "official_requests.json").read_text())


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def samples():
    return load_benchmark("memoryagentbench", DATA)


def test_loader_gives_one_sample_per_question_sharing_one_corpus(samples):
    assert len(samples) == 18
    by_context: dict[tuple[str, int], list] = {}
    for s in samples:
        by_context.setdefault((s.dataset, s.metadata["context_index"]), []).append(s)
    assert len(by_context) == 8
    for group in by_context.values():
        assert (
            len({id(s.corpus) for s in group}) == 1
            and len({s.corpus.fingerprint for s in group}) == 1
        )
    ruler = [s for s in samples if s.dataset == "ruler_qa1_197K"]
    assert [s.answers for s in ruler] == [
        ("Mary Blake",),
        ("the harbour archive", "harbour"),
        ("entry number 3",),
    ]
    # one question with the whole answer list as its gold (InfBench-Sum), its key points kept for
    # the judge
    (summary,) = [s for s in samples if s.dataset == "infbench_sum_eng_shots2"]
    assert summary.metadata["gold"] == [
        "The saga describes an archive of entries filed on quiet afternoons."
    ]
    assert len(summary.metadata["keypoints"]) == 2
    assert {
        s.question.protocol.max_new_tokens for s in samples if s.dataset.startswith("icl_")
    } == {20}


def test_loader_keeps_the_official_number_of_contexts(tmp_path):
    record = json.loads((DATA / "Conflict_Resolution.jsonl").read_text().splitlines()[0])
    (tmp_path / "Conflict_Resolution.jsonl").write_text(
        "\n".join(json.dumps(record) for _ in range(3))
    )
    assert {
        s.metadata["context_index"] for s in load_benchmark("memoryagentbench", tmp_path, hub=False)
    } == {0}  # max_test_samples: 1
    assert {
        s.metadata["context_index"]
        for s in load_benchmark("memoryagentbench", tmp_path, hub=False, all_contexts=True)
    } == {0, 1, 2}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.pop("context"), "'context'"),
        (lambda r: r.update(questions=3), "'questions'"),
        (lambda r: r.update(answers=[]), "'answers'"),
        (lambda r: r["metadata"].pop("source"), "'metadata.source'"),
        (
            lambda r: r["metadata"].update(source="icl_nlu_8296shot_balance"),
            "belongs to split Test_Time_Learning",
        ),
    ],
)
def test_loader_refuses_a_malformed_record_in_one_line_naming_file_and_field(
    tmp_path, change, field
):
    record = json.loads((DATA / "Conflict_Resolution.jsonl").read_text().splitlines()[0])
    change(record)
    path = tmp_path / "Conflict_Resolution.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(BenchmarkDataError) as err:
        load_benchmark("memoryagentbench", tmp_path, hub=False)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and field in message


def test_loader_names_the_missing_split_file(tmp_path):
    with pytest.raises(BenchmarkDataError, match="Accurate_Retrieval"):
        load_benchmark("memoryagentbench", tmp_path, datasets=["ruler_qa1_197K"], hub=False)


def test_the_hubs_data_folder_itself_is_a_path(tmp_path):
    pa = pytest.importorskip("pyarrow")
    parquet = pytest.importorskip("pyarrow.parquet")
    record = json.loads((DATA / "Conflict_Resolution.jsonl").read_text().splitlines()[0])
    (tmp_path / "data").mkdir()
    shard = tmp_path / "data" / "Conflict_Resolution-00000-of-00001.parquet"
    parquet.write_table(pa.Table.from_pylist([record]), shard)
    from_root = load_benchmark("memoryagentbench", tmp_path, hub=False)
    from_data = load_benchmark("memoryagentbench", tmp_path / "data", hub=False)
    assert from_data and [s.question for s in from_data] == [s.question for s in from_root]


def test_missing_data_names_the_hub_dataset_and_the_hub_extra(tmp_path, monkeypatch):
    with pytest.raises(BenchmarkDataError) as offline:
        load_benchmark("memoryagentbench", tmp_path, datasets=["ruler_qa1_197K"], hub=False)
    monkeypatch.setitem(sys.modules, "datasets", None)  # the core install: no 'datasets' package
    with pytest.raises(BenchmarkDataError) as core:
        load_benchmark("memoryagentbench", tmp_path, datasets=["ruler_qa1_197K"])
    for message in (str(offline.value), str(core.value)):
        assert "ai-hyz/MemoryAgentBench" in message and "pip install 'longctx-lab[hub]'" in message
        assert "Accurate_Retrieval" in message and "\n" not in message


def _ours(sample, request) -> str:
    """Our user turn for one recorded official request (RAG: the chunks the official BM25 retriever
    chose, in its order)."""
    text, size = sample.corpus[0].text, request["chunk_size"]
    if request["agent"].startswith("Long_context"):
        return p.long_context_message(
            p.memorized_context(sample.dataset, text, mab.memory_budget(sample.dataset), size),
            sample.question.text,
        )
    chunks = p.chunk_context(text, size)
    return mab.rag_prompt(sample, [chunks[i] for i in request["retrieved"]])


def test_requests_are_the_official_agents_requests(samples):
    by_key = {(s.dataset, s.metadata["question_index"]): s for s in samples}
    assert {r["source"] for r in OFFICIAL} == {
        s.dataset for s in samples
    }  # one item or more of each competency
    for request in OFFICIAL:
        sample = by_key[(request["source"], request["question_index"])]
        assert request["roles"] == ["system", "user"] and request["system"] == p.system_message()
        assert (
            request["temperature"] == mab.TEMPERATURE
            and request["max_tokens"] == sample.question.protocol.max_new_tokens
        )
        ours = _ours(sample, request)
        assert (len(ours), ours[-400:]) == (request["user_chars"], request["user_tail"]), (
            request["agent"],
            request["source"],
            request["chunk_size"],
        )
        assert _sha(ours) == request["user_sha256"]


@pytest.mark.parametrize(
    ("source", "prediction", "gold", "official"),
    [
        (
            "ruler_qa1_197K",
            "The most recent location of John is the hallway.",
            ["hallway"],
            {"exact_match": 0.0, "f1": 0.25, "substring_exact_match": 1.0},
        ),
        (
            "ruler_qa1_197K",
            "- ai: A football",
            [["football"], ["soccer ball"]],
            {"exact_match": 0.0, "f1": 0.6667, "substring_exact_match": 1.0},
        ),
        (
            "ruler_qa1_197K",
            "Answer: Paris\nBecause the text says so.",
            "Paris, France",
            {"exact_match": 0.0, "f1": 0.6667, "substring_exact_match": 0.0},
        ),
        (
            "factconsolidation_sh_6k",
            "Town-78",
            ["Town-78"],
            {"exact_match": 1.0, "f1": 1.0, "substring_exact_match": 1.0},
        ),
        (
            "factconsolidation_sh_6k",
            "I think the answer is Town 77 or Town-78",
            ["Town-79"],
            {"exact_match": 0.0, "f1": 0.0, "substring_exact_match": 0.0},
        ),
        (
            "icl_trec_coarse_6600shot_balance",
            "label: 43",
            ["43"],
            {"exact_match": 0.0, "f1": 0.6667, "substring_exact_match": 1.0},
        ),
        (
            "icl_trec_coarse_6600shot_balance",
            "43\nlabel: 12",
            ["43"],
            {"exact_match": 1.0, "f1": 1.0, "substring_exact_match": 1.0},
        ),
        (
            "detective_qa",
            "The answer is B. Mr. Finch",
            ["B"],
            {"exact_match": 0.0, "f1": 0.3333, "substring_exact_match": 1.0},
        ),
        (
            "eventqa_65536",
            "Elena opened the red door.\nThen she left.",
            ["Elena opened the red door", "letter"],
            {"exact_match": 1.0, "f1": 1.0, "substring_exact_match": 1.0, "eventqa_recall": 0.0},
        ),
        (
            "eventqa_65536",
            "She found the letter after Elena opened the red door",
            ["Elena opened the red door", "letter"],
            {"exact_match": 0.0, "f1": 0.6667, "substring_exact_match": 1.0, "eventqa_recall": 1.0},
        ),
        (
            "longmemeval_s*",
            "",
            ["7"],
            {"exact_match": 0.0, "f1": 0.0, "substring_exact_match": 0.0},
        ),
    ],
)
def test_post_process_gives_the_official_metrics(source, prediction, gold, official):
    ours = m.post_process(prediction, gold, source)
    assert {k: round(v, 4) for k, v in ours.items()} == official


def test_recsys_recall_matches_titles_by_edit_distance(samples):
    names = mab.movie_names(str(DATA / "entity2id.json"))
    assert names[4] == "Alien" and names[0] == "Star Wars"
    reply = "The recommendations are: \n1.Alien (1979)\n2. Aliens\n3. Star War\n4. Toy Story"
    assert m.post_process(reply, ["4", "5"], "recsys_redial_full", movie_names=names) == {
        "recsys_recall@1": 0.5,
        "recsys_recall@5": 1.0,
        "recsys_recall@10": 1.0,
    }
    assert (
        m.recsys_recall("Jaws, Heat", ["7"], names)["recsys_recall@1"] == 1.0
    )  # no "1.": comma-separated


def test_score_headline_per_dataset_failed_calls_and_the_official_mean(samples):
    replies = {s.sample_id: s.answers[0] for s in samples}
    replies["ruler_qa1_197K-0-0"] = "The lighthouse keeper was Mary Blake."  # substring match: 100
    replies["icl_trec_coarse_6600shot_balance-0-0"] = (
        "label: 1"  # exact match on the parsed line: 0
    )
    preds = [
        Prediction(sample_id=k, text=v)
        for k, v in replies.items()
        if k != "factconsolidation_sh_6k-0-2"
    ]
    preds.append(Prediction(sample_id="factconsolidation_sh_6k-0-2", text=None, error="timeout"))
    result = score("memoryagentbench", preds, samples=samples)
    data = result["datasets"]
    assert data["ruler_qa1_197K"]["headline"] == 100.0
    assert data["icl_trec_coarse_6600shot_balance"]["headline"] == pytest.approx(66.67)
    assert (
        data["factconsolidation_sh_6k"]["headline"] == pytest.approx(66.67)
        and data["factconsolidation_sh_6k"]["official"] == 100.0
    )
    assert result["judge"] == "none" and result["n_failed"] == 1
    assert result["overall"] == pytest.approx(
        sum(d["headline"] for d in data.values()) / len(data), abs=0.01
    )
    assert set(result["competencies"]) == {
        "Accurate_Retrieval",
        "Test_Time_Learning",
        "Long_Range_Understanding",
        "Conflict_Resolution",
    }


def test_judged_datasets_send_the_official_judge_prompts(samples):
    def reply(prompt: str) -> str:
        if "Is the model response correct?" in prompt or "unanswerable" in prompt:
            return "Yes."
        if '"fluency"' in prompt and "Text:" in prompt:
            return 'Output: {"fluency": 1}'
        if "Key points:" in prompt and "recall" in prompt:
            return 'Reasoning... {"recall": 1}'
        return '{"precision": 3, "sentence_count": 4}'

    judge = ScriptedChatModel(reply_fn=reply)
    picked = [s for s in samples if s.dataset in ("longmemeval_s*", "infbench_sum_eng_shots2")]
    result = score(
        "memoryagentbench", {s.sample_id: "Seven." for s in picked}, samples=samples, judge=judge
    )
    prompts = [c["prompt"] for c in judge.calls]
    lme = [s for s in picked if s.dataset == "longmemeval_s*"]
    assert prompts[0] == mj.longmemeval_prompt(
        "single-session-user", lme[0].metadata["question"], ["7"], "Seven.", abstention=False
    )
    assert (
        "Does the model correctly identify the question as unanswerable?" in prompts[1]
    )  # question id q_9_abs
    assert {c.get("max_tokens") for c in judge.calls[:2]} == {10} and {
        c["temperature"] for c in judge.calls[:2]
    } == {0.0}
    assert result["datasets"]["longmemeval_s*"]["headline"] == 100.0
    # InfBench-Sum: recall 1/2, precision 3/4, fluency 1 -> F1 0.6
    assert result["datasets"]["infbench_sum_eng_shots2"]["headline"] == 60.0
    assert {c["temperature"] for c in judge.calls[2:]} == {0.1} and {
        c.get("max_tokens") for c in judge.calls[2:]
    } == {4096}


def test_summary_judge_replies_that_do_not_parse_are_counted_not_dropped():
    assert mj.parse_json("no json here") is None
    assert mj.parse_json('{bad} ```json{"recall": 5}```') == {
        "recall": 5
    }  # the last {...} fails, the fenced block is read
    assert (
        mj.parse_json('{"recall": 5} {bad}') is None
    )  # the last {...} fails and there is no fenced block
    assert (
        mj.summary_score({"fluency": 1}, None, {"precision": 1, "sentence_count": 1}, 2).f1 is None
    )
    assert (
        mj.summary_score({"fluency": 0}, {"recall": 2}, {"precision": 1, "sentence_count": 1}, 2).f1
        == 0.0
    )


def test_full_context_run_sends_the_long_context_agents_message(tmp_path, samples):
    with RecordingServer(lambda request: "Answer: Mary Blake") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="memoryagentbench",
            strategies=("full_context",),
            data_path=str(DATA),
            datasets=("ruler_qa1_197K",),
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path, llm=llm, show_progress=False)
    official = {
        (r["source"], r["question_index"]): r
        for r in OFFICIAL
        if r["agent"].startswith("Long") and r["chunk_size"] == 4096
    }
    assert {tuple(m["role"] for m in r["messages"]) for r in server.requests} == {
        ("system", "user")
    }
    assert {r["messages"][0]["content"] for r in server.requests} == {
        official[("ruler_qa1_197K", 0)]["system"]
    }
    sent = sorted(_sha(r["messages"][-1]["content"]) for r in server.requests)
    assert sent == sorted(official[("ruler_qa1_197K", i)]["user_sha256"] for i in range(3))
    assert {r.get("max_tokens", r.get("max_completion_tokens")) for r in server.requests} == {50}
    assert {r["temperature"] for r in server.requests} == {0.7}
    assert {r["prediction"] for r in read_rows(tmp_path)} == {"Answer: Mary Blake"}


def test_rag_run_sends_the_bm25_agents_message(tmp_path):
    with RecordingServer(lambda request: "Town-78") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="memoryagentbench",
            strategies=("rag",),
            data_path=str(DATA),
            datasets=("factconsolidation_sh_6k",),
            llm_cache=False,
            strategy_options={
                "rag": {"top_k": mab.RAG_TOP_K, "chunk_size": p.CHUNK_SIZE, "chunk_unit": "tokens"}
            },
        )
        run_experiment(cfg, tmp_path, llm=llm, show_progress=False)
    official = [
        r
        for r in OFFICIAL
        if r["agent"] == "Simple_rag_bm25"
        and r["chunk_size"] == 4096
        and r["source"] == "factconsolidation_sh_6k"
    ]
    assert [[m["role"] for m in r["messages"]] for r in server.requests] == [
        r["roles"] for r in official
    ]
    assert {r["messages"][0]["content"] for r in server.requests} == {r["system"] for r in official}
    assert sorted(_sha(r["messages"][-1]["content"]) for r in server.requests) == sorted(
        r["user_sha256"] for r in official
    )
    assert {r.get("max_tokens", r.get("max_completion_tokens")) for r in server.requests} == {10}


def test_ten_thousand_questions_over_one_context_load_share_one_corpus_and_score(tmp_path):
    record = json.loads((DATA / "Conflict_Resolution.jsonl").read_text().splitlines()[0])
    record["questions"] = [f"what is the capital of Nowhere-{i}?" for i in range(10_000)]
    record["answers"] = [[f"Town-{i}"] for i in range(10_000)]
    (tmp_path / "Conflict_Resolution.jsonl").write_text(json.dumps(record) + "\n")
    many = load_benchmark("memoryagentbench", tmp_path, hub=False)
    assert len(many) == 10_000 and len({id(s.corpus) for s in many}) == 1
    result = score(
        "memoryagentbench", {s.sample_id: f"Answer: {s.answers[0]}" for s in many}, samples=many
    )
    assert (
        result["overall"] == 100.0 and result["datasets"]["factconsolidation_sh_6k"]["n"] == 10_000
    )


def test_a_record_without_questions_is_one_question_over_the_whole_answer_list(tmp_path):
    record = json.loads((DATA / "Conflict_Resolution.jsonl").read_text().splitlines()[0])
    record["questions"], record["answers"] = [], ["Town-1", "Town-2"]
    (tmp_path / "Conflict_Resolution.jsonl").write_text(json.dumps(record) + "\n")
    (only,) = load_benchmark("memoryagentbench", tmp_path, hub=False)
    assert only.answers == ("Town-1", "Town-2") and only.question.text.endswith(
        "Based on the provided Knowledge Pool,  \nAnswer:"
    )
    assert BENCHMARKS.get("memoryagentbench").score([])["overall"] is None  # no pairs: no headline


def test_nearest_title_ties_break_the_same_way_every_run():
    # "Alien" and "Aliens" are both one edit from "Aliena": the first in sorted order wins, whatever
    # the hash seed
    assert m.nearest_movie("Aliena", ["Alien", "Aliens"]) == "Alien"
    assert (
        m.nearest_movie("Aliena", ["Aliens", "Alien"]) == "Aliens"
    )  # callers pass the sorted, unique names
