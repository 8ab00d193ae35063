"""LV-Eval: 11 datasets x 5 length levels (16k-256k), keyword-gated F1.

Files are the official ``{dataset}_{level}.jsonl`` (flat, or under a ``{dataset}/``
folder as the hub archive unpacks); the hub fallback is ``infini-ai/LVEval`` (the name
the official ``utils.py`` loads; the README says ``Infinigence/LVEval``). Records have
``input, context, answers, length, dataset, language, answer_keywords,
confusing_facts``; keywords and confusing facts are kept in the metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    Sample,
    data_root,
    find_file,
    load_records,
    macro_strata,
    only_known,
)
from longctx.experiments.metrics import longbench_v1 as lb
from longctx.experiments.metrics import lveval as m
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question

VERSION = 1
HUB_REPO = "infini-ai/LVEval"

DATASETS = tuple(m.DATASET_METRIC)
LENGTH_LEVELS = ("16k", "32k", "64k", "128k", "256k")
CHINESE = frozenset(
    {"multifieldqa_zh_mixup", "factrecall_zh", "cmrc_mixup", "lic_mixup", "dureader_mixup"}
)

#: Official ``DATASET_MAXGEN``.
MAX_NEW_TOKENS = {d: (16 if d.startswith("factrecall") else 64) for d in DATASETS}

_EN_ONE = (
    "Questions and answers are only relevant to one passage. Only give me the answer and do not "
    "output any other explanation and evidence."
)
_EN_SOME = _EN_ONE.replace("one passage", "some passages")
_EN = (
    "Please answer the following question based on the given passages. {r}\n\n"
    "Article: {{context}}\n\n"
    "Please answer the following question based on the above passages. {r}\n\n"
    "Question: {{input}}\nAnswer:"
)
_ZH_MIX = (
    "请根据下面给定的文章回答问题，问题和答案只与其中一篇文章有关。\n\n"
    "文章：{{context}}\n\n"
    "{now}基于上述文章回答下面的问题，问题和答案只与其中一篇文章有关。\n\n"
    "问题：{{input}}\n回答："
)

#: Official ``DATASET_PROMPT`` templates.
PROMPTS = {
    "hotpotwikiqa_mixup": (
        "Answer the question based on the given passages. {r}\n\n"
        "Article: {{context}}\n\n"
        "Please answer the following question based on the above passages. {r}\n\n"
        "Question: {{input}}\nAnswer:"
    ).format(r=_EN_SOME),
    **{
        d: _EN.format(r=_EN_ONE)
        for d in ("loogle_SD_mixup", "loogle_CR_mixup", "loogle_MIR_mixup", "multifieldqa_en_mixup")
    },
    "multifieldqa_zh_mixup": (
        "请阅读以下文章并用中文回答问题，问题和答案只与其中一篇文章有关。"
        "只需要直接给出问题的答案，不要输出其他任何解释和证据。\n\n"
        "文章：{context}\n\n"
        "请基于上面的文章回答下面的问题，问题和答案只与其中一篇文章有关。"
        "只需要直接给出问题的答案，不要输出其他任何解释和证据。\n\n"
        "问题：{input}\n回答："
    ),
    "factrecall_en": (
        "Please answer the following questions based on the given article.\n\n"
        "Article: {context}\n\n"
        "Please answer the following questions based on the above article.\n\n"
        "Question: {input}\nAnswer:"
    ),
    "factrecall_zh": (
        "请基于给定的文章回答下述问题。\n\n"
        "文章：{context}\n\n"
        "现在请基于上述文章回答下面的问题。\n\n"
        "问题：{input}\n回答："
    ),
    "cmrc_mixup": _ZH_MIX.format(now="现在请"),
    "lic_mixup": _ZH_MIX.format(now="请现在"),
    "dureader_mixup": _ZH_MIX.format(now="现在请"),
}

INSTRUCTION_EN = "Only give me the answer and do not output any other explanation and evidence."
INSTRUCTION_ZH = "只需要直接给出问题的答案，不要输出其他任何解释和证据。"


def _sample(record: dict[str, Any], dataset: str, level: str, index: int) -> Sample:
    sample_id = f"{dataset}_{level}-{index}"
    return Sample(
        sample_id=sample_id,
        benchmark="lveval",
        dataset=dataset,
        corpus=Corpus(
            [Document(doc_id=f"{sample_id}-context", text=record["context"], title=dataset)]
        ),
        question=Question(
            text=record["input"],
            instruction=INSTRUCTION_ZH if dataset in CHINESE else INSTRUCTION_EN,
            metadata={"sample_id": sample_id, "dataset": dataset, "length_level": level},
        ),
        answers=tuple(str(a) for a in record["answers"]),
        metadata={
            "length_level": level,
            "length": record.get("length"),
            "language": record.get("language"),
            "answer_keywords": record.get("answer_keywords") or None,
            "confusing_facts": record.get("confusing_facts"),
            "max_new_tokens": MAX_NEW_TOKENS[dataset],
        },
    )


def load(
    path: str | Path | None = None,
    *,
    datasets: Sequence[str] | None = None,
    lengths: Sequence[str] | None = None,
) -> list[Sample]:
    """LV-Eval samples from ``<path or $LONGCTX_DATA_DIR/lveval>/{dataset}_{level}.jsonl``.

    Args:
        path: Folder with the official files (flat or one sub-folder per dataset).
        datasets: Subset of :data:`DATASETS` (all 11 when ``None``).
        lengths: Subset of :data:`LENGTH_LEVELS` (all 5 when ``None``).
    """
    root = data_root("lveval", path)
    samples: list[Sample] = []
    for dataset in only_known(datasets, DATASETS, "lveval"):
        for level in only_known(lengths, LENGTH_LEVELS, "lveval"):
            name = f"{dataset}_{level}"
            folder = root / dataset if find_file(root / dataset, name) else root
            records = load_records(
                folder, name, hub=(HUB_REPO, name, "test"), what=f"LV-Eval {name!r}"
            )
            samples += [_sample(r, dataset, level, i) for i, r in enumerate(records)]
    return samples


def prompt(sample: Sample, context: str | None = None) -> str:
    """The official prompt of the sample's dataset around ``context`` (default: its
    whole context)."""
    return PROMPTS[sample.dataset].format(
        context=sample.corpus[0].text if context is None else context, input=sample.question.text
    )


#: The official loop truncates to the model's max length minus 500 (e.g. 31500).
WINDOW_RESERVE = 500


def protocol(sample: Sample) -> dict[str, Any]:
    """``DATASET_MAXGEN`` (64; factrecall 16), greedy, window - 500 input budget."""
    return {
        "max_new_tokens": MAX_NEW_TOKENS[sample.dataset],
        "window_reserve": WINDOW_RESERVE,
        "temperature": 0.0,
    }


@BENCHMARKS.register(
    "lveval",
    version=VERSION,
    load=load,
    prompt=prompt,
    protocol=protocol,
    strata=macro_strata(lambda s: (s.dataset, s.metadata["length_level"])),
)  # overall: mean of dataset x level cells
def score(pairs: Sequence[tuple[Sample, Any]], *, all_answers: bool = False, **_: Any) -> dict:
    """Official aggregation: mean x 100 per ``{dataset}_{level}``, pivoted dataset x level.

    Args:
        pairs: ``(Sample, Prediction)`` pairs; failed calls score as the empty answer.
        all_answers: ``False`` (official) scores ``answers[0]`` only; ``True`` takes the
            max over all golds and is labelled ``scoring: all_answers`` in the result.

    Returns:
        ``datasets`` ({dataset: {level: score}}), ``levels`` (mean over datasets per level),
        ``overall`` (mean over all dataset x level cells), counts and the scoring label.
    """
    cells: dict[str, dict[str, list[float]]] = {}
    per_sample: dict[str, float] = {}
    for s, p in pairs:
        value = m.score_item(
            s.dataset,
            p.text_or_empty,
            list(s.answers),
            s.metadata.get("answer_keywords"),
            all_answers=all_answers,
        )
        per_sample[s.sample_id] = round(100 * value, 2)
        cells.setdefault(s.dataset, {}).setdefault(s.metadata["length_level"], []).append(value)
    table = {
        d: {
            lv: lb.mean_percent(v)
            for lv, v in sorted(levels.items(), key=lambda kv: LENGTH_LEVELS.index(kv[0]))
        }
        for d, levels in cells.items()
    }
    levels = {
        lv: lb.macro_average({d: table[d][lv] for d in table if lv in table[d]})
        for lv in LENGTH_LEVELS
    }
    flat = {f"{d}_{lv}": v for d, row in table.items() for lv, v in row.items()}
    return {
        "datasets": table,
        "levels": {lv: v for lv, v in levels.items() if v is not None},
        "overall": lb.macro_average(flat),
        "n": len(pairs),
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "scoring": "all_answers (fixed)" if all_answers else "answers[0] only (official)",
        "per_sample": per_sample,
    }
