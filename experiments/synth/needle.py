"""A needle task in the style of LV-Eval's factrecall (seed 003).

One sentence states a fact; a question asks for it. With keyword-phrase replacement
(KPR) the well-known answer is swapped for an unexpected name, so only the corpus can
supply it; with confusing-fact insertion (CFI) look-alike sentences about a different
subject are planted elsewhere, so a reader must match the subject exactly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from longctx.experiments.synth.config import NeedleConfig


@dataclass(frozen=True)
class NeedleFact:
    """One needle: a subject phrase, its real answer and the replacement used by KPR."""

    subject: str
    question: str
    answer: str
    replacement: str
    confusers: tuple[tuple[str, str], ...]


NEEDLES: tuple[NeedleFact, ...] = (
    NeedleFact(
        "the scientist who formulated the laws of planetary motion",
        "Who formulated the laws of planetary motion?",
        "Johannes Kepler",
        "Edith Marlowe",
        (
            ("the scientist who formulated the laws of tidal motion", "Edith Marbury"),
            ("the scientist who catalogued the moons of the outer planets", "Edwin Marlowe"),
        ),
    ),
    NeedleFact(
        "the engineer who designed the first practical steam locomotive",
        "Who designed the first practical steam locomotive?",
        "George Stephenson",
        "Harriet Quill",
        (
            ("the engineer who designed the first practical steam tractor", "Harriet Quigley"),
            ("the engineer who designed the first practical canal lock", "Harold Quill"),
        ),
    ),
    NeedleFact(
        "the composer of the opera about a magic flute",
        "Who composed the opera about a magic flute?",
        "Wolfgang Amadeus Mozart",
        "Tobias Fenwick",
        (
            ("the composer of the ballet about a magic lantern", "Tobias Fenner"),
            ("the composer of the opera about a silver harp", "Tomas Fenwick"),
        ),
    ),
    NeedleFact(
        "the explorer who first reached the South Pole",
        "Who first reached the South Pole?",
        "Roald Amundsen",
        "Maren Holloway",
        (
            ("the explorer who first crossed the southern ice shelf on foot", "Maren Halloway"),
            ("the explorer who first reached the magnetic north pole", "Marek Holloway"),
        ),
    ),
    NeedleFact(
        "the physician who introduced antiseptic surgery",
        "Who introduced antiseptic surgery?",
        "Joseph Lister",
        "Clement Ashby",
        (
            ("the physician who introduced antiseptic dentistry", "Clement Ashworth"),
            ("the physician who introduced the clinical thermometer", "Clemens Ashby"),
        ),
    ),
)


@dataclass(frozen=True)
class NeedlePlan:
    """What to plant and ask: the needle sentence, confusers, question and gold answer."""

    needle_text: str
    confusers: tuple[str, ...]
    question: str
    answer: str
    template: int


def _statement(subject: str, name: str) -> str:
    return f"It is now widely accepted that {subject} was {name}."


def plan_needle(cfg: NeedleConfig, seed: int) -> NeedlePlan:
    """Choose and phrase the needle for ``cfg`` (the template is drawn from ``seed`` when unset)."""
    index = (
        cfg.template
        if cfg.template is not None
        else random.Random(f"{seed}/needle").randrange(len(NEEDLES))
    )
    if not 0 <= index < len(NEEDLES):
        raise ValueError(f"needle template must be in [0, {len(NEEDLES)}), got {index}")
    fact = NEEDLES[index]
    answer = fact.replacement if cfg.keyword_replacement else fact.answer
    confusers = tuple(_statement(s, n) for s, n in fact.confusers) if cfg.confusing_facts else ()
    return NeedlePlan(
        _statement(fact.subject, answer),
        confusers,
        f"According to the documents, {fact.question[0].lower()}{fact.question[1:]}",
        answer,
        index,
    )


def confuser_depths(seed: int, depth: float, count: int) -> list[float]:
    """Depths of the confusing facts: spread over the corpus, away from the needle."""
    rng = random.Random(f"{seed}/needle/cfi")
    out: list[float] = []
    while len(out) < count:
        d = rng.uniform(0.02, 0.98)
        if abs(d - depth) > 0.1 and all(abs(d - o) > 0.05 for o in out):
            out.append(d)
    return out
