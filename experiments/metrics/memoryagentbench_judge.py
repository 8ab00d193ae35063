"""MemoryAgentBench's LLM-judged metrics: LongMemEval's yes/no check and InfBench-Sum's summary F1.

Prompts are the official ones verbatim (``llm_based_eval/longmem_qa_evaluate.py``
``get_anscheck_prompt``; ``llm_based_eval/summarization_evaluate.py`` ``*_prompt_book``,
from HELMET), kept in ``experiments/benchmarks/memoryagentbench_prompts.json``. Judge calls
go through :func:`longctx.experiments.metrics.judge.call_judge` with the official sampling
parameters. LongMemEval: correct iff ``yes`` is in the reply (lower-cased). InfBench-Sum:
three calls (fluency 0/1, recall = key points found / key points, precision = supported
sentences / sentences), ``f1 = fluency x harmonic mean(recall, precision)``; the official
script drops an item whose judge replies do not parse, we score it 0 and count it.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longctx.experiments.metrics import judge as judge_mod

VERSION = 1

PROMPTS_FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "memoryagentbench_prompts.json"
#: LongMemEval question types that share the first template.
_PLAIN_TYPES = ("single-session-user", "single-session-assistant", "multi-session")


@functools.lru_cache(maxsize=1)
def official_prompts() -> dict[str, Any]:
    """The official templates and judge prompts (loaded once)."""
    return json.loads(PROMPTS_FILE.read_text(encoding="utf-8"))


def longmemeval_prompt(
    question_type: str, question: str, answer: Any, response: str, *, abstention: bool
) -> str:
    """``get_anscheck_prompt``: the judge prompt for one question type (``abstention``: question id
    has ``_abs``)."""
    prompts = official_prompts()["longmemeval_judge"]
    if abstention:
        key = "abstention"
    elif question_type in _PLAIN_TYPES:
        key = "|".join(_PLAIN_TYPES)
    elif question_type in prompts:
        key = question_type
    else:
        raise ValueError(
            f"LongMemEval: unknown question type {question_type!r}; known: "
            f"{', '.join(_PLAIN_TYPES)}, "
            "temporal-reasoning, knowledge-update, single-session-preference"
        )
    return prompts[key].format(question, answer, response)


def longmemeval_verdict(reply: str | None) -> bool:
    """Correct iff the judge's reply contains ``yes`` (any case); no reply is wrong."""
    return bool(reply) and "yes" in reply.strip().lower()  # type: ignore[union-attr]


def judge_longmemeval(
    judge: Any, question_type: str, question: str, answer: Any, response: str, *, abstention: bool
) -> judge_mod.JudgeResult:
    """One official LongMemEval judge call (``n=1, temperature=0, max_tokens=10``)."""
    prompt = longmemeval_prompt(question_type, question, answer, response, abstention=abstention)
    return judge_mod.call_judge(judge, prompt, params=judge_mod.LONGMEMEVAL_JUDGE)


def summary_prompts(
    summary: str, keypoints: list[str], expert_summary: str
) -> tuple[str, str, str]:
    """The fluency, recall and precision prompts for one summary (the model's reply, stripped)."""
    book = official_prompts()["infbench_sum_judge"]
    text = summary.strip()
    points = "\n".join(f"{i + 1}. {kp}" for i, kp in enumerate(keypoints))
    return (
        book["fluency_prompt_book"].format(text=text),
        book["recall_prompt_book"].format(keypoints=points, summary=text),
        book["precision_prompt_book"].format(expert_summary=expert_summary, summary=text),
    )


def parse_json(text: str) -> dict[str, Any] | None:
    """``parse_json``: the last ``{...}`` of the reply as JSON, else the last fenced json block,
    else ``None``."""
    matches = re.findall(r"\{.*?\}", text, re.DOTALL)
    if not matches:
        return None
    for candidate in (matches, re.findall(r"(?:```json)(.+)(?:```)", text, re.DOTALL)):
        try:
            value = json.loads(candidate[-1])
        except (ValueError, IndexError):
            continue
        return value if isinstance(value, dict) else None
    return None


@dataclass(frozen=True)
class SummaryScore:
    """InfBench-Sum's judged scores of one summary (``f1`` is ``None`` when a judge reply
    did not parse)."""

    f1: float | None
    recall: float | None = None
    precision: float | None = None
    fluency: float | None = None
    error: str | None = None


def summary_score(
    fluency: dict[str, Any] | None,
    recall: dict[str, Any] | None,
    precision: dict[str, Any] | None,
    n_keypoints: int,
) -> SummaryScore:
    """``check_metrics``' arithmetic on the three parsed judge replies."""
    if fluency is None or recall is None or precision is None:
        return SummaryScore(f1=None, error="a judge reply had no parseable JSON")
    try:
        rec = recall["recall"] / n_keypoints if n_keypoints > 0 else 0
        prec = (
            precision["precision"] / precision["sentence_count"]
            if precision["sentence_count"] > 0
            else 0
        )
        f1 = fluency["fluency"] * 2 * (rec * prec) / (rec + prec) if rec + prec > 0 else 0
    except (KeyError, TypeError, ZeroDivisionError) as exc:
        return SummaryScore(
            f1=None, error=f"judge JSON without the expected numbers ({type(exc).__name__}: {exc})"
        )
    return SummaryScore(
        f1=float(f1), recall=float(rec), precision=float(prec), fluency=float(fluency["fluency"])
    )


def judge_summary(
    judge: Any, summary: str, keypoints: list[str], expert_summary: str
) -> SummaryScore:
    """The three official InfBench-Sum judge calls for one summary and their F1."""
    replies = [
        judge_mod.call_judge(judge, p, params=judge_mod.INFBENCH_SUM_JUDGE)
        for p in summary_prompts(summary, keypoints, expert_summary)
    ]
    failed = next((r.error for r in replies if r.error), None)
    if failed:
        return SummaryScore(f1=None, error=failed)
    fluency, recall, precision = (parse_json(r.text or "") for r in replies)
    return summary_score(fluency, recall, precision, len(keypoints))
