"""MemoryAgentBench (Hu et al., ICLR 2026): inject once, ask many; one long context, many questions.

Official code HUST-AI-HYZ/MemoryAgentBench @ 455306d; data ``ai-hyz/MemoryAgentBench``
(records read by :mod:`longctx.experiments.benchmarks.memoryagentbench_data`). Each record becomes
one :class:`Sample` per question, all sharing the record's one :class:`~retrieval.Corpus`,
so a run indexes (or reads) each context once for all its questions. The sub-datasets and
their numbers are the official data configs (``configs/data_conf``): :data:`CONFIGS`.

Prompts are the long-context agent's and the BM25 RAG agent's (``utils/templates.py``,
:mod:`longctx.experiments.benchmarks.memoryagentbench_prompts`); scores are the official
per-dataset metrics (:mod:`longctx.experiments.metrics.memoryagentbench`), LongMemEval and
InfBench-Sum judged by an LLM when ``judge=`` is given
(:mod:`longctx.experiments.metrics.memoryagentbench_judge`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks import memoryagentbench_prompts as p
from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    BenchmarkDataError,
    Sample,
    data_root,
    macro_strata,
    only_known,
)
from longctx.experiments.benchmarks.memoryagentbench_data import (
    SPLITS,
    Item,
    parse_item,
    read_split,
    split_files,
)
from longctx.experiments.metrics import memoryagentbench as m
from longctx.experiments.metrics import memoryagentbench_judge as mj
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question

VERSION = 1
#: ``temperature`` of the official agent configs (``Long_context_agent_gpt-4o-mini.yaml``,
#: ``Simple_rag_gpt-4o-mini-bm25.yaml``).
TEMPERATURE = 0.7
#: The BM25 RAG agent's ``retrieve_num`` (``Simple_rag_gpt-4o-mini-bm25.yaml``); run ``rag`` with
#: ``top_k=10, chunk_size=4096``.
RAG_TOP_K = 10
#: The reference long-context agent (gpt-4o-mini): ``input_length_limit`` 128,000, ``buffer_length``
#: 4,000. It cuts its memory to the last ``context_max_length`` tokens only where
#: ``input_length_limit - buffer - answer <= context_max_length + 50,000``.
REFERENCE_INPUT_LIMIT = 128_000 - 4_000
TRUNCATION_SLACK = 50_000
#: Where ReDial's movie names are: ``entity2id.json`` (the official
#: ``processed_data/Recsys_Redial/``) beside the split files.
ENTITY_FILE = "entity2id.json"


@dataclass(frozen=True)
class Config:
    """One official data config: its split, ``context_max_length``, ``generation_max_length``,
    ``max_test_samples``, headline metric."""

    split: str
    context_max_length: int
    max_new_tokens: int
    max_contexts: int
    headline: str


def _configs() -> dict[str, Config]:
    ar, cr, lru, ttl = SPLITS[0], SPLITS[3], SPLITS[2], SPLITS[1]
    table = {
        "eventqa_65536": Config(ar, 65_536, 40, 5, "substring_exact_match"),
        "eventqa_131072": Config(ar, 131_072, 40, 5, "substring_exact_match"),
        "eventqa_full": Config(ar, 800_000, 40, 5, "substring_exact_match"),
        "longmemeval_s_-1_500": Config(ar, 150_000, 50, 500, "llm_judge"),
        "longmemeval_s*": Config(ar, 400_000, 50, 5, "llm_judge"),
        "ruler_qa1_197K": Config(ar, 220_000, 50, 100, "substring_exact_match"),
        "ruler_qa2_421K": Config(ar, 524_288, 50, 100, "substring_exact_match"),
        "detective_qa": Config(lru, 200_000, 2000, 10, "exact_match"),
        "infbench_sum_eng_shots2": Config(lru, 1_200_000, 1200, 100, "llm_judge_f1"),
        "recsys_redial_full": Config(ttl, 1_480_000, 300, 1, "recsys_recall@5"),
    }
    for name, shots in (
        ("banking77", 5900),
        ("clinic150", 7050),
        ("nlu", 8296),
        ("trec_coarse", 6600),
        ("trec_fine", 6400),
    ):
        table[f"icl_{name}_{shots}shot_balance"] = Config(ttl, 131_072, 20, 100, "exact_match")
    for hops in ("mh", "sh"):
        for size, length in (("6k", 6000), ("32k", 32_768), ("64k", 65_536), ("262k", 300_000)):
            table[f"factconsolidation_{hops}_{size}"] = Config(
                cr, length, 10, 1, "substring_exact_match"
            )
    return table


#: Sub-dataset (``metadata.source``, the configs' ``sub_dataset``) -> its official config.
CONFIGS = _configs()
DATASETS = tuple(CONFIGS)


def memory_budget(source: str) -> int | None:
    """The tokens the reference long-context agent keeps of its memory for ``source``
    (``None``: all of it)."""
    cfg = CONFIGS[source]
    return (
        cfg.context_max_length
        if REFERENCE_INPUT_LIMIT - cfg.max_new_tokens <= cfg.context_max_length + TRUNCATION_SLACK
        else None
    )


def _samples(item: Item, position: int, entity_file: str | None) -> list[Sample]:
    corpus = Corpus(
        [
            Document(
                doc_id=f"{item.source}-{position}-context",
                text=item.context,
                title="memoryagentbench",
            )
        ]
    )
    cfg = CONFIGS[item.source]
    samples = []
    for qa in item.qas:
        sample_id = f"{item.source}-{position}-{qa.index}"
        text = p.query(item.source, qa.question)
        samples.append(
            Sample(
                sample_id=sample_id,
                benchmark="memoryagentbench",
                dataset=item.source,
                corpus=corpus,
                question=Question(text=text, metadata={"sample_id": sample_id}),
                answers=tuple(str(a) for a in m.gold_list(qa.answer)),
                metadata={
                    "split": cfg.split,
                    "context_index": position,
                    "question_index": qa.index,
                    "question": qa.question,
                    "gold": qa.answer,
                    "question_id": qa.question_id,
                    "question_type": qa.question_type,
                    "qa_pair_id": qa.qa_pair_id,
                    "keypoints": list(item.metadata.get("keypoints") or []),
                    "entity_file": entity_file,
                },
            )
        )
    return samples


def load(
    path: str | Path | None = None,
    *,
    datasets: Sequence[str] | None = None,
    all_contexts: bool = False,
    hub: bool = True,
) -> list[Sample]:
    """MemoryAgentBench samples, one per question, from
    ``<path or $LONGCTX_DATA_DIR/memoryagentbench>``.

    Args:
        path: Folder with the split files (``Accurate_Retrieval.parquet``, ... or the hub's
            ``data/`` folder).
        datasets: Sub-datasets to load (default every one of :data:`CONFIGS` found in the
            files read).
        all_contexts: Every context of a sub-dataset; by default its first
            ``max_test_samples`` (official).
        hub: Try the hub for a split that is not on disk.
    """
    root = data_root("memoryagentbench", path)
    wanted = (
        only_known(datasets, DATASETS, "memoryagentbench")
        if datasets is not None
        else list(DATASETS)
    )
    splits = [s for s in SPLITS if any(CONFIGS[d].split == s for d in wanted)]
    if (
        datasets is None
    ):  # every split present on disk; the hub only for a selection that asks for it
        splits = [s for s in splits if split_files(root, s)] or splits
    counts: dict[str, int] = {}
    samples: list[Sample] = []
    for split in splits:
        for where, record in read_split(root, split, hub=hub):
            item = parse_item(record, where)
            if item.source not in wanted:
                continue
            if CONFIGS[item.source].split != split:
                raise BenchmarkDataError(
                    f"MemoryAgentBench {where}: field 'metadata.source' {item.source!r} belongs "
                    f"to split {CONFIGS[item.source].split}"
                )
            position = counts.get(item.source, 0)
            counts[item.source] = position + 1
            if not all_contexts and position >= CONFIGS[item.source].max_contexts:
                continue
            entity = _entity_file(root, item) if "recsys" in item.source else None
            samples += _samples(item, position, entity)
    if not samples:
        raise BenchmarkDataError(
            f"MemoryAgentBench: no records of {', '.join(wanted)} in {root}; see "
            "docs/benchmarks-data.md."
        )
    return samples


def _entity_file(root: Path, item: Item) -> str:
    path = root / ENTITY_FILE
    if not path.is_file():
        raise BenchmarkDataError(
            f"MemoryAgentBench {item.where}: {item.source} is scored against movie names: put "
            f"ReDial's {ENTITY_FILE} in {root}."
        )
    return str(path)


@functools.lru_cache(maxsize=2)
def movie_names(entity_file: str) -> dict[int, str]:
    """ReDial's movie id -> cleaned name (``extract_movie_name`` of each key of
    ``entity2id.json``)."""
    data = json.loads(Path(entity_file).read_text(encoding="utf-8"))
    return {int(entity_id): m.movie_name(name) for name, entity_id in data.items()}


@functools.lru_cache(maxsize=4)
def _memory(source: str, context: str) -> str:
    return p.memorized_context(source, context, memory_budget(source))


def prompt(sample: Sample, context: str | None = None) -> str:
    """The long-context agent's user turn: the memorized context (or ``context``), a
    newline, the query."""
    return p.long_context_message(
        _memory(sample.dataset, sample.corpus[0].text if context is None else context),
        sample.question.text,
    )


def rag_prompt(sample: Sample, chunks: Sequence[str]) -> str:
    """The BM25 RAG agent's user turn around the retrieved chunks (in rank order)."""
    return p.rag_message(sample.dataset, chunks, sample.metadata["question"])


def protocol(sample: Sample) -> dict[str, Any]:
    """``generation_max_length`` of the sub-dataset's config at the agents' temperature 0.7, their
    system turn; RAG chunks in rank order."""
    return {
        "max_new_tokens": CONFIGS[sample.dataset].max_new_tokens,
        "temperature": TEMPERATURE,
        "rag_order": "rank",
        "system": p.system_message(),
    }


def _judged(sample: Sample, text: str, judge: Any) -> tuple[float | None, bool]:
    """(score 0-1 or ``None`` when the official script would drop the item, judge error) of a
    judged dataset."""
    meta = sample.metadata
    if "longmemeval" in sample.dataset:
        abstention = "_abs" in str(meta.get("question_id") or "")
        reply = mj.judge_longmemeval(
            judge,
            meta.get("question_type") or "",
            meta["question"],
            meta["gold"],
            text,
            abstention=abstention,
        )
        return float(mj.longmemeval_verdict(reply.text)), reply.error is not None
    gold = meta["gold"]
    expert = gold[0] if isinstance(gold, list) else gold
    result = mj.judge_summary(
        judge,
        text,
        list(meta.get("keypoints") or []),
        expert if isinstance(expert, str) else str(expert),
    )
    return result.f1, result.error is not None


def item_metrics(
    sample: Sample, text: str, judge: Any = None
) -> tuple[dict[str, float], float | None, bool]:
    """(official metrics, headline 0-1 or ``None`` if the official script drops it, judge error)
    of one reply."""
    names = (
        movie_names(sample.metadata["entity_file"]) if sample.metadata.get("entity_file") else None
    )
    values = m.post_process(text, sample.metadata["gold"], sample.dataset, movie_names=names)
    headline = CONFIGS[sample.dataset].headline
    if not headline.startswith("llm_judge"):
        return values, values[headline], False
    if (
        judge is None
    ):  # no judge: a declared fallback, substring match (LongMemEval) or token F1 (InfBench-Sum)
        return values, values["substring_exact_match" if headline == "llm_judge" else "f1"], False
    score, error = _judged(sample, text, judge)
    return values | {headline: score if score is not None else 0.0}, score, error


def _mean(values: Sequence[float]) -> float | None:
    return round(100 * sum(values) / len(values), 2) if values else None


@BENCHMARKS.register(
    "memoryagentbench",
    version=VERSION,
    load=load,
    prompt=prompt,
    protocol=protocol,
    rag_prompt=rag_prompt,
    strata=macro_strata(lambda s: s.dataset),
)  # the headline is the macro mean over sub-datasets
def score(pairs: Sequence[tuple[Sample, Any]], *, judge: Any = None, **_: Any) -> dict:
    """Each sub-dataset's official headline x 100 (README metric table), every metric's mean, per
    competency and overall.

    Ours counts a failed call as 0; each sub-dataset's ``official`` is the mean ``main.py``
    prints, which leaves failed calls out (and the summarization script leaves out a summary
    whose judge replies do not parse); ``official_drops_failed.overall`` is their mean.
    ``overall`` is the mean over sub-datasets, ``competencies`` the mean over each split's
    sub-datasets.

    Args:
        pairs: ``(Sample, Prediction)`` pairs.
        judge: A LangChain chat model for LongMemEval (gpt-4o officially) and InfBench-Sum
            (gpt-4o-2024-05-13); without one their headline falls back to substring exact match
            and token F1, and ``judge`` reads ``none``.
    """
    per_dataset: dict[str, dict[str, list[float]]] = {}
    official: dict[str, list[float]] = {}
    per_sample: dict[str, float] = {}
    errors = 0
    for sample, pred in pairs:
        cell = per_dataset.setdefault(sample.dataset, {})
        values: dict[str, float] = {}
        if pred.failed:
            headline, err = 0.0, False
        else:
            values, judged, err = item_metrics(sample, pred.text_or_empty, judge)
            headline = judged if judged is not None else 0.0
            if judged is not None:
                official.setdefault(sample.dataset, []).append(judged)
        errors += err
        per_sample[sample.sample_id] = 100.0 * headline
        cell.setdefault("headline", []).append(headline)
        for key, value in values.items():
            cell.setdefault(key, []).append(float(value))
    heads = {d: h for d, cell in per_dataset.items() if (h := _mean(cell["headline"])) is not None}
    datasets: dict[str, dict[str, Any]] = {
        d: {k: _mean(v) for k, v in cell.items()}
        | {
            "metric": CONFIGS[d].headline,
            "n": len(cell["headline"]),
            "official": _mean(official.get(d, [])),
        }
        for d, cell in per_dataset.items()
    }
    splits = {s: [h for d, h in heads.items() if CONFIGS[d].split == s] for s in SPLITS}
    answered = [v["official"] for v in datasets.values() if v["official"] is not None]
    return {
        "overall": round(sum(heads.values()) / len(heads), 2) if heads else None,
        "competencies": {s: round(sum(v) / len(v), 2) for s, v in splits.items() if v},
        "datasets": datasets,
        "official_drops_failed": {
            "overall": round(sum(answered) / len(answered), 2) if answered else None
        },
        "n": len(pairs),
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "n_judge_errors": errors,
        "judge": "llm" if judge is not None else "none",
        "per_sample": per_sample,
    }
