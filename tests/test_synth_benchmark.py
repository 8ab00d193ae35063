"""The generated corpus as a registered benchmark, scored by the CorpusQA metric; and the
demo wiring."""

import pytest

from longctx.experiments import score
from longctx.experiments.benchmarks import (
    BENCHMARKS,
    BenchmarkDataError,
    full_context_prompt,
    load_benchmark,
)


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    from longctx.experiments.synth import SynthConfig, generate

    out = tmp_path_factory.mktemp("synth") / "corpus"
    generate(
        SynthConfig(
            domain="finance", target_tokens=20_000, seed=3, num_questions=6, doc_tokens=1500
        ),
        out,
    )
    return out


def test_registered_and_loaded_with_evidence(synth_dir):
    assert "synth" in BENCHMARKS
    samples = load_benchmark("synth", synth_dir)
    assert len(samples) == 6
    s = samples[0]
    assert s.benchmark == "synth" and s.dataset == "finance" and len(s.answers) == 1
    assert s.metadata["difficulty"] in {"easy", "medium", "hard"} and s.metadata["evidence_doc_ids"]
    assert set(s.metadata["evidence_doc_ids"]) <= {d.doc_id for d in s.corpus}
    assert "The answer is: xxx" in s.question.instruction
    assert full_context_prompt(s).endswith(s.question.instruction)


def test_gold_answers_score_100_and_wrong_ones_0(synth_dir):
    samples = load_benchmark("synth", synth_dir)
    perfect = score(
        "synth",
        {s.sample_id: f"Reasoning... The answer is: {s.answers[0]}" for s in samples},
        samples=samples,
    )
    assert perfect["overall"] == 100.0 and perfect["judge"] == "deterministic-equivalence"
    assert set(perfect["difficulty"].values()) == {100.0}
    wrong = score(
        "synth", {s.sample_id: "The answer is: not a real answer" for s in samples}, samples=samples
    )
    assert wrong["overall"] == 0.0
    failed = score("synth", {s.sample_id: None for s in samples}, samples=samples)
    assert failed["n_failed"] == 6 and failed["overall"] == 0.0


def test_missing_folder_is_explained(tmp_path):
    with pytest.raises(BenchmarkDataError, match="longctx synth"):
        load_benchmark("synth", tmp_path)


def test_runner_and_report_on_the_synthetic_benchmark(synth_dir, tmp_path):
    """Evidence recall appears in the report for retrieval strategies on generated corpora."""
    from longctx.experiments.reports.report import build_report
    from longctx.experiments.runner import RunConfig, run_experiment
    from tests.scripted import ScriptedChatModel

    samples = load_benchmark("synth", synth_dir)[:3]
    cfg = RunConfig(
        benchmark="synth",
        strategies=("rag",),
        data_path=str(synth_dir),
        llm_cache=False,
        strategy_options={"rag": {"top_k": 5}},
    )
    run_experiment(
        cfg,
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The answer is: []"),
        samples=samples,
        show_progress=False,
    )
    summary = build_report(tmp_path, samples=samples, plots=False)["summary"][0]
    assert summary["strategy"] == "rag" and 0.0 <= summary["evidence_recall"] <= 1.0


def test_runner_streams_questions_sharing_a_corpus_in_one_memagent_pass(synth_dir, tmp_path):
    import math

    from longctx.experiments.runner import RunConfig, read_rows, run_experiment
    from longctx.graphs.prompts import format_documents
    from longctx.retrieval import count_tokens
    from tests.scripted import ScriptedChatModel

    samples = load_benchmark("synth", synth_dir)[:3]
    llm = ScriptedChatModel(
        reply_fn=lambda p: "notes" if p.endswith("Updated memory:\n") else "The answer is: []"
    )
    cfg = RunConfig(
        benchmark="synth",
        strategies=("memagent",),
        llm_cache=False,
        strategy_options={"memagent": {"resume": False, "chunk_tokens": 8000}},
    )
    counts = run_experiment(cfg, tmp_path, llm=llm, samples=samples, show_progress=False)
    n = math.ceil(count_tokens(format_documents(samples[0].corpus.documents)) / 8000)
    assert counts["ok"] == 3 and len(llm.calls) == 3 * (n + 1)
    first_chunk = [c["prompt"].split("<section>\n", 1)[1][:200] for c in llm.calls[:3]]
    problems = {
        c["prompt"].split("<problem> \n", 1)[1].split("\n</problem>")[0] for c in llm.calls[:3]
    }
    assert (
        len(set(first_chunk)) == 1 and len(problems) == 3
    )  # chunk 0 read for all three questions first
    assert all(r["usage"]["llm_calls"] == n + 1 for r in read_rows(tmp_path))
