"""OOLONG (Bertsch et al., arXiv 2511.02817): aggregation over thousands of labelled records
(OOLONG-synth, 1K to 4M tokens) and over Dungeons & Dragons transcripts (OOLONG-real).

Official code abertsch72/oolong @ adbf1cb (no commit of it holds ``src/data_gen/oolong-synth/``:
the synth construction code is unreleased; the later dfbdba0 adds local vLLM / HF pipelines). Data:
the hub datasets ``oolongbench/oolong-synth`` and ``oolongbench/oolong-real`` read from disk by
:mod:`longctx.experiments.benchmarks.oolong_data`. Each question is one :class:`Sample`; the
questions of one context window share its one :class:`~retrieval.Corpus`, so ``--inject-once``
answers a window's questions in one unit, as the official ``--batch_by_context_window`` seeds the
window's cache with one question and sends the rest as a batch.

The official requests (:mod:`longctx.experiments.benchmarks.oolong_prompts`) put the context in the
system turn and the question in the user turn; our strategies send the official system text and one
user turn, the context, ``\\n``, the question (the dataset cards' input). Scoring is
``eval_helpers.py``'s (:mod:`longctx.experiments.metrics.oolong`); tables per task group (synth:
counting, user, timeline; real: question type) x context length, and per answer type, source
dataset and length, with each variant's official overall (``overall.txt``: the run's scores added
in the official order over the count).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks import oolong_prompts as p
from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    BenchmarkDataError,
    Sample,
    data_root,
    only_known,
)
from longctx.experiments.benchmarks.oolong_data import REAL_CONFIGS, SPLITS, checked, rows
from longctx.experiments.metrics import oolong as m
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question
from longctx.retrieval.contract.errors import UnknownName
from longctx.retrieval.tokens import count_tokens

VERSION = 1
VARIANTS = ("synth", "real")
#: ``eval_script_batched.py``'s defaults: ``min_context_len < context_len <= max_context_len``.
MIN_CONTEXT_LEN = 1024
MAX_CONTEXT_LEN = 131072


def _length_name(tokens: int) -> str:
    """A length column: ``1K`` ... ``512K``, ``1M`` ... (OOLONG-real's counts: the next power of
    two up)."""
    size = 1 << max(0, tokens - 1).bit_length()
    return f"{size >> 20}M" if size >= 1 << 20 else f"{size >> 10}K"


def _sample(
    row: dict[str, Any],
    variant: str,
    split: str,
    corpus: Corpus,
    context_len: int,
    labels: bool,
    spans: tuple = (),
) -> Sample:
    sample_id = f"{variant}-{split}-{row['id']}"
    metadata: dict[str, Any] = {
        "variant": variant,
        "split": split,
        "id": row["id"],
        "context_window_id": row["context_window_id"],
        "context_len": context_len,
        "length": _length_name(context_len),
        "answer": row["answer"],
        "labels": labels,
        "evidence_spans": spans,
    }
    if variant == "synth":
        for key in ("task_group", "task", "answer_type", "input_subset", "num_labels"):
            metadata[key] = row.get(key)
        metadata["source"] = row["dataset"]
    else:
        metadata |= {
            "task_group": row.get("question_type"),
            "question_type": row.get("question_type"),
            "episodes": list(row.get("episodes") or []),
            "campaign": row.get("campaign"),
            "source": "dnd",
        }
    return Sample(
        sample_id=sample_id,
        benchmark="oolong",
        dataset=variant,
        corpus=corpus,
        question=Question(text=row["question"], metadata={"sample_id": sample_id}),
        answers=(str(row["answer"]),),
        metadata=metadata,
    )


def _load_variant(
    root: Path,
    variant: str,
    *,
    split: str,
    config: str,
    labels: bool,
    hub: bool,
    bounds: tuple[int, int | None],
) -> list[Sample]:
    corpora: dict[Any, tuple[Corpus | None, int, tuple]] = {}
    out: list[Sample] = []
    field = "context_window_text_with_labels" if labels and variant == "synth" else None
    found = rows(
        root,
        variant,
        split,
        config=config if variant == "real" else None,
        hub=hub,
        lengths=bounds,
        skip="context_window_text" if field else "context_window_text_with_labels",
    )
    for where, raw in found:
        window = raw.get("context_window_id") if isinstance(raw, dict) else None
        row = checked(raw, variant, where, labels=field is not None, window_seen=window in corpora)
        if window not in corpora:
            corpora[window] = _window(row, variant, field or "context_window_text", bounds)
        corpus, length, spans = corpora[window]
        if corpus is not None:
            out.append(_sample(row, variant, split, corpus, length, field is not None, spans))
    return out


def _window(
    row: dict[str, Any], variant: str, field: str, bounds: tuple[int, int | None]
) -> tuple[Corpus | None, int, tuple]:
    """A window's corpus, length (``context_len``, else counted) and record spans, or ``None``
    for a window outside ``min < length <= max`` (its text is not kept)."""
    window, text = row["context_window_id"], row[field]
    length = int(row["context_len"]) if row.get("context_len") is not None else count_tokens(text)
    if not bounds[0] < length <= (bounds[1] if bounds[1] is not None else length):
        return None, length, ()
    doc_id = f"oolong-{variant}-{window}"
    doc = Document(doc_id=doc_id, text=text, title=f"oolong {window}")
    return Corpus([doc]), length, record_spans(doc_id, text, variant)


#: A record line of a synth window (``Date: ... || User: <id> || Instance: ...``: the paper's
#: example; the synth construction code is unreleased, docs/protocols.md) and an utterance of a DnD
#: transcript as abertsch72/oolong @ adbf1cb ``src/data_gen/prepare_cr_transcripts.py`` writes it:
#: one line per speaker of a turn, ``name.capitalize()``, ``": "``, the turn's utterances joined by
#: spaces (a letter first; any name characters but a colon; none: the line ends after the colon).
_RECORD = {
    "synth": re.compile(r"User: ?\d"),
    "real": re.compile(r"^[^\W\d_][^:\n]{0,60}:(?: |$)"),
}


def record_spans(doc_id: str, text: str, variant: str) -> tuple[tuple[str, int, int], ...]:
    """``(doc_id, start, end)`` of every record a question may aggregate: each record line of a
    synth window, each utterance of a DnD transcript (every non-empty line when none matches).

    Every question needs them all: the labels are not in the text (OOLONG-real's statistics are
    not marked either), so which records a question counts is known only by reading each one;
    a strategy's evidence ceiling is whether it can see every record."""
    spans: list[tuple[str, int, int]] = []
    rule, start, any_line = _RECORD[variant], 0, []
    for line in text.split("\n"):
        end = start + len(line)
        if line.strip():
            any_line.append((doc_id, start, end))
            if rule.search(line):
                spans.append((doc_id, start, end))
        start = end + 1
    return tuple(spans or any_line)


def load(
    path: str | Path | None = None,
    *,
    datasets: Sequence[str] | None = None,
    split: str = "test",
    config: str = "dnd",
    labels: bool = False,
    min_context_len: int = MIN_CONTEXT_LEN,
    max_context_len: int | None = MAX_CONTEXT_LEN,
    hub: bool = False,
) -> list[Sample]:
    """OOLONG samples, one per question, from ``<path or $LONGCTX_DATA_DIR/oolong>``.

    Args:
        path: Data folder (layouts in :mod:`~experiments.benchmarks.oolong_data`).
        datasets: ``synth`` and / or ``real``; default every variant on disk.
        split: ``test`` (official) or ``validation``.
        config: OOLONG-real's hub config, ``dnd`` (official) or ``toy_dnd``.
        labels: Synth windows with each record's label (``--labels``).
        min_context_len, max_context_len: Keep ``min < context_len <= max`` (the official
            defaults, 1,024 and 131,072); ``max_context_len=None`` keeps every length. OOLONG-real's
            length is counted here (cl100k), the official script counts with the model's tokenizer.
        hub: Load a variant that is not on disk from the hub (the ``hub`` extra); never otherwise.
    """
    if split not in SPLITS:
        raise UnknownName(f"oolong: split={split!r}; known: {', '.join(SPLITS)}")
    if config not in REAL_CONFIGS:
        raise UnknownName(f"oolong: config={config!r}; known: {', '.join(REAL_CONFIGS)}")
    root = data_root("oolong", path)
    wanted = only_known(datasets, VARIANTS, "oolong")
    bounds = (min_context_len, max_context_len)
    out: list[Sample] = []
    errors: list[str] = []
    for variant in wanted:
        try:
            out += _load_variant(
                root, variant, split=split, config=config, labels=labels, hub=hub, bounds=bounds
            )
        except BenchmarkDataError as exc:
            if datasets is not None:  # asked for by name: its absence is the error
                raise
            errors.append(str(exc))
    if not out:
        raise BenchmarkDataError(
            " ".join(errors)
            or f"OOLONG: no item with {min_context_len} < context_len <= "
            f"{max_context_len} in {root}."
        )
    return out


def prompt(sample: Sample, context: str | None = None) -> str:
    """Our one user turn: the window (or ``context``), ``\\n``, the question."""
    return p.user_turn(sample.corpus[0].text if context is None else context, sample.question.text)


def official_messages(sample: Sample, *, cache: bool = True) -> list[dict[str, Any]]:
    """The official request's messages for ``sample`` (system turn with the window, question)."""
    return p.official_messages(sample.corpus[0].text, sample.question.text, cache=cache)


def official_requests(samples: Sequence[Sample], model: str, **options: Any) -> list[dict]:
    """The requests an official run over ``samples`` sends, in its order
    (:func:`~experiments.benchmarks.oolong_prompts.official_requests`)."""
    items = [(s.metadata["context_window_id"], s.corpus[0].text, s.question.text) for s in samples]
    return p.official_requests(items, model, **options)


def protocol(sample: Sample) -> dict[str, Any]:
    """The official system text; no answer budget and the provider's temperature, as the official
    calls send neither."""
    return {"system": p.SYSTEM}


def item_score(sample: Sample, text: str) -> m.Scored:
    """The official score of one reply (synth or DnD scorer by the sample's variant)."""
    if sample.dataset == "synth":
        return m.synth_score(str(sample.metadata["answer"]), sample.metadata["answer_type"], text)
    return m.dnd_score(sample.metadata["answer"], text)


def official_overall(
    scored: Sequence[tuple[Sample, float]], *, batch_by_context_window: bool = False
) -> dict[str, Any]:
    """``overall.txt``'s figures for one variant: the scores added in the official run's order
    (sorted by window, windows in ``set`` order when batched by window) over their count."""
    ordered = sorted(scored, key=lambda pair: pair[0].metadata["context_window_id"])
    groups = p.run_order(
        [s.metadata["context_window_id"] for s, _ in ordered],
        batch_by_context_window=batch_by_context_window,
    )
    values = [ordered[i][1] for group in groups for i in group]
    total = m.official_total(values)
    return {
        "correct": total,
        "n": len(values),
        "overall": total / len(values) if values else None,
        "line": m.official_summary("MODEL", values) if values else None,
    }


def _mean(values: Sequence[float]) -> float | None:
    return round(100 * sum(values) / len(values), 2) if values else None


def _by(pairs: Sequence[tuple[Sample, float]], key: str) -> dict[str, float | None]:
    cells: dict[str, list[float]] = {}
    for sample, value in pairs:
        cells.setdefault(str(sample.metadata.get(key)), []).append(value)
    return {k: _mean(v) for k, v in cells.items()}


def _lengths(pairs: Sequence[tuple[Sample, float]]) -> list[str]:
    sizes = {s.metadata["length"]: s.metadata["context_len"] for s, _ in pairs}
    return sorted(sizes, key=lambda n: (n.endswith("M"), int(n[:-1])))


@BENCHMARKS.register("oolong", version=VERSION, load=load, prompt=prompt, protocol=protocol)
def score(
    pairs: Sequence[tuple[Sample, Any]], *, batch_by_context_window: bool = False, **_: Any
) -> dict:
    """The official score x 100: overall, per variant (with its official ``overall.txt`` figures),
    task group x length (``tasks``), and per task group, answer type, source dataset and length.

    A failed call scores 0, as the official script scores a ``BadRequestError``.
    """
    scored: list[tuple[Sample, float]] = []
    per_sample: dict[str, float] = {}
    raw: dict[str, list[tuple[Sample, float]]] = {}
    for sample, pred in pairs:
        value = 0 if pred.failed else item_score(sample, pred.text_or_empty).score
        raw.setdefault(sample.dataset, []).append((sample, value))
        scored.append((sample, float(value)))
        per_sample[sample.sample_id] = 100.0 * float(value)
    lengths = _lengths(scored)
    tasks: dict[str, dict[str, float | None]] = {}
    for group in dict.fromkeys(str(s.metadata.get("task_group")) for s, _ in scored):
        in_group = [(s, v) for s, v in scored if str(s.metadata.get("task_group")) == group]
        row = _by(in_group, "length")
        tasks[f"{group}"] = {n: row.get(n) for n in lengths if n in row}
    return {
        "overall": _mean([v for _, v in scored]),
        "variants": {
            variant: {"overall": _mean([float(v) for _, v in got]), "n": len(got)}
            | {"official": official_overall(got, batch_by_context_window=batch_by_context_window)}
            for variant, got in raw.items()
        },
        "tasks": tasks,
        "lengths": lengths,
        "breakdowns": {
            "task group": _by(scored, "task_group"),
            "answer type": _by([(s, v) for s, v in scored if s.dataset == "synth"], "answer_type"),
            "source dataset": _by(scored, "source"),
            "context length": {n: _by(scored, "length").get(n) for n in lengths},
        },
        "n": len(pairs),
        "n_failed": sum(1 for _, pr in pairs if pr.failed),
        "per_sample": per_sample,
    }
