"""LongBench v2: 503 multiple-choice questions over 8k-2M-word contexts.

Records (``data.json`` of the hub dataset ``THUDM/LongBench-v2``) have ``_id, domain,
sub_domain, difficulty, length, question, choice_A..choice_D, answer, context``.
Full-context prompts use the official ``0shot`` template, or with the loader option
``setting="cot"`` (``--loader-option setting=cot``) the official chain-of-thought setting:
``0shot_cot`` with 1,024 tokens, then ``0shot_cot_ans`` around that reasoning with 128
tokens, whose reply is scored. Every strategy gets the official output-format
instruction in ``Question.instruction``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import BENCHMARKS, Sample, data_root, load_records
from longctx.experiments.metrics import longbench_v2 as m
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question

VERSION = 2
HUB_REPO = "THUDM/LongBench-v2"

INSTRUCTION = 'Format your response as follows: "The correct answer is (insert answer here)".'

#: Official ``prompts/0shot.txt`` (placeholders ``$DOC$ $Q$ $C_A$ .. $C_D$``).
PROMPT_0SHOT = (
    "Please read the following text and answer the question below.\n\n<text>\n$DOC$\n</text>\n\n"
    "What is the correct answer to this question: $Q$\nChoices:\n(A) $C_A$\n(B) $C_B$\n"
    "(C) $C_C$\n(D) $C_D$\n\n" + INSTRUCTION
)

#: Official ``prompts/0shot_rag.txt``; ``$DOC$`` holds ``Retrieved chunk {k}: {content}`` blocks.
PROMPT_RAG = PROMPT_0SHOT.replace(
    "Please read the following text and", "Please read the following retrieved text chunks and", 1
)

#: Official ``prompts/0shot_cot.txt``: the reasoning call (note "questions" and the curly
#: apostrophe, as official).
PROMPT_COT = (
    "Please read the following text and answer the questions below.\n\n<text>\n$DOC$\n</text>\n\n"
    "What is the correct answer to this question: $Q$\nChoices:\n(A) $C_A$\n(B) $C_B$\n"
    "(C) $C_C$\n(D) $C_D$\n\n"
    "Let\u2019s think step by step:"
)

#: Official ``prompts/0shot_cot_ans.txt``: the answer call; ``$COT$`` is the first reply, stripped.
PROMPT_COT_ANS = (
    "Please read the following text and answer the questions below.\n\n"
    "The text is too long and omitted here.\n\n"
    "What is the correct answer to this question: $Q$\nChoices:\n(A) $C_A$\n(B) $C_B$\n"
    "(C) $C_C$\n(D) $C_D$\n\n"
    "Let\u2019s think step by step: $COT$\n\n"
    "Based on the above, what is the single, most likely answer choice? " + INSTRUCTION
)

#: The published settings of ``pred.py``: ``0shot`` (default) and ``cot`` (``--cot``).
SETTINGS = ("0shot", "cot")

#: Official ``config/model2maxlen.json`` budget for 128k models (200000 for claude-3.5-sonnet).
MAX_PROMPT_TOKENS = 120000
#: ``pred.py``: ``max_new_tokens=128`` and ``temperature=0.1`` for the 0-shot and RAG settings
#: and for the answer call of the CoT setting, whose reasoning call gets 1,024 tokens.
MAX_NEW_TOKENS = 128
COT_MAX_NEW_TOKENS = 1024
TEMPERATURE = 0.1


def _sample(record: dict[str, Any], setting: str) -> Sample:
    choices = {k: str(record[f"choice_{k}"]) for k in "ABCD"}
    sample_id = str(record["_id"])
    return Sample(
        sample_id=sample_id,
        benchmark="longbench_v2",
        dataset=str(record.get("domain") or "longbench_v2"),
        corpus=Corpus(
            [
                Document(
                    doc_id=f"{sample_id}-context",
                    text=record["context"],
                    title=record.get("domain", ""),
                )
            ]
        ),
        question=Question(
            text=record["question"],
            choices=choices,
            instruction=INSTRUCTION,
            metadata={"sample_id": sample_id},
        ),
        answers=(str(record["answer"]),),
        metadata={
            **{k: record.get(k) for k in ("domain", "sub_domain", "difficulty", "length")},
            "setting": setting,
        },
    )


def load(
    path: str | Path | None = None, *, datasets: Sequence[str] | None = None, setting: str = "0shot"
) -> list[Sample]:
    """LongBench v2 samples from ``<path or $LONGCTX_DATA_DIR/longbench_v2>/data.json``.

    Args:
        path: Folder with ``data.json`` (or ``data.jsonl`` / ``data.parquet``).
        datasets: Optional list of domains to keep (e.g. ``["Single-Document QA"]``).
        setting: ``"0shot"`` (the default) or ``"cot"``: the full-context prompt and calls of
            ``pred.py`` without or with ``--cot``.
    """
    if setting not in SETTINGS:
        raise ValueError(
            f"LongBench v2: setting must be one of {', '.join(SETTINGS)}, got {setting!r}"
        )
    records = load_records(
        data_root("longbench_v2", path), "data", hub=(HUB_REPO, None, "train"), what="LongBench v2"
    )
    samples = [_sample(r, setting) for r in records]
    return [s for s in samples if datasets is None or s.dataset in datasets]


def _fill(template: str, sample: Sample, context: str) -> str:
    """Sequential ``str.replace`` of the placeholders, as ``pred.py`` does."""
    choices = sample.question.choices or {}
    text = template.replace("$DOC$", context.strip()).replace("$Q$", sample.question.text.strip())
    for k in "ABCD":
        text = text.replace(f"$C_{k}$", choices[k].strip())
    return text


def prompt(sample: Sample, context: str | None = None) -> str:
    """The official ``0shot`` (or, in the CoT setting, ``0shot_cot``) prompt around ``context``
    (default: the item's whole context)."""
    template = PROMPT_COT if sample.metadata.get("setting") == "cot" else PROMPT_0SHOT
    return _fill(template, sample, sample.corpus[0].text if context is None else context)


def cot_answer_prompt(sample: Sample, reasoning: str) -> str:
    """The official ``0shot_cot_ans`` prompt: the question, its choices and the reasoning reply
    (``$COT$`` replaced last, after the other placeholders, as ``pred.py`` does)."""
    return _fill(PROMPT_COT_ANS, sample, "").replace("$COT$", reasoning.strip())


def rag_prompt(sample: Sample, chunks: Sequence[str]) -> str:
    """The official ``--rag`` prompt: chunks (already in ``c_idx`` order) as
    ``Retrieved chunk {k}: ...``."""
    return _fill(
        PROMPT_RAG,
        sample,
        "\n\n".join(f"Retrieved chunk {k}: {c}" for k, c in enumerate(chunks, 1)),
    )


def protocol(sample: Sample) -> dict[str, Any]:
    """128 new tokens at temperature 0.1; prompts middle-truncated to 120,000 tokens; RAG chunks in
    document (``c_idx``) order; in the CoT setting a 1,024-token reasoning call comes first."""
    settings: dict[str, Any] = {
        "max_new_tokens": MAX_NEW_TOKENS,
        "max_input_tokens": MAX_PROMPT_TOKENS,
        "temperature": TEMPERATURE,
        "rag_order": "document",
    }
    if sample.metadata.get("setting") == "cot":
        settings |= {
            "reasoning_max_new_tokens": COT_MAX_NEW_TOKENS,
            "answer_prompt": functools.partial(cot_answer_prompt, sample),
        }
    return settings


@BENCHMARKS.register(
    "longbench_v2",
    version=VERSION,
    load=load,
    prompt=prompt,
    protocol=protocol,
    rag_prompt=rag_prompt,
)
def score(pairs: Sequence[tuple[Sample, Any]], **_: Any) -> dict:
    """Accuracy tables: ours (failed calls count as invalid) and the official one (failed dropped).

    Returns:
        ``overall/easy/hard/short/medium/long`` (x100, 1 decimal) counting failed calls as
        invalid; ``compensated`` (invalid = 0.25); ``official_drops_failed`` and
        ``official_drops_failed_compensated`` reproduce ``result.py`` on a results file
        that lacks the failed samples; ``n_failed`` and ``n_invalid`` counts.
    """
    judged = [
        m.JudgedAnswer(
            difficulty=str(s.metadata.get("difficulty")),
            length=str(s.metadata.get("length")),
            gold=s.answers[0],
            choice=None if p.failed else m.extract_choice(p.text_or_empty),
            failed=p.failed,
        )
        for s, p in pairs
    ]
    return m.accuracy_table(judged) | {
        "compensated": m.accuracy_table(judged, compensated=True),
        "official_drops_failed": m.accuracy_table(judged, drop_failed=True),
        "official_drops_failed_compensated": m.accuracy_table(
            judged, compensated=True, drop_failed=True
        ),
        "n_failed": sum(1 for j in judged if j.failed),
        "n_invalid": sum(1 for j in judged if j.choice is None),
        "per_sample": {
            s.sample_id: 100.0 * (j.choice == j.gold) for (s, _), j in zip(pairs, judged)
        },
    }
