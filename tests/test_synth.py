"""Synthetic CorpusQA-style generator: answers, evidence, sizes, determinism, needle,
loader, CLI."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from longctx.experiments.cli.app import main
from longctx.experiments.synth import (
    NeedleConfig,
    SynthConfig,
    filler,
    generate,
    get_domain,
    load_samples,
    parse_tokens,
    read_questions,
    retrieval_recall,
)
from longctx.experiments.synth.config import config_from_dict
from longctx.experiments.synth.facts import STATIC
from longctx.experiments.synth.queries import build_queries
from longctx.experiments.synth.truth import (
    evidence_doc_ids,
    python_answer,
    python_table,
    sql_answer,
)
from longctx.experiments.synth.values import all_forms, format_answer, written_forms
from longctx.retrieval.tokens import count_tokens

SMALL = 40_000


@pytest.fixture(scope="module")
def finance_128k(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "fin128k"
    generate(
        SynthConfig(
            domain="finance", target_tokens=128_000, seed=0, needle=NeedleConfig(depth=0.4)
        ),
        out,
    )
    return out


@pytest.fixture(scope="module")
def education_small(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "edu40k"
    generate(
        SynthConfig(
            domain="education", target_tokens=SMALL, seed=5, doc_tokens=2500, num_questions=40
        ),
        out,
    )
    return out


def _cfg(path: Path) -> SynthConfig:
    return config_from_dict(json.loads((path / "manifest.json").read_text())["config"])


def _doc_text(path: Path, doc_id: str) -> str:
    return (path / "docs" / doc_id).read_text(encoding="utf-8")


# -- sizes and tiers -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text,expected",
    [
        ("128K", 128_000),
        ("1M", 1_000_000),
        ("4m", 4_000_000),
        ("10M", 10_000_000),
        ("250000", 250_000),
        ("1.5M", 1_500_000),
        (5000, 5000),
    ],
)
def test_parse_tokens(text, expected):
    assert parse_tokens(text) == expected


@pytest.mark.parametrize("bad", ["", "12Q", "M", "-5K", "0", "1e6"])
def test_parse_tokens_rejects_bad_sizes(bad):
    with pytest.raises(ValueError):
        parse_tokens(bad)


@pytest.mark.parametrize("fixture,target", [("finance_128k", 128_000), ("education_small", SMALL)])
def test_corpus_size_is_within_5_percent_of_target(request, fixture, target):
    path = request.getfixturevalue(fixture)
    total = sum(count_tokens(p.read_text(encoding="utf-8")) for p in (path / "docs").iterdir())
    assert abs(total / target - 1) <= 0.05
    assert json.loads((path / "manifest.json").read_text())["total_tokens"] == total


def test_too_small_target_and_bad_config_raise(tmp_path):
    with pytest.raises(ValueError, match="too small"):
        generate(SynthConfig(target_tokens=12_000), tmp_path / "x")
    with pytest.raises(KeyError, match="Unknown synth domain"):
        generate(SynthConfig(domain="astrology"), tmp_path / "y")
    with pytest.raises(ValueError):
        NeedleConfig(depth=1.5)


def test_output_dir_must_be_empty(tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty"):
        generate(SynthConfig(target_tokens=SMALL), tmp_path)


# -- determinism -----------------------------------------------------------------------------
def _snapshot(path: Path) -> dict[str, bytes]:
    files = [p for p in path.rglob("*") if p.is_file() and p.suffix != ".sqlite"]
    return {str(p.relative_to(path)): p.read_bytes() for p in files}


def test_same_seed_gives_identical_files_and_other_seed_differs(tmp_path):
    cfg = SynthConfig(domain="finance", target_tokens=SMALL, seed=11, doc_tokens=2500)
    generate(cfg, tmp_path / "a")
    generate(cfg, tmp_path / "b")
    generate(
        SynthConfig(domain="finance", target_tokens=SMALL, seed=12, doc_tokens=2500), tmp_path / "c"
    )
    a, b, c = (_snapshot(tmp_path / n) for n in "abc")
    assert a == b
    assert a != c


# -- ground truth ----------------------------------------------------------------------------
@pytest.mark.parametrize("fixture", ["finance_128k", "education_small"])
def test_sql_answers_agree_with_independent_python(request, fixture):
    path = request.getfixturevalue(fixture)
    cfg = _cfg(path)
    conn = sqlite3.connect(path / "facts.sqlite")
    domain = get_domain(cfg.domain)
    queries = build_queries(conn, domain, cfg)
    table = python_table(conn, tuple(c.name for c in domain.categoricals))
    records = [r for r in read_questions(path) if r["difficulty"] != "needle"]
    assert len(queries) == len(records) == cfg.num_questions
    assert {q.difficulty for q in queries} == {"easy", "medium", "hard"}
    for q, rec in zip(queries, records):
        gold = sql_answer(conn, q)
        assert rec["answer"] == gold and rec["question"] == q.text
        other = python_answer(table, q)
        if q.answer_type in ("number", "percentage"):
            assert abs(float(gold.rstrip("%")) - float(other.rstrip("%"))) <= 0.01, q.text
        else:
            assert other == gold, q.text


def test_answer_formats_follow_corpusqa():
    assert format_answer([], "list") == "[]"
    assert format_answer(["A & B", "C"], "list") == '["A & B", "C"]'
    assert format_answer(12.345, "number") == "12.35"
    assert format_answer(7, "number") == "7"
    assert format_answer(-0.125, "number") == "-0.13"
    assert format_answer(45.6, "percentage") == "45.60%"


def test_conflicting_values_resolve_to_the_latest_file(finance_128k):
    conn = sqlite3.connect(finance_128k / "facts.sqlite")
    conflicts = conn.execute(
        "SELECT s.entity, s.fiscal_year, s.field FROM statements s WHERE s.fiscal_year != 0 "
        "GROUP BY s.entity, s.fiscal_year, s.field HAVING COUNT(DISTINCT s.value) > 1"
    ).fetchall()
    assert conflicts, "expected restated values"
    for entity, fy, fld in conflicts[:50]:
        latest = conn.execute(
            (
                "SELECT s.value FROM statements s JOIN documents d USING (doc_id) WHERE s.entity "
                "= ? AND s.fiscal_year = ? AND s.field = ? ORDER BY d.published DESC LIMIT 1"
            ),
            (entity, fy, fld),
        ).fetchone()[0]
        fact = conn.execute(
            f"SELECT {fld} FROM facts WHERE entity = ? AND fiscal_year = ?", (entity, fy)
        ).fetchone()[0]
        assert fact == latest


# -- evidence and findability ----------------------------------------------------------------
@pytest.mark.parametrize("fixture", ["finance_128k", "education_small"])
def test_every_statement_is_findable_in_its_document(request, fixture):
    path = request.getfixturevalue(fixture)
    conn = sqlite3.connect(path / "facts.sqlite")
    domain = get_domain(_cfg(path).domain)
    kinds = {f.name: f.kind for f in domain.fields}
    texts: dict[str, str] = {}
    for doc_id, fy, fld, value, text in conn.execute(
        "SELECT doc_id, fiscal_year, field, value, text FROM statements"
    ):
        doc = texts.setdefault(doc_id, _doc_text(path, doc_id))
        if fy == STATIC:
            assert text in doc
        else:
            assert any(form in doc for form in all_forms(value, kinds[fld])), (doc_id, fld, value)


@pytest.mark.parametrize("fixture", ["finance_128k", "education_small"])
def test_evidence_documents_contain_the_values_used(request, fixture):
    path = request.getfixturevalue(fixture)
    cfg = _cfg(path)
    conn = sqlite3.connect(path / "facts.sqlite")
    domain = get_domain(cfg.domain)
    kinds = {f.name: f.kind for f in domain.fields}
    records = [r for r in read_questions(path) if r["difficulty"] != "needle"]
    for q, rec in zip(build_queries(conn, domain, cfg), records):
        evidence = set(rec["evidence_doc_ids"])
        assert evidence == set(evidence_doc_ids(conn, q))
        for year in q.years:
            for fld in q.fields:
                rows = conn.execute(
                    (
                        "SELECT entity, value, doc_id FROM resolved WHERE field = ? AND "
                        "fiscal_year = ?"
                    ),
                    (fld, year),
                )
                for entity, value, doc_id in rows:
                    if (
                        q.scope
                        and conn.execute(
                            f"SELECT {q.scope[0]} FROM facts WHERE entity = ? LIMIT 1", (entity,)
                        ).fetchone()[0]
                        != q.scope[1]
                    ):
                        continue
                    assert doc_id in evidence
                    assert any(f in _doc_text(path, doc_id) for f in all_forms(value, kinds[fld]))


def test_values_are_written_in_varied_forms(finance_128k):
    docs = "".join(
        p.read_text(encoding="utf-8") for p in sorted((finance_128k / "docs").iterdir())[:12]
    )
    assert (
        " million" in docs
        and " USD" in docs
        and "M " in docs
        and " thousand" in docs
        and "|---" in docs
    )
    assert written_forms(12.3, "usd_m") == [
        "$12.3 million",
        "12,300,000 USD",
        "USD 12.3M",
        "$12,300 thousand",
    ]


def test_filler_and_noise_documents_contain_no_digits(finance_128k):
    import random

    rng = random.Random(0)
    for domain in ("finance", "education"):
        assert not any(
            filler.has_digit(filler.paragraph(rng, domain, "Ashford College")) for _ in range(200)
        )
    manifest = json.loads((finance_128k / "manifest.json").read_text())
    noise = [d["doc_id"] for d in manifest["documents"] if d["kind"] == "noise"]
    assert noise
    for doc_id in noise:
        body = _doc_text(finance_128k, doc_id).split("\n", 3)[3]
        assert not filler.has_digit(body.replace(manifest["plants"][0]["text"], ""))


# -- needle ----------------------------------------------------------------------------------
def test_needle_is_planted_at_the_requested_depth(finance_128k):
    manifest = json.loads((finance_128k / "manifest.json").read_text())
    docs = [d["doc_id"] for d in manifest["documents"]]
    total = manifest["total_tokens"]
    needle = next(p for p in manifest["plants"] if p["label"] == "needle")
    before = 0
    for doc_id in docs:
        text = _doc_text(finance_128k, doc_id)
        if doc_id == needle["doc_id"]:
            before += count_tokens(text[: text.index(needle["text"])])
            break
        before += count_tokens(text)
    assert before == needle["token_offset"]
    assert abs(before / total - 0.4) <= 0.02
    confusers = [p for p in manifest["plants"] if p["label"] == "confuser"]
    assert len(confusers) == 2 and all(abs(p["depth"] - 0.4) > 0.05 for p in confusers)
    q = next(r for r in read_questions(finance_128k) if r["difficulty"] == "needle")
    assert q["answer"] in needle["text"] and q["evidence_doc_ids"] == [needle["doc_id"]]
    assert all(q["answer"] not in p["text"] for p in confusers)


@pytest.mark.parametrize("depth", [0.0, 0.25, 1.0])
def test_needle_depth_without_cfi_or_kpr(tmp_path, depth):
    cfg = SynthConfig(
        target_tokens=SMALL,
        doc_tokens=2500,
        num_questions=3,
        needle=NeedleConfig(
            depth=depth, confusing_facts=False, keyword_replacement=False, template=0
        ),
    )
    generate(cfg, tmp_path / "n")
    manifest = json.loads((tmp_path / "n" / "manifest.json").read_text())
    assert [p["label"] for p in manifest["plants"]] == ["needle"]
    assert abs(manifest["plants"][0]["depth"] - depth) <= 0.03
    q = read_questions(tmp_path / "n")[-1]
    assert q["answer"] == "Johannes Kepler"


# -- loader, recall, CLI -----------------------------------------------------------------------
def test_load_samples(finance_128k):
    samples = load_samples(finance_128k)
    assert len(samples) == 31
    ids = {d.doc_id for d in samples[0].corpus}
    for s in samples:
        assert s.corpus is samples[0].corpus
        assert "The answer is: xxx" in s.question.instruction
        assert set(s.evidence_doc_ids) <= ids and s.evidence_doc_ids
        assert s.answer_type in ("list", "string", "number", "percentage")
        assert s.difficulty in ("easy", "medium", "hard", "needle") and s.domain == "finance"
    with pytest.raises(FileNotFoundError):
        load_samples(finance_128k / "docs")


@pytest.mark.parametrize(
    "evidence,retrieved,expected",
    [
        (["a", "b"], ["a", "c", "a"], 0.5),
        (["a"], [], 0.0),
        ([], ["x"], 1.0),
        (["a", "b"], ["b", "a"], 1.0),
    ],
)
def test_retrieval_recall(evidence, retrieved, expected):
    assert retrieval_recall(evidence, retrieved) == expected


def test_cli_synth(tmp_path, capsys):
    out = tmp_path / "cli"
    assert (
        main(
            [
                "synth",
                "--domain",
                "education",
                "--tokens",
                "40K",
                "--seed",
                "2",
                "--out",
                str(out),
                "--needle-depth",
                "0.5",
            ]
        )
        == 0
    )
    assert "documents" in capsys.readouterr().out
    assert (
        (out / "manifest.json").exists()
        and (out / "questions.jsonl").exists()
        and (out / "facts.sqlite").exists()
    )
    assert main(["synth", "--tokens", "40K", "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["synth", "--tokens", "4X", "--out", str(tmp_path / "b")]) == 2
    assert main(["synth", "--domain", "nope", "--out", str(tmp_path / "c")]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("tier", ["1M", "4M", "10M"])
def test_large_tiers_hit_their_size(tmp_path, tier):
    result = generate(
        SynthConfig(domain="finance", target_tokens=parse_tokens(tier), seed=0), tmp_path / tier
    )
    assert abs(result.total_tokens / parse_tokens(tier) - 1) <= 0.05
    assert len(load_samples(tmp_path / tier)) == 30
