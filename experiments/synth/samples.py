"""Loading a generated corpus as benchmark samples, and retrieval recall against evidence."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question

QUESTIONS_FILE = "questions.jsonl"
MANIFEST_FILE = "manifest.json"
DOCS_DIR = "docs"

#: CorpusQA's output requirements (seed 004, appendix C), given verbatim to every strategy.
CORPUSQA_INSTRUCTION = """# Output requirements:

1. Your answer can only be one of the following types: a list of strings (including empty list "[]"), a single short string, a number (floating point numbers should retain 2 decimal places, without units), or a percentage (retain 2 decimal places).

2. To output the date, use the format "YYYY-MM".

3. If multiple files contain a conflicting value for the same item, please use the value from the latest file.

4. Please place the final answer at the end, and strictly use the format: The answer is: xxx.

# Answer format examples:

- For a list of strings: The answer is: ["NETFLIX INC", "H&R BLOCK INC"]
- For a single string: The answer is: "South"
- For a number: The answer is: 1234567.89
- For a percentage: The answer is: 12.34%"""  # noqa: E501


@dataclass(frozen=True)
class SynthSample:
    """One question over a generated corpus, ready for a strategy and the CorpusQA metric.

    Attributes:
        sample_id: ``synth-{domain}-{tokens}-s{seed}-{n:04d}``.
        corpus: The whole generated corpus (shared by all samples of one directory).
        question: Question text with CorpusQA's output instruction.
        answer: Gold answer in CorpusQA's format (JSON array, string, ``12.34``, ``12.34%``).
        answer_type: ``list``, ``string``, ``number`` or ``percentage``.
        difficulty: ``easy``, ``medium``, ``hard`` or ``needle``.
        domain: Generator domain.
        evidence_doc_ids: Documents (corpus ``doc_id``s) whose facts the answer depends on.
        metadata: Query kind, SQL, fields, fiscal years and the corpus directory.
    """

    sample_id: str
    corpus: Corpus
    question: Question
    answer: str
    answer_type: str
    difficulty: str
    domain: str
    evidence_doc_ids: list[str]
    metadata: Mapping[str, Any] = field(default_factory=dict)


def read_questions(path: str | Path) -> list[dict]:
    """The raw question records of a generated corpus directory."""
    file = Path(path) / QUESTIONS_FILE
    if not file.exists():
        raise FileNotFoundError(
            f"{path} is not a generated corpus: {QUESTIONS_FILE} is missing (run `longctx synth`)"
        )
    with open(file, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_samples(path: str | Path) -> list[SynthSample]:
    """Samples of a corpus written by ``longctx synth`` (or
    :func:`longctx.experiments.synth.generate`).

    The corpus is read once and shared by every sample.
    """
    root = Path(path)
    records = read_questions(root)
    corpus = Corpus.from_path(
        root / DOCS_DIR, duplicates="keep"
    )  # the benchmark's input as written
    out = []
    for rec in records:
        meta = {k: rec[k] for k in ("kind", "sql", "fields", "fiscal_years") if k in rec}
        question = Question(
            text=rec["question"],
            instruction=CORPUSQA_INSTRUCTION,
            metadata={"sample_id": rec["id"], "benchmark": "synth", "kind": rec.get("kind")},
        )
        out.append(
            SynthSample(
                sample_id=rec["id"],
                corpus=corpus,
                question=question,
                answer=rec["answer"],
                answer_type=rec["answer_type"],
                difficulty=rec["difficulty"],
                domain=rec["domain"],
                evidence_doc_ids=list(rec["evidence_doc_ids"]),
                metadata={**meta, "path": str(root)},
            )
        )
    return out


def retrieval_recall(evidence_doc_ids: Iterable[str], retrieved_doc_ids: Iterable[str]) -> float:
    """Share of evidence documents that appear among the retrieved ones.

    Why: CorpusQA's answers depend on facts spread over many documents; this measures how
    much of that evidence a retriever reaches, with no LLM. Duplicates are ignored; with
    no evidence the recall is 1.0 (nothing was needed).
    """
    evidence = set(evidence_doc_ids)
    if not evidence:
        return 1.0
    return len(evidence & set(retrieved_doc_ids)) / len(evidence)
