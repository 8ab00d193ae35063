"""CorpusQA: 1,316 corpus-level questions, 128K-10M tokens, whose prompt holds the corpus.

Records (``{"id", "prompt": [{"role": "user", "content": ...}], "question", "answer"}``,
one file per domain and length set, e.g. ``financial_en_set1.jsonl``) carry the whole
corpus inside the user message. We split the documents back out on the
``# Document N:`` headers of the paper's template (Appendix C), keep the question
and output requirements, and rebuild the identical prompt for the full-context baseline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    BenchmarkDataError,
    Sample,
    data_root,
    macro_strata,
    read_records,
)
from longctx.experiments.metrics import corpusqa as m
from longctx.experiments.metrics import judge as judge_mod
from longctx.experiments.metrics.equivalence import equivalent
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question

# 2: generation at temperature 0.0, official denominators reported, judge at temperature 0.0 and n=1
VERSION = 2
#: ``src/infer.py`` sends ``temperature=0.0`` to every model but ``o3*``.
TEMPERATURE = 0.0

#: The output rule of the official template (Appendix C), given to every strategy.
INSTRUCTION = """# Output requirements:

1. Your answer can only be one of the following types: a list of strings (including empty list "[]"), a single short string, a number (floating point numbers should retain 2 decimal places, without units), or a percentage (retain 2 decimal places).

2. To output the date, use the format "YYYY-MM".

3. If multiple files contain a conflicting value for the same item, please use the value from the latest file.

4. Please place the final answer at the end, and strictly use the format: The answer is: xxx.

# Answer format examples:

• For a list of strings: The answer is: ["NETFLIX INC", "H&R BLOCK INC"]
• For a single string: The answer is: "South"
• For a number: The answer is: 1234567.89
• For a percentage: The answer is: 12.34%"""  # noqa: E501

_HEADER = re.compile(r"^# Document (\d+):[ \t]*\n", re.MULTILINE)
_QUESTION = re.compile(r"^# Question:", re.MULTILINE)
_REQUIREMENTS = re.compile(r"^# Output requirements:", re.MULTILINE)


def split_prompt(content: str) -> tuple[list[str], str, str]:
    """(document texts, text before the first header, text from ``# Question:`` on).

    Raises:
        ValueError: The prompt has no ``# Document N:`` header or no ``# Question:`` section.
    """
    headers = list(_HEADER.finditer(content))
    question = _QUESTION.search(content, headers[-1].end() if headers else 0)
    if not headers or question is None:
        raise ValueError(
            "CorpusQA prompt lacks '# Document N:' headers or a '# Question:' section."
        )
    bounds = [h.end() for h in headers] + [question.start()]
    starts = [h.start() for h in headers[1:]] + [question.start()]
    texts = [content[bounds[i] : starts[i]].removesuffix("\n\n") for i in range(len(headers))]
    return texts, content[: headers[0].start()], content[question.start() :]


def _question_text(tail: str, fallback: str) -> str:
    body = tail.split("\n", 1)[1] if "\n" in tail else ""
    req = _REQUIREMENTS.search(body)
    text = (body[: req.start()] if req else body).strip()
    return text or fallback


def _sample(record: dict[str, Any], dataset: str, set_level: int | None) -> Sample:
    content = "\n".join(
        msg["content"] for msg in record["prompt"] if msg.get("role", "user") == "user"
    )
    texts, head, tail = split_prompt(content)
    sample_id = str(record["id"])
    docs = [
        Document(doc_id=f"{sample_id}-{i + 1}", text=t, title=f"Document {i + 1}")
        for i, t in enumerate(texts)
    ]
    req = _REQUIREMENTS.search(tail)
    return Sample(
        sample_id=sample_id,
        benchmark="corpusqa",
        dataset=m.domain_of(sample_id) or dataset,
        corpus=Corpus(docs),
        question=Question(
            text=_question_text(tail, str(record["question"])),
            instruction=tail[req.start() :].strip() if req else INSTRUCTION,
            metadata={"sample_id": sample_id},
        ),
        answers=(record["answer"] if isinstance(record["answer"], str) else str(record["answer"]),),
        metadata={
            "set": set_level,
            "file": dataset,
            "question": record["question"],
            "prompt_head": head,
            "prompt_tail": tail,
            "difficulty": record.get("difficulty"),
            "answer_raw": record["answer"],
        },
    )


def load(path: str | Path | None = None, *, datasets: Sequence[str] | None = None) -> list[Sample]:
    """CorpusQA samples from every ``*.jsonl``/``*.json``/``*.parquet`` under the folder.

    Args:
        path: Folder with the official files (default ``$LONGCTX_DATA_DIR/corpusqa``).
        datasets: File stems to keep (e.g. ``["financial_en_set1"]``); all when ``None``.
    """
    root = data_root("corpusqa", path)
    files = (
        sorted(p for p in root.glob("*") if p.suffix in (".jsonl", ".json", ".parquet"))
        if root.is_dir()
        else []
    )
    if datasets is not None:
        files = [f for f in files if f.stem in datasets]
    if not files:
        raise BenchmarkDataError(
            f"CorpusQA: no data files in {root} (expected e.g. "
            f"{root / 'financial_en_set1.jsonl'}); "
            "get the .jsonl files of the hub dataset Tongyi-Zhiwen/CorpusQA (its README: git "
            "clone it) as docs/benchmarks-data.md explains."
        )
    samples = []
    for f in files:
        match = re.search(r"set(\d+)", f.stem)
        samples += [
            _sample(r, f.stem, int(match.group(1)) if match else None) for r in read_records(f)
        ]
    return samples


def prompt(sample: Sample, context: str | None = None) -> str:
    """The original user message, rebuilt from the documents (or ``context``) and the stored
    head and tail."""
    docs = (
        "".join(f"# Document {i + 1}:\n{d.text}\n\n" for i, d in enumerate(sample.corpus))
        if context is None
        else context
    )
    return sample.metadata["prompt_head"] + docs + sample.metadata["prompt_tail"]


def protocol(sample: Sample) -> dict[str, Any]:
    """``src/infer.py``: temperature 0.0 (omitted there for ``o3`` models only); no answer or
    input budget."""
    return {"temperature": TEMPERATURE}


def _correct(sample: Sample, pred: Any, judge: Any) -> tuple[bool, bool]:
    """(correct, judge_error) for one prediction; failed calls and judge errors are wrong."""
    if pred.failed:
        return False, False
    answer = m.extract_answer(pred.text_or_empty)
    if judge is None:
        return equivalent(answer, sample.answers[0]), False
    user = m.judge_user_prompt(sample.metadata["question"], answer, sample.answers[0])
    reply = judge_mod.call_judge(
        judge, user, system=m.JUDGE_SYSTEM_PROMPT, params=judge_mod.CORPUSQA_JUDGE
    )
    return m.judge_verdict(reply.text), reply.error is not None


def _percent(values: Sequence[bool]) -> float | None:
    return round(100 * sum(values) / len(values), 2) if values else None


def _accuracy(outcomes: Sequence[tuple[str, str, bool]]) -> dict[str, Any]:
    """Macro over domains, micro, per domain and per set, x 100, over ``(domain, set, correct)``."""
    per_domain: dict[str, list[bool]] = {}
    per_set: dict[str, list[bool]] = {}
    for domain, set_name, ok in outcomes:
        per_domain.setdefault(domain, []).append(ok)
        per_set.setdefault(set_name, []).append(ok)
    domains = {d: _percent(v) for d, v in per_domain.items()}
    present = [v for v in domains.values() if v is not None]
    return {
        "overall": round(sum(present) / len(present), 2) if present else None,
        "overall_micro": _percent([ok for _, _, ok in outcomes]),
        "domains": domains,
        "sets": {k: _percent(v) for k, v in sorted(per_set.items())},
        "n": len(outcomes),
    }


@BENCHMARKS.register(
    "corpusqa",
    version=VERSION,
    load=load,
    prompt=prompt,
    protocol=protocol,
    strata=macro_strata(lambda s: s.dataset),
)  # the headline is the macro mean over domains
def score(pairs: Sequence[tuple[Sample, Any]], *, judge: Any = None, **_: Any) -> dict:
    """Accuracy per domain, macro over domains (paper) and micro, x 100: ours and the official
    denominator.

    Quirk and fix: ``src/infer.py`` writes no line for an inference that failed, so
    ``src/eval.py`` divides by the answered questions only. Ours counts a failed call as
    wrong (``overall``, ``overall_micro``, ``domains``, ``sets``); ``official_drops_failed``
    holds the same aggregates over the answered questions (its ``overall_micro`` on one
    file is the accuracy ``eval.py`` prints).

    Args:
        pairs: ``(Sample, Prediction)`` pairs; failed calls count as wrong (ours).
        judge: A LangChain chat model for the official equivalence judge, called at the
            official ``temperature=0.0, n=1``. Without one the deterministic checker is
            used and ``judge`` reads ``deterministic-equivalence``.
    """
    outcomes: list[tuple[str, str, bool]] = []
    answered: list[tuple[str, str, bool]] = []
    per_sample: dict[str, float] = {}
    errors = 0
    for sample, pred in pairs:
        ok, err = _correct(sample, pred, judge)
        per_sample[sample.sample_id] = 100.0 * ok
        errors += err
        outcome = (sample.dataset, f"set{sample.metadata.get('set')}", ok)
        outcomes.append(outcome)
        if not pred.failed:
            answered.append(outcome)
    ours = _accuracy(outcomes)
    return ours | {
        "official_drops_failed": _accuracy(answered),
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "n_judge_errors": errors,
        "judge": "llm" if judge is not None else "deterministic-equivalence",
        "per_sample": per_sample,
    }
