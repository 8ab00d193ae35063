"""Loading every benchmark from tiny fixture files in the official formats, and scoring it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from longctx import experiments
from longctx.experiments.benchmarks import (
    BENCHMARKS,
    BenchmarkDataError,
    Prediction,
    full_context_prompt,
    load_benchmark,
)
from longctx.experiments.benchmarks.corpusqa import split_prompt
from tests.scripted import ScriptedChatModel

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


def test_registry_lists_all_benchmarks():
    assert BENCHMARKS.names() == [
        "babilong",
        "browsecomp_plus",
        "corpusqa",
        "longbench",
        "longbench_e",
        "longbench_v2",
        "loong",
        "lveval",
        "memoryagentbench",
        "oolong",
        "own",
        "ruler_hqa",
        "synth",
    ]


@pytest.mark.parametrize(
    "benchmark, options",
    [
        ("longbench", {"datasets": ["narrativeqa"]}),
        ("longbench_v2", {}),
        ("lveval", {"datasets": ["lic_mixup"]}),
        ("loong", {}),
        ("corpusqa", {}),
    ],
)
def test_missing_files_fail_fast_naming_dataset_and_path(tmp_path, benchmark, options):
    with pytest.raises(BenchmarkDataError, match=str(tmp_path)):
        load_benchmark(benchmark, tmp_path, **options)


def test_default_root_is_longctx_data_dir(monkeypatch):
    monkeypatch.setenv("LONGCTX_DATA_DIR", str(FIXTURES))
    assert len(load_benchmark("longbench_v2")) == 3


def test_longbench_v1_jsonl_and_parquet():
    samples = load_benchmark(
        "longbench", FIXTURES / "longbench", datasets=["hotpotqa", "trec", "gov_report"]
    )
    hot, trec, gov = samples[0], samples[2], samples[3]
    assert hot.sample_id == "hotpotqa-001" and hot.answers == ("London",)
    assert (
        hot.question.text == "Where was Ada born?"
        and "Only give me the answer" in hot.question.instruction
    )
    assert hot.metadata["category"] == "multi_doc_qa" and hot.metadata["max_new_tokens"] == 32
    assert (
        trec.metadata["all_classes"] == ["Human", "Location", "Number"]
        and not trec.metadata["chat_template"]
    )
    assert (
        gov.question.text == "Write a one-page summary of the report."
    )  # empty input gets the task
    prompt = full_context_prompt(hot)
    assert prompt.startswith(
        "Answer the question based on the given passages."
    ) and prompt.endswith("Question: Where was Ada born?\nAnswer:")
    assert "Passage 2:\nBob was born in Paris." in prompt


def test_longbench_unknown_dataset_is_explained():
    with pytest.raises(KeyError, match="known"):
        load_benchmark("longbench", FIXTURES / "longbench", datasets=["hotpot"])


def test_longbench_scores_per_dataset_category_and_overall():
    samples = load_benchmark("longbench", FIXTURES / "longbench", datasets=["hotpotqa", "trec"])
    preds = {
        "hotpotqa-001": "London",
        "hotpotqa-002": "Paris, France",
        "trec-001": "Location\nHuman",
    }
    result = experiments.score("longbench", preds, samples=samples)
    assert result["datasets"] == {
        "hotpotqa": 100.0,
        "trec": 100.0,
    }  # max over golds; first-line cut
    assert (
        result["categories"] == {"multi_doc_qa": 100.0, "few_shot": 100.0}
        and result["overall"] == 100.0
    )
    failed = experiments.score(
        "longbench", [("hotpotqa-001", "London"), ("hotpotqa-002", None)], samples=samples
    )
    assert failed["datasets"]["hotpotqa"] == 50.0 and failed["n_failed"] == 1


def test_longbench_e_buckets():
    samples = load_benchmark("longbench_e", FIXTURES / "longbench", datasets=["hotpotqa"])
    assert [s.metadata["length_bucket"] for s in samples] == ["0-4k", "8k+"]
    result = experiments.score("longbench_e", [(samples[0], "London"), (samples[1], "Rome")])
    assert result["length_buckets"]["hotpotqa"] == {"0-4k": 100.0, "4-8k": None, "8k+": 0.0}
    assert result["datasets"]["hotpotqa"] == 50.0


def test_longbench_v2_loads_choices_and_instruction():
    samples = load_benchmark("longbench_v2", FIXTURES / "longbench_v2")
    s = samples[0]
    assert s.question.choices == {"A": "2019", "B": "2020", "C": "2021", "D": "2022"}
    assert (
        s.question.instruction
        == 'Format your response as follows: "The correct answer is (insert answer here)".'
    )
    assert (s.metadata["difficulty"], s.metadata["length"]) == ("easy", "short")
    prompt = full_context_prompt(s)
    assert (
        "<text>\nReport 1. The fiscal year closed in 2019.\n</text>" in prompt
        and "(D) 2022\n\nFormat" in prompt
    )


def test_longbench_v2_failed_calls_counted_and_official_number_kept():
    samples = load_benchmark("longbench_v2", FIXTURES / "longbench_v2")
    preds = [
        Prediction("v2-1", "The correct answer is (A)"),
        Prediction("v2-2", "I am not sure"),
        Prediction("v2-3", None, error="timeout"),
    ]
    result = experiments.score("longbench_v2", preds, samples=samples)
    assert (result["overall"], result["n_failed"], result["n_invalid"]) == (33.3, 1, 2)
    assert (
        result["official_drops_failed"]["overall"] == 50.0
        and result["official_drops_failed"]["n"] == 2
    )
    assert result["compensated"]["overall"] == 50.0  # (1 + .25 + .25) / 3
    assert result["version"] == 2 and "longbench_v2" in result["metric_versions"]


def test_lveval_flat_and_nested_files_keywords_and_scoring():
    samples = load_benchmark(
        "lveval",
        FIXTURES / "lveval",
        datasets=["hotpotwikiqa_mixup", "cmrc_mixup"],
        lengths=["16k"],
    )
    en, zh = samples
    assert en.metadata["answer_keywords"] == "London" and en.metadata["confusing_facts"] == [
        "A confusing fact."
    ]
    assert zh.question.instruction.startswith("只需要") and full_context_prompt(zh).endswith(
        "问题：艾达出生在哪里？\n回答："
    )
    result = experiments.score(
        "lveval", {en.sample_id: "UK", zh.sample_id: "北京"}, samples=samples
    )
    assert result["datasets"] == {"hotpotwikiqa_mixup": {"16k": 0.0}, "cmrc_mixup": {"16k": 100.0}}
    assert result["scoring"] == "answers[0] only (official)"
    fixed = experiments.score("lveval", {en.sample_id: "UK"}, samples=samples, all_answers=True)
    # keyword gate still applies to the second gold: "uk" has no overlap with "london" -> 0
    assert (
        fixed["datasets"]["hotpotwikiqa_mixup"]["16k"] == 0.0
        and fixed["scoring"] == "all_answers (fixed)"
    )


def test_loong_assembles_titled_documents_and_shuffles_like_the_official_rng():
    samples = load_benchmark("loong", FIXTURES / "loong")
    fin, paper, legal = samples
    rng = random.Random(1000000007)
    order = ["AlphaCo", "BetaCo", "GammaCo"]
    rng.shuffle(order)
    rng.shuffle(order)  # financial: shuffled before packing and again after
    assert [d.text.split()[0] for d in fin.corpus] == order
    # Official quirk: "2024-AlphaCo-j.txt".split("-")[-1] titles every 2024 report 《j》.
    assert [d.title for d in fin.corpus] == ["j", "j", "j"] and full_context_prompt(fin).startswith(
        "《j》\n"
    )
    fixed = load_benchmark("loong", FIXTURES / "loong", datasets=["financial"], fix_titles=True)[0]
    assert [d.title for d in fixed.corpus] == order and fixed.metadata[
        "titles"
    ] == "fixed (document names)"
    assert paper.corpus[0].title == "Attention Tricks" and full_context_prompt(paper).startswith(
        "Attention Tricks\n# Attention"
    )
    assert legal.corpus[0].text == "原告甲诉被告乙。判决乙赔偿。" and legal.answers == ("['甲']",)
    assert (
        fin.question.instruction == "Answer with the company name."
        and fin.metadata["task"] == "Comparison"
    )
    unshuffled = load_benchmark("loong", FIXTURES / "loong", shuffle=False, datasets=["financial"])
    assert [d.text.split()[0] for d in unshuffled[0].corpus] == ["AlphaCo", "BetaCo", "GammaCo"]


def test_loong_scores_through_a_judge():
    samples = load_benchmark("loong", FIXTURES / "loong")
    judge = ScriptedChatModel(
        replies=["Good. Rating: [[100]]", "Unparseable.", "Empty answer. Rating: [[1]]"]
    )
    preds = [(samples[0], "GammaCo"), (samples[1], "attention"), (samples[2], None)]
    result = experiments.score("loong", preds, judge=judge)
    assert (
        len(judge.calls) == 3 and "[Gold Answer]\nGammaCo" in judge.calls[0]["prompt"]
    )  # a failed generation is judged as ""
    assert (
        "{docs}" not in judge.calls[0]["prompt"] and "{docs}" in judge.calls[1]["prompt"]
    )  # paper quirk
    assert (result["avg_score"], result["perfect_rate"], result["parse_success_rate"]) == (
        50.5,
        0.5,
        0.6667,
    )
    assert result["by_set_level"]["set1_level2"]["avg_score"] == 100.0 and result["n_failed"] == 1
    with pytest.raises(ValueError, match="judge"):
        experiments.score("loong", preds)


def test_corpusqa_splits_documents_and_rebuilds_the_prompt():
    samples = load_benchmark("corpusqa", FIXTURES / "corpusqa")
    s = samples[0]
    assert [d.text for d in s.corpus] == [
        "ACME Corp 2023 annual report.\n\nRevenue: 120.50 million.",
        "Zenith Inc 2023 annual report.\nRevenue: 80.25 million.",
    ]
    assert s.question.text == "What is the total revenue of all companies in million?"
    assert (
        s.question.instruction.startswith("# Output requirements:")
        and "The answer is: xxx" in s.question.instruction
    )
    assert (s.dataset, s.metadata["set"]) == ("financial_en", 1)
    from longctx.experiments.benchmarks.base import read_records

    original = read_records(FIXTURES / "corpusqa" / "financial_en_set1.jsonl")[0]["prompt"][0][
        "content"
    ]
    assert full_context_prompt(s) == original


def test_corpusqa_split_prompt_rejects_other_formats():
    with pytest.raises(ValueError, match="Document N"):
        split_prompt("no headers here")


def test_corpusqa_scores_with_deterministic_checker_and_with_judge():
    samples = load_benchmark("corpusqa", FIXTURES / "corpusqa")
    preds = {
        "financial_en_1": "Sum... The answer is: 200.75",
        "financial_en_2": "The answer is: []",
    }
    result = experiments.score("corpusqa", preds, samples=samples)
    assert (result["overall"], result["domains"], result["judge"]) == (
        100.0,
        {"financial_en": 100.0},
        "deterministic-equivalence",
    )
    judge = ScriptedChatModel(replies=["They match. [[YES]]"])
    judged = experiments.score(
        "corpusqa",
        {"financial_en_1": "The answer is: 200.75", "financial_en_2": None},
        samples=samples,
        judge=judge,
    )
    assert judged["overall"] == 50.0 and judged["n_failed"] == 1 and judged["judge"] == "llm"
    assert "Answer 1: 200.75\nAnswer 2: 200.75" in judge.calls[0]["prompt"]


def test_corpusqa_judge_errors_count_as_wrong():
    samples = load_benchmark("corpusqa", FIXTURES / "corpusqa")

    def boom(prompt: str) -> str:
        raise RuntimeError("rate limited")

    result = experiments.score(
        "corpusqa",
        {"financial_en_1": "The answer is: 200.75"},
        samples=samples,
        judge=ScriptedChatModel(reply_fn=boom),
    )
    assert (result["overall"], result["n_judge_errors"]) == (0.0, 1)


@pytest.mark.parametrize(
    "predictions, error, match",
    [
        ({"nope": "x"}, KeyError, "No sample"),
        ([("v2-1", "a"), ("v2-1", "b")], ValueError, "more than one"),
        ([("v2-1", 3)], TypeError, "expected str"),
        ([], ValueError, "No predictions"),
    ],
)
def test_prediction_errors_are_explained(predictions, error, match):
    samples = load_benchmark("longbench_v2", FIXTURES / "longbench_v2")
    with pytest.raises(error, match=match):
        experiments.score("longbench_v2", predictions, samples=samples)


def test_predictions_from_another_benchmark_are_refused():
    samples = load_benchmark("longbench_v2", FIXTURES / "longbench_v2")
    with pytest.raises(ValueError, match="cannot be scored"):
        experiments.score("lveval", [(samples[0], "x")])
