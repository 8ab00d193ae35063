"""Evidence ceilings: each strategy's rule on hand-made cases, agreement with the synth report's
evidence recall, the records behind MemAgent's rule, the report hook and ``longctx ceilings``."""

from __future__ import annotations

import json

import pytest

from longctx.experiments.ceilings.measure import (
    UPPER_BOUND_NOTE,
    Env,
    Item,
    compute_ceilings,
    format_table,
)
from longctx.experiments.synth.records import Record
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.plugin.ceiling import render_records
from longctx.graphs.plugin.registry import STRATEGIES
from longctx.retrieval import Corpus, tokens
from longctx.retrieval.contract import Question

TOPICS = {
    "Harbour": "The harbour authority repainted the lighthouse and inspected the breakwater.",
    "Farms": "Local farmers reported an early apple harvest and a shortage of pickers.",
    "Orchestra": "The city orchestra rehearsed a new symphony in the old theatre.",
    "Roads": "Engineers resurfaced the mountain road and added guard rails.",
    "Library": "The public library catalogued a donation of maritime charts.",
    "Cycling": "A cycling club organised a charity ride along the river.",
}


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    """Six single-topic documents (doc ids "0".."5"), about 300 words each."""
    return Corpus.from_texts([(text + " ") * 25 for text in TOPICS.values()], titles=list(TOPICS))


def cfg(strategy: str, **overrides):
    return STRATEGIES.get(strategy).make_config(**overrides)


def item(corpus, question: str, evidence, **extra) -> Item:
    return Item("q", corpus, Question(text=question), tuple(evidence), **extra)


def rule(strategy: str):
    """The evidence-ceiling rule the strategy registers."""
    return STRATEGIES.get(strategy).ceiling


# -- retrieval rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "question", "evidence", "top_k", "expected"),
    [
        ("rag", "apple harvest pickers farmers", ["1"], 1, (1, 1)),
        (
            "rag",
            "apple harvest pickers farmers",
            ["1", "4"],
            1,
            (1, 2),
        ),  # one chunk reaches one document
        ("rag", "symphony orchestra theatre", ["0"], 1, (0, 1)),
        ("rag", "apple harvest lighthouse breakwater", ["0", "1"], 4, (2, 2)),
        ("self_route", "maritime charts library", ["4"], 1, (1, 1)),
        ("self_ask", "charity ride cycling river", ["5", "2"], 1, (1, 2)),
    ],
)
def test_retrieval_rules_count_the_documents_of_the_retrieved_chunks(
    corpus, tmp_path, strategy, question, evidence, top_k, expected
):
    c = cfg(strategy, top_k=top_k, chunk_size=400)  # one chunk per document
    reach = rule(strategy).reach(c, item(corpus, question, evidence), Env(cache_dir=tmp_path))
    assert (reach.reached, reach.total) == expected
    assert reach.complete == (expected[0] == expected[1])


def test_self_ask_with_gold_sub_questions_unions_its_retrievals_up_to_the_cap(corpus, tmp_path):
    subs = (
        "What about the apple harvest?",
        "What about the symphony orchestra?",
        "What about the charity ride?",
    )
    it = item(corpus, "Anything?", ["1", "2", "5"], sub_questions=subs)
    env = Env(cache_dir=tmp_path, gold_sub_questions=True)
    assert (
        rule("self_ask")
        .reach(cfg("self_ask", top_k=1, chunk_size=400, max_iterations=2), it, env)
        .reached
        == 2
    )
    assert (
        rule("self_ask")
        .reach(cfg("self_ask", top_k=1, chunk_size=400, max_iterations=5), it, env)
        .reached
        == 3
    )
    with pytest.raises(ValueError, match="records"):
        rule("self_ask").reach(cfg("self_ask"), item(corpus, "Anything?", ["1"]), env)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            {"judge_mode": "exhaustive"},
            (3, 3),
        ),  # every chunk judged, perfect judges keep all evidence
        ({"judge_mode": "auto"}, (3, 3)),  # a tiny corpus is under exhaustive_max_tokens
        (
            {"judge_mode": "prefilter", "top_k": 1},
            (1, 3),
        ),  # only the top chunk of the question is judged
        ({"judge_mode": "auto", "exhaustive_max_tokens": 10, "top_k": 1}, (1, 3)),
        (
            {"judge_mode": "exhaustive", "sub_answer_context_tokens": 1},
            (1, 3),
        ),  # packing keeps one chunk
    ],
)
def test_pai_rule_prefilter_exhaustive_and_packing(corpus, tmp_path, overrides, expected):
    c = cfg("pai", chunk_size=512, **overrides)
    reach = rule("pai").reach(
        c, item(corpus, "apple harvest pickers farmers", ["1", "3", "5"]), Env(cache_dir=tmp_path)
    )
    assert (reach.reached, reach.total) == expected


RECORDS = tuple(Record(f"Company {n}", "revenue", 2023, f"{n}234.5", str(n)) for n in range(1, 6))


@pytest.mark.parametrize("fit", [0, 1, 3, 5])
def test_memagent_rule_counts_the_records_whose_minimal_rendering_fits_the_memory(corpus, fit):
    budget = tokens.count_tokens(render_records(RECORDS[:fit])) if fit else 1
    reach = rule("memagent").reach(
        cfg("memagent", max_new_tokens=budget), item(corpus, "q?", ["1"], records=RECORDS), Env()
    )
    assert (reach.reached, reach.total) == (fit, 5)
    assert reach.complete == (fit == 5)


def test_memagent_rule_uses_the_given_tokenizer(corpus):
    one_per_char = (lambda t: [ord(ch) for ch in t], lambda ids: "".join(map(chr, ids)))
    text = render_records(RECORDS[:2])
    env = Env(encode=one_per_char[0], decode=one_per_char[1])
    reach = rule("memagent").reach(
        cfg("memagent", max_new_tokens=len(text)), item(corpus, "q?", ["1"], records=RECORDS), env
    )
    assert reach.reached == 2


@pytest.mark.parametrize(
    ("window", "expected_docs"),
    [
        (100_000, {"0", "1", "2", "3", "4", "5"}),  # everything fits
        (
            700,
            {"0", "5"},
        ),  # 254 tokens each side: parts of the first and the last document (cut documents count)
        (1_200, {"0", "1", "4", "5"}),  # 504 each side: the documents are about 300 tokens
    ],
)
def test_full_context_rule_keeps_the_documents_inside_the_truncated_window(
    corpus, window, expected_docs
):
    c = cfg("full_context", context_window=window)
    for doc in "012345":
        reach = rule("full_context").reach(c, item(corpus, "q?", [doc]), Env())
        assert reach.complete == (doc in expected_docs), (window, doc)


@pytest.mark.parametrize("window", [700, 1_200, 100_000])
def test_full_context_rule_mirrors_the_strategys_own_truncation(corpus, window):
    from longctx.graphs.full_context import FULL_CONTEXT_TEMPLATE, truncate_prompt
    from longctx.graphs.prompts import fill, format_documents

    c = cfg("full_context", context_window=window)
    it = item(corpus, "q?", ["0"])
    found = rule("full_context").spans(c, it, Env())
    spans, truncated, head, tail, length = (
        found.spans,
        found.truncated,
        found.head,
        found.tail,
        found.length,
    )
    prompt = fill(FULL_CONTEXT_TEMPLATE, format_documents(corpus.documents), it.question)
    expected, was_truncated = truncate_prompt(
        prompt, window - c.max_new_tokens - c.prompt_reserve_tokens, tokens.encode, tokens.decode
    )
    assert truncated == was_truncated and length == len(prompt)
    assert (prompt[:head] + prompt[length - tail :] if truncated else prompt) == expected
    assert [prompt[s:e] for _, s, e in spans] == [d.text.strip() for d in corpus.documents]


def test_structured_is_skipped_unless_registered(corpus):
    samples = [
        type(
            "S",
            (),
            {
                "sample_id": "a",
                "corpus": corpus,
                "question": Question(text="x"),
                "metadata": {"evidence_doc_ids": ("1",)},
            },
        )()
    ]
    (ceiling,) = compute_ceilings(samples, ["structured"])
    assert ("structured" in STRATEGIES.names()) or ceiling.skipped
    with pytest.raises(ValueError, match="evidence"):
        compute_ceilings(
            [
                type(
                    "S",
                    (),
                    {
                        "sample_id": "a",
                        "corpus": corpus,
                        "question": Question(text="x"),
                        "metadata": {},
                    },
                )()
            ],
            ["rag"],
        )


# -- on a generated corpus -------------------------------------------------------------


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    from longctx.experiments.synth import NeedleConfig, SynthConfig, generate

    out = tmp_path_factory.mktemp("synth") / "corpus"
    generate(
        SynthConfig(
            domain="finance",
            target_tokens=20_000,
            seed=3,
            num_questions=6,
            doc_tokens=1500,
            needle=NeedleConfig(depth=0.4),
        ),
        out,
    )
    return out


def test_records_cover_exactly_the_evidence_documents(synth_dir):
    from longctx.experiments.synth import load_samples
    from longctx.experiments.synth.records import load_records

    records = load_records(synth_dir)
    for s in load_samples(synth_dir):
        got = records[s.sample_id]
        assert sorted({r.doc_id for r in got.records}) == sorted(s.evidence_doc_ids)
        assert got.sub_questions and all(
            q.startswith("What was the ") or s.difficulty == "needle" for q in got.sub_questions
        )


def test_rag_ceiling_agrees_with_the_synth_reports_evidence_recall(synth_dir, tmp_path):
    """Same settings, same numbers: the runner + report's evidence recall, and bench_synth's recall
    per question."""
    from longctx.experiments.benchmarks import load_benchmark
    from longctx.experiments.reports.report import build_report
    from longctx.experiments.runner import RunConfig, run_experiment
    from longctx.experiments.synth import load_samples, retrieval_recall
    from tests.scripted import ScriptedChatModel

    samples = load_benchmark("synth", synth_dir)
    options = {"rag": {"top_k": 3, "chunk_unit": "tokens", "chunk_size": 200}}
    run = RunConfig(
        benchmark="synth",
        strategies=("rag",),
        data_path=str(synth_dir),
        llm_cache=False,
        strategy_options=options,
    )
    run_experiment(
        run,
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The answer is: []"),
        samples=samples,
        show_progress=False,
    )
    summary = build_report(tmp_path, samples=samples, plots=False)["summary"][0]
    (ceiling,) = compute_ceilings(samples, ["rag"], options)
    assert summary["evidence_recall"] == round(ceiling.mean_share, 2)
    assert summary["ceiling"] == round(
        100 * ceiling.complete_share, 1
    )  # the report hook, beside the score
    assert list(summary)[:3] == ["strategy", "score", "ceiling"]
    assert (tmp_path / "report" / "ceilings.md").read_text().count("upper bound") == 1

    index = RetrievalService(settings=cfg("rag", **options["rag"])).build_index(
        samples[0].corpus
    )  # bench_synth's measurement, question by question
    for s, q in zip(load_samples(synth_dir), ceiling.per_question):
        docs = [h.chunk.doc_id for h in index.search(s.question.text, 3)]
        assert retrieval_recall(s.evidence_doc_ids, docs) == pytest.approx(
            q["reached"] / q["total"]
        )


def test_cli_prints_every_strategy_with_the_upper_bound_note(synth_dir, capsys):
    from longctx.experiments.cli.app import main

    assert (
        main(
            [
                "ceilings",
                str(synth_dir),
                "--option",
                "rag.top_k=50",
                "--strategies",
                "rag,memagent,full_context,pai",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert UPPER_BOUND_NOTE in text and "top-50 bm25" in text
    for name in ("rag", "memagent", "full_context", "pai"):
        assert f"| {name} |" in text
    assert (
        main(
            [
                "ceilings",
                str(synth_dir),
                "--json",
                "--gold-sub-questions",
                "--strategies",
                "self_ask,self_route",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["note"] == UPPER_BOUND_NOTE and [c["strategy"] for c in data["ceilings"]] == [
        "self_ask",
        "self_route",
    ]
    for c in data["ceilings"]:
        assert 0.0 <= c["complete_share"] <= c["mean_share"] <= 1.0 and c["questions"] == 7
        assert len(c["per_question"]) == 7 and "needle" in c["by_difficulty"]
    assert "routed_complete_share" in data["ceilings"][1]["detail"]
    assert (
        main(["ceilings", str(synth_dir), "--option", "nope.top_k=1", "--strategies", "rag"]) == 2
    )


def test_format_table_marks_skipped_strategies():
    from longctx.experiments.ceilings.measure import Ceiling

    text = format_table(
        [Ceiling("structured", {}, "reads every document", skipped="not registered")]
    )
    assert "skipped: not registered" in text and UPPER_BOUND_NOTE in text


def test_load_tokenizer_uses_the_librarys_offline_tokenizers(tmp_path):
    from longctx.experiments.ceilings.measure import load_tokenizer
    from longctx.retrieval.tokenizers import Tokenizer, TokenizerError

    assert load_tokenizer(None) is None and load_tokenizer("cl100k") is None
    tok = load_tokenizer("tiktoken:cl100k_base")
    assert isinstance(tok, Tokenizer) and tok.count("hello world") == tokens.count_tokens(
        "hello world"
    )
    with pytest.raises(TokenizerError):
        load_tokenizer(
            str(tmp_path / "no-such-tokenizer")
        )  # offline only: a missing folder is an error, not a download
    with pytest.raises(TokenizerError):
        load_tokenizer("server")
