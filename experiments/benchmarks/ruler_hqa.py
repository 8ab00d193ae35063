"""RULER-HotpotQA, MemAgent's headline evaluation: 128 HotpotQA questions at 7K to 3.5M tokens.

Files are MemAgent's ``eval_{N}.json`` (``taskutils/memory_data/different_docs_eval.py``;
the hub dataset ``BytedTsinghua-SIA/hotpotqa`` holds them), one per number ``N`` of
documents: a JSON list of ``{context, input, answers, num_docs, index}`` where
``context`` is ``"Document i:\\n<title>\\n<text>"`` blocks joined by blank lines. From
12,800 documents on, ``context`` is a list of document indices into the sorted unique
paragraphs of HotpotQA's ``hotpotqa_dev.json`` (distractor dev set), which must then
sit beside the eval files; the text is rebuilt as ``ruler_hqa_over1m.py`` does.

Scoring is ``sub_em`` on the extracted answer (``longctx.experiments.metrics.ruler_hqa``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    BenchmarkDataError,
    Sample,
    data_root,
    find_file,
    load_records,
    only_known,
)
from longctx.experiments.metrics import ruler_hqa as m
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question

VERSION = 1

#: Documents per item -> approximate tokens (``run.py``: "50~7K tokens, 100~14K tokens and so on";
#: ``RULER_HQA_TESTS`` 50..6400, ``RULER_HQA_TESTS_OVER_1M`` 12800 and 25600; paper: 7K to 3.5M).
LENGTHS = {
    50: "7K",
    100: "14K",
    200: "28K",
    400: "56K",
    800: "112K",
    1600: "224K",
    3200: "448K",
    6400: "896K",
    12800: "1.75M",
    25600: "3.5M",
}
DATASETS = tuple(f"eval_{n}" for n in LENGTHS)
#: Paragraph pool of the over-1M files (HotpotQA dev, distractor setting).
HOTPOTQA_DEV = "hotpotqa_dev.json"

INSTRUCTION = 'Format your response as follows: "Therefore, the answer is (insert answer here)".'
#: ``utils/openai_api.py`` ``template_0shot`` (placeholders ``$DOC$`` and ``$Q$``), the
#: full-context baselines' prompt.
PROMPT = (
    "Please read the following text and answer the question below.\n\n<text>\n$DOC$\n</text>\n"
    "\n$Q$\n\n" + INSTRUCTION
)
#: ``utils/envs.py``: ``MAX_INPUT_LEN`` 120000 (middle-truncated), ``MAX_OUTPUT_LEN`` 10000.
MAX_INPUT_TOKENS = 120_000
MAX_NEW_TOKENS = 10_000
#: ``ruler_hqa.py`` calls every method with ``temperature=0.7, top_p=0.95``.
TEMPERATURE = 0.7


def hotpotqa_paragraphs(path: Path) -> list[str]:
    """``read_hotpotqa``'s document pool: every ``"title\\ntext"`` paragraph of the file,
    unique and sorted."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return sorted(
        {f"{title}\n{''.join(sentences)}" for item in data for title, sentences in item["context"]}
    )


def _context(record: dict[str, Any], pool: list[str] | None, what: str) -> str:
    context = record["context"]
    if isinstance(context, str):
        return context
    assert pool is not None  # load() read it for any file holding index records
    bad = next(
        (idx for idx in context if not isinstance(idx, int) or not 0 <= idx < len(pool)), None
    )
    if bad is not None:
        raise BenchmarkDataError(
            f"{what}: document index {bad!r} is not among the {len(pool)} paragraphs of "
            f"{HOTPOTQA_DEV}; is it HotpotQA's distractor dev set?"
        )
    return "\n\n".join(f"Document {i + 1}:\n{pool[idx]}" for i, idx in enumerate(context))


def _sample(record: dict[str, Any], stem: str, position: int, pool: list[str] | None) -> Sample:
    sample_id = f"{stem}-{position}"
    docs = int(stem.removeprefix("eval_"))
    return Sample(
        sample_id=sample_id,
        benchmark="ruler_hqa",
        dataset=stem,
        corpus=Corpus(
            [
                Document(
                    doc_id=f"{sample_id}-context",
                    text=_context(record, pool, f"RULER-HotpotQA {sample_id}"),
                    title="ruler_hqa",
                )
            ]
        ),
        question=Question(
            text=record["input"], instruction=INSTRUCTION, metadata={"sample_id": sample_id}
        ),
        answers=tuple(str(a) for a in record["answers"]),
        metadata={
            "num_docs": record.get("num_docs", docs),
            "index": record.get("index"),
            "position": position,
            "length_bucket": LENGTHS[docs],
        },
    )


def load(path: str | Path | None = None, *, datasets: Sequence[str] | None = None) -> list[Sample]:
    """RULER-HotpotQA samples from ``<path or $LONGCTX_DATA_DIR/ruler_hqa>/eval_{N}.json``.

    Args:
        path: Folder with MemAgent's eval files (and ``hotpotqa_dev.json`` for 12,800+ documents).
        datasets: File stems to load (e.g. ``["eval_50", "eval_100"]``); default every
            known stem present in the folder.
    """
    folder = data_root("ruler_hqa", path)
    stems = (
        only_known(datasets, DATASETS, "ruler_hqa")
        if datasets is not None
        else [d for d in DATASETS if find_file(folder, d)]
    )
    if not stems:
        raise BenchmarkDataError(
            f"RULER-HotpotQA: no eval_{{N}}.json in {folder} (N in "
            f"{', '.join(map(str, LENGTHS))}); see docs/benchmarks-data.md."
        )
    pool: list[str] | None = None
    samples: list[Sample] = []
    for stem in stems:
        records = load_records(folder, stem, hub=None, what=f"RULER-HotpotQA {stem!r}")
        if pool is None and any(not isinstance(r["context"], str) for r in records):
            if not (folder / HOTPOTQA_DEV).is_file():
                raise BenchmarkDataError(
                    f"RULER-HotpotQA {stem!r} lists document indices: put HotpotQA's "
                    f"{HOTPOTQA_DEV} in {folder}."
                )
            pool = hotpotqa_paragraphs(folder / HOTPOTQA_DEV)
        samples += [_sample(r, stem, i, pool) for i, r in enumerate(records)]
    return samples


def prompt(sample: Sample, context: str | None = None) -> str:
    """``template_0shot`` around ``context`` (default: the item's context), placeholders replaced in
    the official order."""
    text = sample.corpus[0].text if context is None else context
    return PROMPT.replace("$DOC$", text.strip()).replace("$Q$", sample.question.text.strip())


def protocol(sample: Sample) -> dict[str, Any]:
    """10,000 new tokens at temperature 0.7; prompts middle-truncated to 120,000 tokens."""
    return {
        "max_new_tokens": MAX_NEW_TOKENS,
        "max_input_tokens": MAX_INPUT_TOKENS,
        "temperature": TEMPERATURE,
    }


#: A reply without "the answer is" counts as an answer already extracted (what a strategy returning
#: MemAgent's extraction gives) when it is one line of at most this many words; HotpotQA answers are
#: short, and a longer reply that ignores the format scores 0, as official.
EXTRACTED_MAX_WORDS = 10


def as_given(reply: str) -> str | None:
    """``reply`` when it reads as an extracted answer (one line, at most :data:`EXTRACTED_MAX_WORDS`
    words), else ``None``."""
    text = reply.strip()
    return text if text and "\n" not in text and len(text.split()) <= EXTRACTED_MAX_WORDS else None


def _percent(values: Sequence[float]) -> float | None:
    return round(100 * sum(values) / len(values), 2) if values else None


@BENCHMARKS.register("ruler_hqa", version=VERSION, load=load, prompt=prompt, protocol=protocol)
def score(pairs: Sequence[tuple[Sample, Any]], **_: Any) -> dict:
    """``sub_em`` x 100 overall and per length bucket: ours and the number ``ruler_hqa.py`` prints.

    Ours (``overall``, ``lengths``) scores the prediction's text: a failed call as 0 and, where
    the text has no ``the answer is``, as an extracted answer if it reads as one (:func:`as_given`:
    a strategy may return MemAgent's extraction already), else 0. ``official`` is what
    ``ruler_hqa.py`` prints for the model's whole final reply (``Prediction.whole_reply``: the
    reply a scored extraction came from, else the text): 0 without the phrase, failed calls
    left out of the denominator; ``n_without_answer_phrase`` counts those replies. ``em`` and
    ``f1`` follow our rule.
    """
    ours: dict[str, dict[str, list[float]]] = {}
    official: dict[str, list[float]] = {}
    per_sample: dict[str, float] = {}
    no_phrase = 0
    for sample, pred in pairs:
        bucket, gold = sample.metadata["length_bucket"], sample.answers[0]
        cells = ours.setdefault(bucket, {"sub_em": [], "em": [], "f1": []})
        if pred.failed:
            values = {"sub_em": 0.0, "em": 0.0, "f1": 0.0}
        else:
            whole = m.official_prediction(pred.whole_reply.strip())
            no_phrase += whole is None
            official.setdefault(bucket, []).append(m.sub_em(whole, gold) if whole else 0.0)
            response = pred.text_or_empty.strip()
            extracted = m.official_prediction(response)
            answer = extracted if extracted is not None else as_given(m.strip_thinking(response))
            values = {
                k: metric(answer, gold) if answer else 0.0
                for k, metric in (
                    ("sub_em", m.sub_em),
                    ("em", m.exact_match),
                    ("f1", m.hotpotqa_f1),
                )
            }
        per_sample[sample.sample_id] = 100.0 * values["sub_em"]
        for key, value in values.items():
            cells[key].append(value)
    order = [b for b in LENGTHS.values() if b in ours]
    everything = [v for b in order for v in ours[b]["sub_em"]]
    return {
        "overall": _percent(everything),
        "lengths": {
            b: {k: _percent(v) for k, v in ours[b].items()} | {"n": len(ours[b]["sub_em"])}
            for b in order
        },
        "official": {b: _percent(official[b]) for b in order if b in official},
        "official_overall": _percent([v for b in order for v in official.get(b, [])]),
        "n": len(pairs),
        "n_failed": sum(1 for _, p in pairs if p.failed),
        "n_without_answer_phrase": no_phrase,
        "per_sample": per_sample,
    }
