"""Pairing predictions with samples: the input side of ``longctx.experiments.score``.

Predictions may be given as :class:`Prediction` objects, a ``{sample_id: text}``
mapping, or ``(sample_or_id, text[, error])`` tuples. ``text=None`` or a non-empty
``error`` marks a failed call; each benchmark's scorer decides what a failure is
worth, and every result reports how many there were.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from longctx.experiments.benchmarks.base import Sample
from longctx.experiments.metrics.reading import Reading, reading_of
from longctx.retrieval.contract.errors import OptionError, UnknownName


@dataclass(frozen=True)
class Prediction:
    """A model's output for one sample.

    Attributes:
        sample_id: The :attr:`Sample.sample_id` it answers.
        text: The raw output, or ``None`` when the call failed.
        error: Why the call failed (any non-empty string marks a failure).
        reply: The model's whole final reply where ``text`` was extracted from it (MemAgent's
            preset ``paper`` scores its ``extract_answer``), else ``None``: what an official
            scorer that extracts the answer itself reads (RULER-HotpotQA's ``official``).
        reading: What the answer read and searched (``reading_of`` its row,
            :mod:`longctx.experiments.metrics.reading`), for scorers of evidence recall and search
            calls (BrowseComp-Plus); ``None``: not known.
    """

    sample_id: str
    text: str | None
    error: str | None = None
    reply: str | None = None
    reading: Reading | None = None

    @property
    def failed(self) -> bool:
        """Whether the call failed (no text, or an error recorded)."""
        return self.text is None or bool(self.error)

    @property
    def text_or_empty(self) -> str:
        """The text, with a failed call scored as the empty answer."""
        return "" if self.failed or self.text is None else self.text

    @property
    def whole_reply(self) -> str:
        """The model's whole final reply (``reply``, else ``text``); ``""`` for a failed call."""
        return "" if self.failed else self.reply if self.reply is not None else self.text_or_empty


def final_reply(row: Mapping[str, Any]) -> str | None:
    """The whole final reply a result row's steps keep where its prediction was extracted from it
    (the ``reply`` of its last step carrying one: MemAgent's ``final_answer``, also as Self-Route's
    fallback leg), else ``None``."""
    return next(
        (
            s["reply"]
            for s in reversed(row.get("steps") or [])
            if isinstance(s, Mapping) and isinstance(s.get("reply"), str)
        ),
        None,
    )


def row_prediction(row: Mapping[str, Any]) -> Prediction:
    """A result row (``results.jsonl``) as the :class:`Prediction` its benchmark scores."""
    return Prediction(
        str(row["sample_id"]),
        row.get("prediction"),
        row.get("error"),
        final_reply(row),
        reading_of(row),
    )


def _as_prediction(item: Any) -> tuple[Sample | None, Prediction]:
    if isinstance(item, Prediction):
        return None, item
    if isinstance(item, tuple) and len(item) in (2, 3):
        key, text = item[0], item[1]
        error = item[2] if len(item) == 3 else None
        sample = key if isinstance(key, Sample) else None
        sample_id = key.sample_id if isinstance(key, Sample) else str(key)
        if text is not None and not isinstance(text, str):
            raise OptionError(
                f"Prediction for {sample_id!r} is a {type(text).__name__}; expected str or None "
                "(failed)."
            )
        return sample, Prediction(sample_id, text, error)
    raise OptionError(
        f"Cannot read a prediction from {type(item).__name__}; give Prediction objects, "
        "(sample_or_id, text[, error]) tuples, or a {sample_id: text} mapping."
    )


def pair_predictions(
    predictions: Any, samples: Iterable[Sample] | None = None
) -> list[tuple[Sample, Prediction]]:
    """Match every prediction to its sample.

    Args:
        predictions: Predictions in any accepted form (see module docstring).
        samples: The loaded samples; needed when predictions carry ids, not samples.

    Raises:
        KeyError: A prediction's id is not among ``samples``, or ids are given without samples.
        ValueError: The same sample is predicted twice.
    """
    items = predictions.items() if isinstance(predictions, Mapping) else predictions
    by_id = {s.sample_id: s for s in samples or ()}
    pairs, seen = [], set()
    for item in items:
        sample, pred = _as_prediction(tuple(item) if isinstance(item, list) else item)
        if sample is None:
            if pred.sample_id not in by_id:
                hint = (
                    "pass samples=load_benchmark(...)"
                    if not by_id
                    else "is it from another benchmark or subset?"
                )
                raise UnknownName(f"No sample with id {pred.sample_id!r} ({hint}).")
            sample = by_id[pred.sample_id]
        if pred.sample_id in seen:
            raise ValueError(f"Sample {pred.sample_id!r} has more than one prediction.")
        seen.add(pred.sample_id)
        pairs.append((sample, pred))
    if not pairs:
        raise ValueError("No predictions to score.")
    return pairs
