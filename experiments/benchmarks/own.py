"""Your corpus, your questions: compare strategies on your own documents.

    longctx run --corpus reports/ --questions questions.csv --strategies rag,memagent,pai \\
        --out runs/mine

The questions file is JSONL or CSV with a ``question`` column and optional ``answer``,
``answer_type`` (``number``, ``list``, ``date``, ``text``) and ``id``. Every question is
asked over the same corpus, read once and indexed once for all strategies. Rows with a
gold answer are scored (deterministic equivalence of the answer, for text answers also the
gold phrase inside it; or an LLM judge given to ``longctx report --judge``); rows without
one are reported unscored.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import BENCHMARKS, BenchmarkDataError, Sample, read_records
from longctx.experiments.metrics import corpusqa as cq
from longctx.experiments.metrics import judge as judge_mod
from longctx.experiments.metrics.answer_match import Match, match_answer
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question

# the prompts' version; the scoring rule has its own (experiments.metrics.answer_match.VERSION)
VERSION = 1
ANSWER_TYPES = ("number", "list", "date", "text")

#: The output rule every strategy is given (LongBench v1's QA wording: small models follow it;
#: the answer is the whole reply, or the text after "The answer is:" when the model writes one).
INSTRUCTION = """Only give me the answer and do not output any other words."""

#: The full-context prompt around the documents (our template; there is no official one).
PROMPT_TEMPLATE = """Read the documents below and answer the question.

{docs}

Question: {question}

{instruction}"""
DOCUMENT_TEMPLATE = """# Document {i}: {title}\n{text}"""


def read_questions(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a questions file (``.jsonl``, ``.json`` or ``.csv``), checked.

    Raises:
        BenchmarkDataError: The file is missing, unreadable, empty, or a row has no question,
            a repeated id or an unknown ``answer_type``.
    """
    path = Path(path)
    if not path.is_file():
        raise BenchmarkDataError(f"Questions file not found: {path}")
    try:
        rows = csv_rows(path) if path.suffix.lower() == ".csv" else read_records(path)
    except BenchmarkDataError:
        raise
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BenchmarkDataError(f"Cannot read questions from {path}: {exc}") from exc
    if not rows:
        raise BenchmarkDataError(f"{path} holds no questions.")
    seen: set[str] = set()
    for i, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not str(row.get("question") or "").strip():
            raise BenchmarkDataError(f"{path}, row {i}: no 'question'.")
        row["id"] = str(row.get("id") or "").strip() or f"q{i}"
        if row["id"] in seen:
            raise BenchmarkDataError(f"{path}, row {i}: id {row['id']!r} is used twice.")
        seen.add(row["id"])
        kind = str(row.get("answer_type") or "").strip() or None
        if kind is not None and kind not in ANSWER_TYPES:
            raise BenchmarkDataError(
                f"{path}, row {i}: answer_type must be one of {ANSWER_TYPES}, got {kind!r}"
            )
        row["answer_type"] = kind
    return rows


def csv_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a CSV file, read strictly: a quote never closed (which would swallow every
    later line into one question) or text after a closing quote raises, naming the line.

    Raises:
        BenchmarkDataError: The file is not well-formed CSV.
    """
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f, strict=True)
        rows: list[dict[str, Any]] = []
        start = 1
        try:
            reader.fieldnames  # the header line
            start = reader.line_num + 1
            for row in reader:
                rows.append(dict(row))
                start = reader.line_num + 1
        except csv.Error as exc:
            what = (
                f"a quote opened on line {start} is never closed"
                if "end of data" in str(exc)
                else f"line {start}: {exc}"
            )
            raise BenchmarkDataError(f"{path} is not well-formed CSV: {what}") from None
    return rows


def load(
    path: str | Path | None = None,
    *,
    corpus: str | Path | None = None,
    show_progress: bool = False,
    **_: Any,
) -> list[Sample]:
    """One sample per question of the file at ``path``, all over the corpus at ``corpus``."""
    if path is None or corpus is None:
        raise BenchmarkDataError(
            "Your own run needs a questions file and a corpus: --questions FILE --corpus PATH."
        )
    rows = read_questions(path)
    documents = Corpus.from_path(
        corpus, show_progress=show_progress
    )  # one object: indexed once for every question
    samples = []
    for row in rows:
        gold = str(row.get("answer") or "").strip()
        samples.append(
            Sample(
                sample_id=row["id"],
                benchmark="own",
                dataset=Path(path).stem,
                corpus=documents,
                question=Question(
                    text=str(row["question"]).strip(),
                    instruction=INSTRUCTION,
                    metadata={"sample_id": row["id"]},
                ),
                answers=(gold,) if gold else (),
                metadata={
                    "answer_type": row["answer_type"],
                    "question": str(row["question"]).strip(),
                    "corpus_path": str(corpus),
                },
            )
        )
    return samples


def prompt(sample: Sample, context: str | None = None) -> str:
    """Our full-context prompt: the documents (or ``context``), the question, the output rule."""
    docs = "\n\n".join(
        DOCUMENT_TEMPLATE.format(i=i, title=d.title, text=d.text)
        for i, d in enumerate(sample.corpus, 1)
    )
    return PROMPT_TEMPLATE.format(
        docs=docs if context is None else context,
        question=sample.question.text,
        instruction=INSTRUCTION,
    )


def extract(reply: str) -> str:
    """The answer after the last "The answer is:" (else the whole reply), without markup."""
    matches = re.findall(r"the answer is:?\s*(.+)", reply.replace("*", ""), flags=re.IGNORECASE)
    return (matches[-1] if matches else reply).strip().rstrip(".").strip()


def correct(sample: Sample, prediction: str, judge: Any = None) -> tuple[Match, bool]:
    """(verdict with its rule, judge_error): an LLM judge when given, else the deterministic
    rule of ``longctx.experiments.metrics.answer_match`` (exact, typed, or the gold phrase as
    whole tokens)."""
    gold, answer = sample.answers[0], extract(prediction)
    if judge is not None:
        reply = judge_mod.call_judge(
            judge,
            cq.judge_user_prompt(sample.metadata["question"], answer, gold),
            system=cq.JUDGE_SYSTEM_PROMPT,
            params=judge_mod.CORPUSQA_JUDGE,
        )
        ok = cq.judge_verdict(reply.text)
        return Match(ok, "judge" if ok else None), reply.error is not None
    return match_answer(
        answer,
        gold,
        answer_type=sample.metadata.get("answer_type"),
        question=sample.metadata.get("question"),
    ), False


@BENCHMARKS.register(
    "own", version=VERSION, load=load, prompt=prompt, shared_first=True
)  # our prompts: shared text first
def score(pairs: Sequence[tuple[Sample, Any]], *, judge: Any = None, **_: Any) -> dict:
    """Accuracy over the questions with a gold answer (x100); the others are counted as unscored.

    Returns:
        ``overall`` (None when no question has a gold answer), ``n_scored``, ``n_unscored``,
        ``n_failed``, ``n_judge_errors``, ``judge``, ``per_sample`` (None for unscored) and
        ``match_rule`` (sample id -> the rule that credited it: ``exact``, ``typed``, ``phrase``,
        ``judge``, or None when it scored wrong).
    """
    per_sample: dict[str, float | None] = {}
    rules: dict[str, str | None] = {}
    errors = 0
    for sample, pred in pairs:
        if not sample.answers:
            per_sample[sample.sample_id] = None
            continue
        verdict, err = (
            (Match(False, None), False)
            if pred.failed
            else correct(sample, pred.text_or_empty, judge)
        )
        errors += err
        per_sample[sample.sample_id] = 100.0 * verdict.correct
        rules[sample.sample_id] = verdict.rule
    scored = [v for v in per_sample.values() if v is not None]
    return {
        "overall": round(sum(scored) / len(scored), 2) if scored else None,
        "n": len(pairs),
        "n_scored": len(scored),
        "n_unscored": len(per_sample) - len(scored),
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "n_judge_errors": errors,
        "judge": "llm" if judge is not None else "deterministic-equivalence",
        "per_sample": per_sample,
        "match_rule": rules,
    }
