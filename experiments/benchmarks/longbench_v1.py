"""LongBench v1 (21 datasets) and LongBench-E (13 datasets, length buckets).

Records (``data/{dataset}.jsonl`` from the official ``data.zip``, or the hub's
``THUDM/LongBench`` configs) have ``input, context, answers, length, dataset,
language, all_classes, _id``. Each becomes one :class:`Sample` whose corpus is the
record's context as a single document. Full-context prompts are the official
``dataset2prompt`` templates; other strategies get :data:`INSTRUCTIONS`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    Sample,
    data_root,
    load_records,
    only_known,
)
from longctx.experiments.metrics import longbench_v1 as m
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question

VERSION = 1
HUB_REPO = "THUDM/LongBench"

#: Official ``dataset2prompt`` templates (``{context}``, ``{input}``), typos included.
PROMPTS: dict[str, str] = json.loads(
    resources.files(__package__).joinpath("longbench_v1_prompts.json").read_text("utf-8")
)

#: Official ``dataset2maxlen``: max new tokens per dataset.
MAX_NEW_TOKENS = {
    **dict.fromkeys(["narrativeqa", "qasper", "dureader", "samsum"], 128),
    **dict.fromkeys(
        ["multifieldqa_en", "multifieldqa_zh", "trec", "lsht", "lcc", "repobench-p"], 64
    ),
    **dict.fromkeys(
        [
            "hotpotqa",
            "2wikimqa",
            "musique",
            "triviaqa",
            "passage_count",
            "passage_retrieval_en",
            "passage_retrieval_zh",
        ],
        32,
    ),
    **dict.fromkeys(["gov_report", "qmsum", "multi_news", "vcsum"], 512),
}

#: The six categories whose averages make the overall (macro) score.
CATEGORIES = {
    "single_doc_qa": ("narrativeqa", "qasper", "multifieldqa_en", "multifieldqa_zh"),
    "multi_doc_qa": ("hotpotqa", "2wikimqa", "musique", "dureader"),
    "summarization": ("gov_report", "qmsum", "multi_news", "vcsum"),
    "few_shot": ("trec", "triviaqa", "samsum", "lsht"),
    "synthetic": ("passage_count", "passage_retrieval_en", "passage_retrieval_zh"),
    "code": ("lcc", "repobench-p"),
}
DATASETS = tuple(d for names in CATEGORIES.values() for d in names)
LONGBENCH_E_DATASETS = (
    "qasper",
    "multifieldqa_en",
    "hotpotqa",
    "2wikimqa",
    "gov_report",
    "multi_news",
    "trec",
    "triviaqa",
    "samsum",
    "passage_count",
    "passage_retrieval_en",
    "lcc",
    "repobench-p",
)

#: Stop sequences of the official generation: ``pred.py`` (and ``retrieval/pred.py``) add the
#: newline token to ``eos_token_id`` for samsum only ("prevent illegal output on samsum").
STOP = {"samsum": ("\n",)}

#: Chat template is NOT applied to these in the official pred.py (they are completion-style).
NO_CHAT_TEMPLATE = frozenset({"trec", "triviaqa", "samsum", "lsht", "lcc", "repobench-p"})

_ONLY = "Only give me the answer and do not output any other words."
#: Output-format instruction for non-full-context strategies, worded from each template.
INSTRUCTIONS = {
    "narrativeqa": (
        "Answer the question as concisely as you can, using a single phrase if possible. Do not "
        "provide any explanation."
    ),
    "qasper": PROMPTS["qasper"].split("\n\n")[0].split("a question. ", 1)[1],
    "multifieldqa_en": _ONLY,
    "multifieldqa_zh": "只告诉我答案，不要输出任何其他字词。",
    "hotpotqa": _ONLY,
    "2wikimqa": _ONLY,
    "musique": _ONLY,
    "triviaqa": _ONLY,
    "dureader": "请基于上述文章回答问题。",
    "gov_report": "Write a one-page summary.",
    "multi_news": "Write a one-page summary of all the news.",
    "qmsum": "Answer the query in one or more sentences.",
    "vcsum": "写一段总结，总结会议的内容。",
    "trec": "Answer with the question type only, as in the examples.",
    "lsht": "只回答新闻的类别，格式同例子。",
    "samsum": "Summarize the dialogue into a few short sentences.",
    "passage_count": (
        "The output format should only contain the number, such as 1, 2, 3, and so on."
    ),
    "passage_retrieval_en": 'The answer format must be like "Paragraph 1", "Paragraph 2", etc.',
    "passage_retrieval_zh": '答案格式必须是"段落1"，"段落2"等格式',
    "lcc": "Output only the next line of code.",
    "repobench-p": "Output only the next line of code.",
}

#: Question text for datasets whose ``input`` is empty or is not itself a question.
_TASKS = {
    "gov_report": "Write a one-page summary of the report.",
    "multi_news": "Write a one-page summary of all the news.",
    "vcsum": "总结会议的内容。",
    "lcc": "What is the next line of code?",
    "trec": "What is the type of this question? {input}",
    "lsht": "这条新闻属于哪个类别？{input}",
    "passage_count": "How many unique paragraphs are there after removing duplicates?",
    "passage_retrieval_en": "Which paragraph is this abstract from? {input}",
    "passage_retrieval_zh": "这个摘要出自哪一段？{input}",
    "repobench-p": "What is the next line of code after: {input}",
}


def _sample(record: dict[str, Any], dataset: str, benchmark: str, index: int) -> Sample:
    base = dataset.removesuffix("_e")
    text = record.get("input") or ""
    if base in _TASKS:
        text = _TASKS[base].replace("{input}", text)
    length = int(record.get("length") or 0)
    sample_id = str(record.get("_id") or f"{dataset}-{index}")
    metadata = {
        "input": record.get("input") or "",
        "length": length,
        "language": record.get("language"),
        "all_classes": list(record.get("all_classes") or []),
        "category": next(c for c, names in CATEGORIES.items() if base in names),
        "max_new_tokens": MAX_NEW_TOKENS[base],
        "chat_template": base not in NO_CHAT_TEMPLATE,
    }
    if benchmark == "longbench_e":
        metadata["length_bucket"] = m.longbench_e_bucket(length)
    return Sample(
        sample_id=sample_id,
        benchmark=benchmark,
        dataset=base,
        corpus=Corpus(
            [Document(doc_id=f"{sample_id}-context", text=record["context"], title=base)]
        ),
        question=Question(
            text=text,
            instruction=INSTRUCTIONS[base],
            metadata={"sample_id": sample_id, "dataset": base},
        ),
        answers=tuple(str(a) for a in record["answers"]),
        metadata=metadata,
    )


def _load(
    benchmark: str, known: Sequence[str], path: str | Path | None, datasets: Sequence[str] | None
) -> list[Sample]:
    folder = data_root("longbench", path)
    samples: list[Sample] = []
    for name in only_known(datasets, known, benchmark):
        config = f"{name}_e" if benchmark == "longbench_e" else name
        records = load_records(
            folder, config, hub=(HUB_REPO, config, "test"), what=f"LongBench dataset {config!r}"
        )
        samples += [_sample(r, config, benchmark, i) for i, r in enumerate(records)]
    return samples


def load(path: str | Path | None = None, *, datasets: Sequence[str] | None = None) -> list[Sample]:
    """LongBench v1 samples from ``<path or $LONGCTX_DATA_DIR/longbench>/{dataset}.jsonl``.

    Args:
        path: Folder with the official files (default ``$LONGCTX_DATA_DIR/longbench``).
        datasets: Subset of :data:`DATASETS` (all 21 when ``None``).
    """
    return _load("longbench", DATASETS, path, datasets)


def load_e(
    path: str | Path | None = None, *, datasets: Sequence[str] | None = None
) -> list[Sample]:
    """LongBench-E samples from ``{dataset}_e.jsonl``, with ``length_bucket`` metadata."""
    return _load("longbench_e", LONGBENCH_E_DATASETS, path, datasets)


def prompt(sample: Sample, context: str | None = None) -> str:
    """The official prompt: the dataset's template filled with the context and input.

    ``context`` replaces the item's own context: LongBench v1's retrieval runs fill the
    same template with the retrieved chunks joined in rank order (``retrieval/pred.py``).
    """
    return PROMPTS[sample.dataset].format(
        context=sample.corpus[0].text if context is None else context,
        input=sample.metadata["input"],
    )


#: Official ``model2maxlen`` budgets are the model window minus 500 (e.g. 31500 for 32k models).
WINDOW_RESERVE = 500


def protocol(sample: Sample) -> dict[str, Any]:
    """``dataset2maxlen`` answer budget, window - 500 input budget, greedy, chat template and stop
    per dataset."""
    return {
        "max_new_tokens": MAX_NEW_TOKENS[sample.dataset],
        "window_reserve": WINDOW_RESERVE,
        "temperature": 0.0,
        "chat_template": sample.dataset not in NO_CHAT_TEMPLATE,
        "stop": STOP.get(sample.dataset),
    }


def headline_strata(samples: Sequence[Sample]) -> tuple[dict[str, Any], dict[Any, float]]:
    """Datasets weighed as the overall macro-averages them: categories equally, datasets
    equally within one."""
    keys = {s.sample_id: s.dataset for s in samples}
    present = {c: [d for d in names if d in set(keys.values())] for c, names in CATEGORIES.items()}
    present = {c: names for c, names in present.items() if names}
    return keys, {d: 1 / (len(present) * len(names)) for names in present.values() for d in names}


@BENCHMARKS.register(
    "longbench_e",
    version=VERSION,
    load=load_e,
    prompt=prompt,
    protocol=protocol,
    strata=headline_strata,
)
@BENCHMARKS.register(
    "longbench",
    version=VERSION,
    load=load,
    prompt=prompt,
    protocol=protocol,
    strata=headline_strata,
)
def score(pairs: Sequence[tuple[Sample, Any]], **_: Any) -> dict:
    """Official LongBench aggregation: dataset means x 100, category means, macro overall.

    A failed call is scored as the empty answer (0 for every metric) and counted in
    ``n_failed``. For LongBench-E samples the per-dataset scores are split by bucket.
    """
    per_dataset: dict[str, list[float]] = {}
    per_bucket: dict[str, dict[str, list[float]]] = {}
    per_sample: dict[str, float] = {}
    for sample, pred in pairs:
        s = m.score_item(
            sample.dataset, pred.text_or_empty, sample.answers, sample.metadata.get("all_classes")
        )
        per_sample[sample.sample_id] = round(100 * s, 2)
        per_dataset.setdefault(sample.dataset, []).append(s)
        if "length_bucket" in sample.metadata:
            per_bucket.setdefault(sample.dataset, {b: [] for b in m.LONGBENCH_E_BUCKETS})[
                sample.metadata["length_bucket"]
            ].append(s)
    datasets = {d: m.mean_percent(v) for d, v in per_dataset.items()}
    categories = {
        c: m.macro_average({d: datasets.get(d) for d in names}) for c, names in CATEGORIES.items()
    }
    result = {
        "datasets": datasets,
        "categories": {c: v for c, v in categories.items() if v is not None},
        "overall": m.macro_average(categories),
        "n": len(pairs),
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "per_sample": per_sample,
    }
    if per_bucket:
        buckets = {d: {b: m.mean_percent(v) for b, v in bs.items()} for d, bs in per_bucket.items()}
        result["length_buckets"] = buckets
        result["bucket_averages"] = {
            b: m.macro_average({d: buckets[d][b] for d in buckets}) for b in m.LONGBENCH_E_BUCKETS
        }
    return result
