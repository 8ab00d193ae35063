"""The synthetic CorpusQA-style benchmark: a folder written by ``longctx synth``, scored
as CorpusQA.

Answers are exact by construction (SQL over the generated fact table) and every sample
carries its evidence documents, so retrieval recall is measurable without an LLM.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks import corpusqa
from longctx.experiments.benchmarks.base import BENCHMARKS, BenchmarkDataError, Sample
from longctx.experiments.synth import load_samples

VERSION = 1

#: The full-context prompt (CorpusQA's layout: documents, then the question and output rules).
PROMPT_TEMPLATE = """{docs}

# Question:
{question}

{instruction}"""
DOCUMENT_TEMPLATE = """# Document {i}: {title}
{text}"""


def load(path: str | Path | None = None, **_: Any) -> list[Sample]:
    """Samples of a generated corpus folder (``longctx synth --out DIR``)."""
    if path is None:
        raise BenchmarkDataError(
            "The synthetic benchmark needs its folder: generate one with 'longctx synth --out "
            "DIR' and pass DIR."
        )
    if not (Path(path) / "questions.jsonl").exists():
        raise BenchmarkDataError(
            f"{path} holds no generated corpus (questions.jsonl is missing); run 'longctx synth "
            f"--out {path}'."
        )
    samples = []
    for s in load_samples(path):
        scalars = {
            k: v for k, v in dict(s.metadata).items() if isinstance(v, (str, int, float, bool))
        }
        metadata = {
            **scalars,
            "difficulty": s.difficulty,
            "answer_type": s.answer_type,
            "domain": s.domain,
            "evidence_doc_ids": tuple(s.evidence_doc_ids),
        }
        samples.append(
            Sample(
                sample_id=s.sample_id,
                benchmark="synth",
                dataset=s.domain,
                corpus=s.corpus,
                question=s.question,
                answers=(s.answer,),
                metadata=metadata,
            )
        )
    return samples


def prompt(sample: Sample, context: str | None = None) -> str:
    """A CorpusQA-style full-context prompt: numbered documents (or ``context``), the question, the
    output rules."""
    docs = (
        "\n\n".join(
            DOCUMENT_TEMPLATE.format(i=i, title=d.title, text=d.text)
            for i, d in enumerate(sample.corpus, 1)
        )
        if context is None
        else context
    )
    return PROMPT_TEMPLATE.format(
        docs=docs, question=sample.question.text, instruction=sample.question.instruction
    )


@BENCHMARKS.register("synth", version=VERSION, load=load, prompt=prompt)
def score(pairs: Sequence[tuple[Sample, Any]], *, judge: Any = None, **options: Any) -> dict:
    """CorpusQA's scoring, plus accuracy per difficulty (easy / medium / hard / needle)."""
    result = corpusqa.score(pairs, judge=judge, **options)
    by_difficulty: dict[str, list[float]] = {}
    for sample, _ in pairs:  # from the per-sample verdicts: each prediction is judged once
        by_difficulty.setdefault(sample.metadata.get("difficulty", "?"), []).append(
            result["per_sample"][sample.sample_id]
        )
    result["difficulty"] = {d: round(sum(v) / len(v), 2) for d, v in sorted(by_difficulty.items())}
    return result
