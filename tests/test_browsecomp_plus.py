"""BrowseComp-Plus: the loader (decrypted release, qrels, corpus rows in JSON Lines and Parquet),
the per-question corpora chosen once and cached, the full-corpus setting, what an answer read, and
the scorer's figures. The fixture (``tests/fixtures/benchmarks/browsecomp_plus``) is invented text
in the release's layout: the real release must not appear as plain text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from longctx.experiments.benchmarks import BenchmarkDataError, Prediction, load_benchmark, score
from longctx.experiments.benchmarks import browsecomp_plus as bp
from longctx.experiments.benchmarks import browsecomp_plus_corpus as bc
from longctx.experiments.benchmarks import browsecomp_plus_data as bd
from longctx.experiments.metrics import browsecomp_plus as m
from longctx.experiments.metrics.reading import Reading, reading_of
from longctx.retrieval.contract import Answer, Evidence, Question, Step, Usage

DATA = Path(__file__).parent / "fixtures" / "benchmarks" / "browsecomp_plus"


def _load(tmp_path: Path, data: Path = DATA, **options):
    return load_benchmark("browsecomp_plus", data, cache_dir=tmp_path / "cache", **options)


def test_each_question_gets_n_documents_holding_its_evidence_and_gold(tmp_path):
    samples = _load(tmp_path, docs_per_query=10)
    assert [s.sample_id for s in samples] == ["101", "102", "103"]
    qrels = bd.read_qrels(DATA / "qrel_evidence.txt")
    golds = bd.read_qrels(DATA / "qrel_golds.txt")
    for s in samples:
        ids = [d.doc_id for d in s.corpus]
        assert len(ids) == len(set(ids)) == 10
        assert set(qrels[s.sample_id]) | set(golds[s.sample_id]) <= set(ids)
        assert s.metadata["evidence_doc_ids"] == qrels[s.sample_id]
        assert s.dataset == "n10" and s.question.protocol.max_new_tokens == bp.MAX_NEW_TOKENS
        assert s.question.instruction.startswith("Your response should be in the following format")
    corpus = {json.loads(x)["docid"]: json.loads(x)["text"] for x in open(DATA / "corpus.jsonl")}
    assert all(d.text == corpus[d.doc_id] for s in samples for d in s.corpus)  # texts: the corpus's


def test_a_question_keeps_its_documents_whatever_else_is_loaded(tmp_path):
    every = {s.sample_id: [d.doc_id for d in s.corpus] for s in _load(tmp_path, docs_per_query=12)}
    (alone,) = _load(tmp_path / "other", docs_per_query=12, query_ids=["102"])
    assert [d.doc_id for d in alone.corpus] == every["102"]
    reseeded = _load(tmp_path / "seeded", docs_per_query=12, seed=1)
    assert [d.doc_id for d in reseeded[1].corpus] != every["102"]


def test_choices_are_cached_and_a_tampered_cache_is_chosen_again(tmp_path, monkeypatch):
    first = [[d.doc_id for d in s.corpus] for s in _load(tmp_path, docs_per_query=10)]
    (cached,) = (tmp_path / "cache" / "browsecomp_plus").glob("selection-*.json")

    def no_scan(files):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(bc, "corpus_ids", no_scan)
    assert [[d.doc_id for d in s.corpus] for s in _load(tmp_path, docs_per_query=10)] == first
    data = json.loads(cached.read_text())
    data["queries"]["101"] = data["queries"]["102"]  # a cache edited by hand: checksum differs
    cached.write_text(json.dumps(data))
    with pytest.raises(AssertionError, match="cache should have answered"):
        _load(tmp_path, docs_per_query=10)


def test_a_changed_corpus_file_is_a_new_cache_key(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(DATA, data)
    _load(tmp_path, data, docs_per_query=10)
    with open(data / "corpus.jsonl", "a") as f:
        f.write(json.dumps({"docid": "9999", "text": "an added page", "url": ""}) + "\n")
    _load(tmp_path, data, docs_per_query=10)
    assert len(list((tmp_path / "cache" / "browsecomp_plus").glob("selection-*.json"))) == 2


def test_parquet_shards_give_the_same_samples_as_json_lines(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    data = tmp_path / "data"
    data.mkdir()
    for name in (bd.RELEASE_FILES[1], bd.QREL_EVIDENCE, bd.QREL_GOLDS):
        shutil.copy(DATA / (bd.RELEASE_FILES[0] if name == bd.RELEASE_FILES[1] else name), data)
    rows = [json.loads(x) for x in open(DATA / "corpus.jsonl")]
    (data / "corpus" / "data").mkdir(parents=True)
    for i in range(2):
        table = pa.Table.from_pylist(rows[i * 20 : (i + 1) * 20])
        pq.write_table(table, data / "corpus" / "data" / f"train-0000{i}-of-00002.parquet")
    ours = _load(tmp_path / "a", data, docs_per_query=10)
    want = _load(tmp_path / "b", docs_per_query=10)
    assert [[d.doc_id for d in s.corpus] for s in ours] == [
        [d.doc_id for d in s.corpus] for s in want
    ]
    assert ours[0].corpus.fingerprint == want[0].corpus.fingerprint


def test_the_full_setting_shares_one_corpus(tmp_path):
    samples = _load(tmp_path, datasets=["full"])
    assert len(samples[0].corpus) == 40 and all(s.corpus is samples[0].corpus for s in samples)
    assert {s.dataset for s in samples} == {"full"}
    assert _load(tmp_path, datasets=["n12"])[0].dataset == "n12"


def test_missing_files_say_how_to_get_and_decrypt_them(tmp_path):
    with pytest.raises(BenchmarkDataError) as err:
        _load(tmp_path, tmp_path)
    text = str(err.value)
    assert "decrypt_dataset.py --output" in text and "Tevatron/browsecomp-plus-corpus" in text
    assert "qrel_evidence.txt" in text
    shutil.copy(DATA / bd.RELEASE_FILES[0], tmp_path)
    with pytest.raises(BenchmarkDataError, match="no corpus in .*browsecomp-plus-corpus"):
        _load(tmp_path, tmp_path)


def test_too_few_documents_for_the_evidence_is_refused(tmp_path):
    with pytest.raises(BenchmarkDataError, match="cannot hold its 4 evidence"):
        _load(tmp_path, docs_per_query=3)


def _answer(evidence=(), steps=(), stopped=None) -> Answer:
    return Answer(
        answer="x",
        raw="x",
        evidence=[Evidence(doc_id=d, title="", text="") for d in evidence],
        usage=Usage(),
        steps=[Step(s) for s in steps],
        strategy="s",
        question=Question(text="q"),
        stopped=stopped,
    )


def test_reading_counts_evidence_declared_documents_whole_streams_and_searches():
    rag = reading_of(_answer(["a", "b", "a"], [{"node": "retrieve", "chunk_ids": [1]}]))
    assert rag == Reading(("a", "b"), False, {"search": 1})
    agent = reading_of(
        _answer(
            [],
            [
                {"node": "tools", "tool": "search", "doc_ids": ["c", "d"]},
                {"node": "tools", "tool": "get_document", "docids": ["e"]},
                {"node": "tools", "tool": "search", "retrieved_docids": ["c"]},
            ],
        )
    )
    assert agent.doc_ids == ("c", "d", "e")
    assert agent.tool_calls == {"search": 2, "get_document": 1}
    stream = [{"node": "final_answer", "chunks": 9}]
    assert reading_of(_answer([], stream)).documents(["p", "q"]) == {"p", "q"}
    stopped = reading_of(_answer([], stream, stopped="budget"))
    assert not stopped.whole_corpus and not stopped.completed
    whole = {"node": "build_prompt", "context_window": 8, "truncated": False}
    assert reading_of(_answer([], [whole])).whole_corpus
    assert not reading_of(_answer([], [whole | {"truncated": True}])).whole_corpus
    row = {"status": "ok", "evidence_doc_ids": ["z"], "steps": [whole], "stopped": None}
    assert reading_of(row) == Reading(("z",), True, {})
    assert reading_of({"status": "failed"}) == Reading(completed=False)


def test_judge_replies_are_read_as_the_official_parser_reads_them():
    bold = "**extracted_final_answer:** Port Velm\n**reasoning:** same\n**correct:** yes\n"
    assert m.parse_judge_reply(bold + "**confidence:** 85%")["confidence"] == 85.0
    assert m.parse_judge_reply(bold)["correct"] is True
    plain = m.parse_judge_reply(
        "extracted_final_answer: A\nreasoning: r\ncorrect: NO\nconfidence: 250"
    )
    assert plain["correct"] is False and plain["confidence"] == 100 and plain["reasoning"] == "r"
    assert m.parse_judge_reply("I think so")["parse_error"]
    assert m.parse_judge_reply(None)["parse_error"]


def test_calibration_error_leaves_out_the_last_bin_and_needs_100_answers():
    assert m.calibration_error([50.0] * 99, [True] * 99) == 0.0
    # 200 answers: bins of 100; only the first (lowest confidences) is summed
    confidences = [0.0] * 100 + [100.0] * 100
    assert m.calibration_error(confidences, [True] * 200) == pytest.approx(
        (0.5 * 1.0**2) ** 0.5 * 100
    )


def test_the_scorer_counts_unfinished_answers_wrong_and_reports_recall_and_searches(tmp_path):
    samples = _load(tmp_path, docs_per_query=10)
    s101, s102, s103 = samples
    evidence = list(s101.metadata["evidence_doc_ids"])
    predictions = [
        Prediction(
            "101",
            "Explanation: x\nExact Answer: Port Velm\nConfidence: 90%",
            reading=Reading(tuple(evidence[:2]), False, {"search": 3}),
        ),
        Prediction("102", "Exact Answer: The Orrin Bridge", reading=Reading(completed=False)),
        Prediction("103", None, "boom"),
    ]
    result = score("browsecomp_plus", predictions, samples=samples)
    assert result["Accuracy (%)"] == result["overall"] == round(100 / 3, 2)
    assert result["Recall (%)"] == round(100 * (2 / 3) / 3, 2)
    assert result["avg_tool_stats"] == {"search": 1.0} and result["search_calls"] == 1.0
    assert [r["correct"] for r in result["per_query"]] == [True, None, None]
    assert result["judge"] == "none" and set(result["datasets"]) == {"n10"}


def test_the_cli_runs_reports_and_exports_both_settings(tmp_path, monkeypatch):
    """``longctx run --benchmark browsecomp_plus`` (RAG over each question's 10 documents, then the
    full corpus with ``--inject-once``), ``report`` (its figures per setting) and ``export``
    (the official run directory, what RAG's chunks read)."""
    from longctx.experiments.cli.app import main
    from tests.recording_server import RecordingServer

    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    reply = "Explanation: read it [1000].\nExact Answer: Port Velm\nConfidence: 70%"
    runs = {}
    with RecordingServer(lambda request: reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        for setting, extra in (("n10", []), ("full", ["--inject-once"])):
            runs[setting] = tmp_path / setting
            argv = [
                "run",
                "--benchmark",
                "browsecomp_plus",
                "--data",
                str(DATA),
                "--subset",
                setting,
                "--strategies",
                "rag",
                "--llm",
                "openai:rec",
                "--option",
                "rag.top_k=2",
                "--out",
                str(runs[setting]),
                "--yes",
                *extra,
            ]
            assert main(argv) == 0
    sent = server.requests[0]["messages"][-1]["content"]
    assert "Exact Answer: {your succinct, final answer}" in sent
    assert {r.get("max_tokens", r.get("max_completion_tokens")) for r in server.requests} == {
        bp.MAX_NEW_TOKENS
    }
    for setting, run in runs.items():
        assert main(["report", str(run), "--no-plots", "--no-html"]) == 0
        scores = json.loads((run / "report" / "scores.json").read_text())["rag"]
        assert scores["overall"] == round(100 / 3, 2)  # 101's answer; the fallback judge
        assert scores["tasks"]["search calls / question"] == {setting: 1.0}
        table = (run / "report" / "by_task_length.md").read_text()
        assert "the official figures per corpus setting" in table
        assert main(["export", str(run), "--format", "official"]) == 0
        files = sorted((run / "official" / "runs" / "rag").glob("*.json"))
        exported = [json.loads(f.read_text()) for f in files]
        assert [e["query_id"] for e in exported] == ["101", "102", "103"]
        assert all(
            e["status"] == "completed" and e["result"][0]["output"] == reply for e in exported
        )
        assert all(e["tool_call_counts"] == {"search": 1} for e in exported)
        assert all(1 <= len(e["retrieved_docids"]) <= 2 for e in exported)  # top-2 chunks' docs


def test_ceilings_say_whether_each_strategys_reading_covers_the_evidence(
    tmp_path, monkeypatch, capsys
):
    """``longctx ceilings DATA --benchmark browsecomp_plus --loader-option docs_per_query=N``: the
    LLM-free rules over each question's evidence documents (full context holds all 12 small
    documents; RAG's top 3 chunks cannot hold 4 evidence documents)."""
    from longctx.experiments.cli.app import main

    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    argv = ["ceilings", str(DATA), "--benchmark", "browsecomp_plus", "--json"]
    argv += ["--loader-option", "docs_per_query=12", "--strategies", "rag,full_context"]
    argv += ["--option", "rag.top_k=3", "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    rows = {c["strategy"]: c for c in json.loads(capsys.readouterr().out)["ceilings"]}
    assert rows["full_context"]["complete_share"] == 1.0
    reach = {q["sample_id"]: q for q in rows["rag"]["per_question"]}
    assert reach["103"]["total"] == 4 and reach["103"]["reached"] < 4  # 3 chunks, 4 documents
    assert main(["ceilings", str(DATA), "--subset", "full"]) != 0
    assert "need --benchmark" in capsys.readouterr().err


def test_hard_negatives_put_the_releases_own_negatives_in_first(tmp_path):
    (hard,) = _load(tmp_path, docs_per_query=8, negatives="hard", query_ids=["101"])
    (plain,) = _load(tmp_path, docs_per_query=8, query_ids=["101"])
    listed = bd.read_queries(DATA)[0].negatives
    assert set(listed) <= {d.doc_id for d in hard.corpus}
    assert not set(listed) <= {d.doc_id for d in plain.corpus}
    assert hard.metadata["negatives"] == "hard"
