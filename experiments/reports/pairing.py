"""Which questions of two runs are the same question, for ``longctx compare``.

Two run folders can reuse an id for different questions (two questions files that both start at
``q1``, a corpus edited between runs). A paired test over such a pair compares answers to
different questions, so a question is paired only when its id, its text (with its choices) and
its corpus fingerprint all match; the others are counted, by reason, for the user to see.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

#: Why a question id of both runs was not paired.
TEXT_DIFFERS = "question text differs"
CORPUS_DIFFERS = "corpus differs"

Identity = tuple[
    str, tuple[tuple[str, str], ...], str
]  # (question text, choices, corpus fingerprint)


def identity(sample: Any) -> Identity:
    """What makes a sample the same question in another run: its text, choices and corpus
    fingerprint."""
    question = sample.question
    choices = tuple(
        sorted((str(k), str(v)) for k, v in (getattr(question, "choices", None) or {}).items())
    )
    return (str(question.text).strip(), choices, sample.corpus.fingerprint)


def identities(samples: Iterable[Any]) -> dict[str, Identity]:
    """Sample id -> :func:`identity` for a run's samples."""
    return {s.sample_id: identity(s) for s in samples}


def key(sample_id: str, known: Mapping[str, Identity]) -> str:
    """The key a run's answer is paired by: its sample id with a digest of its :func:`identity` (two
    runs' keys are equal only for the same question over the same corpus)."""
    digest = hashlib.sha256(
        repr(known.get(sample_id)).encode("utf-8", errors="surrogatepass")
    ).hexdigest()[:16]
    return f"{sample_id}#{digest}"


def mismatches(a: Mapping[str, Identity], b: Mapping[str, Identity]) -> Counter[str]:
    """Per reason, how many ids both runs have that name different questions (text first,
    then corpus)."""
    reasons: Counter[str] = Counter()
    for sid in a.keys() & b.keys():
        if a[sid][:2] != b[sid][:2]:
            reasons[TEXT_DIFFERS] += 1
        elif a[sid][2] != b[sid][2]:
            reasons[CORPUS_DIFFERS] += 1
    return reasons


def dropped_line(
    run_a: str, run_b: str, a: Mapping[str, Identity], b: Mapping[str, Identity]
) -> str | None:
    """One sentence on the questions of ``run_a`` and ``run_b`` left unpaired, or ``None`` when
    every id matched."""
    reasons = mismatches(a, b)
    only = len(a.keys() ^ b.keys())
    if not reasons and not only:
        return None
    paired = len(a.keys() & b.keys()) - sum(reasons.values())
    parts = [f"{n} whose {why}" for why, n in sorted(reasons.items())] + (
        [f"{only} that only one run has"] if only else []
    )
    return f"{run_a} vs {run_b}: {paired} questions paired; left out {', '.join(parts)}."
