"""Cost per question when an index is paid once per corpus, and where two strategies' costs cross.

A strategy that builds something once per corpus (RAPTOR's tree, structured's records) costs
``index`` before its first question and ``per_question`` for each; asked ``n`` questions over the
same corpus, each costs ``(index + n * per_question) / n``. Two such lines cross at most once, so
"which is cheaper" has one answer per pair: always, never, from some number of questions on, or up
to some number. Pure functions of numbers (USD or tokens alike), so the report, its plot and its
tests read the same answers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

#: A crossing this close to a whole number of questions (relative) is that number: sums of
#: float costs are not exact.
WHOLE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class CostLine:
    """One strategy's cost over one corpus: ``index`` once (0: it builds nothing), then
    ``per_question`` each.

    Attributes:
        strategy: Registry name.
        index: Cost of the index-time work over one corpus (USD or tokens).
        per_question: Cost of one question beside it (same unit): a mean over ``answers``.
        sd: The standard deviation of that cost over the answers (``None``: unknown, or one answer).
        answers: How many answers ``per_question`` is the mean of (0: unknown).
    """

    strategy: str
    index: float
    per_question: float
    sd: float | None = field(default=None, compare=False)
    answers: int = field(default=0, compare=False)

    def at(self, questions: int) -> float:
        """Cost per question when ``questions`` questions are asked over one corpus (the index
        shared out)."""
        if questions < 1:
            raise ValueError(f"questions must be at least 1, got {questions}")
        return (self.index + questions * self.per_question) / questions


#: always: cheaper at every number of questions; never: at none; from: from ``questions`` on;
#: until: up to ``questions`` (the other is cheaper after); same: the two lines are one.
Kind = Literal["always", "never", "from", "until", "same"]


@dataclass(frozen=True)
class BreakEven:
    """Whether ``strategy`` costs less per question than ``other`` as questions over one
    corpus accumulate.

    Attributes:
        strategy: The strategy the sentence is about.
        other: The one it is compared with.
        kind: See :data:`Kind`.
        questions: ``from``: the first whole number of questions from which it is cheaper (and stays
            so); ``until``: the last at which it still is; ``None`` for the other kinds.
        crossing: ``from`` / ``until``: where the two lines cross, ``n*`` unrounded (``questions``
            is the whole number past or before it); ``None`` for the other kinds.
    """

    strategy: str
    other: str
    kind: Kind
    questions: int | None = None
    crossing: float | None = field(default=None, compare=False)

    def sentence(self) -> str:
        """``raptor is cheaper than memagent from 14 questions on`` (and the other kinds alike)."""
        a, b, n = self.strategy, self.other, self.questions
        return {
            "always": f"{a} is cheaper than {b} at any number of questions",
            "never": f"{a} is never cheaper than {b}",
            "same": f"{a} costs the same as {b} at any number of questions",
            "from": f"{a} is cheaper than {b} from {n} question{'' if n == 1 else 's'} on",
            "until": f"{a} is cheaper than {b} up to {n} question{'' if n == 1 else 's'}",
        }[self.kind]


def break_even(a: CostLine, b: CostLine) -> BreakEven:
    """Where ``a`` costs strictly less per question than ``b``, over whole numbers of
    questions from 1.

    Per question ``a`` is cheaper at ``n`` exactly when its total is:
    ``a.index + n * a.per_question < b.index + n * b.per_question``. The lines cross at
    ``n* = (a.index - b.index) / (b.per_question - a.per_question)``; a crossing between whole
    numbers is rounded to the first whole question past it, and at a crossing on a whole number the
    two cost the same there (neither is cheaper).
    """
    d_index, d_each = a.index - b.index, a.per_question - b.per_question
    if d_each == 0:
        kind: Kind = "same" if d_index == 0 else "always" if d_index < 0 else "never"
        return BreakEven(a.strategy, b.strategy, kind)
    cross = _whole_if_close(-d_index / d_each)
    if d_each < 0:  # a is flatter: cheaper past the crossing
        first = math.floor(cross) + 1
        return (
            BreakEven(a.strategy, b.strategy, "always")
            if first <= 1
            else BreakEven(a.strategy, b.strategy, "from", first, cross)
        )
    last = math.ceil(cross) - 1  # a is steeper: cheaper before the crossing
    return (
        BreakEven(a.strategy, b.strategy, "never")
        if last < 1
        else BreakEven(a.strategy, b.strategy, "until", last, cross)
    )


def crossing_interval(
    a: CostLine, b: CostLine, *, confidence: float = 0.95
) -> tuple[float, float] | None:
    """The range of the crossing ``n*`` that the spread of the per-question costs allows, at
    ``confidence``.

    Each ``per_question`` is a mean over its answers, so their gap is uncertain: a 3% gap measured
    on 8 answers may be 0 or twice as wide. The gap's interval is Welch's (``t`` at the fewer
    answers less one), and ``n* = |index gap| / |per-question gap|`` over it; where the gap's
    interval reaches 0 the lines may never cross (upper end ``inf``). ``None`` when the lines do not
    cross or a spread is unknown.
    """
    d_index, gap = abs(a.index - b.index), abs(b.per_question - a.per_question)
    if a.sd is None or b.sd is None or min(a.answers, b.answers) < 2 or gap == 0 or d_index == 0:
        return None
    from scipy import stats  # lazily: the report's other readers of this module need no scipy

    se = math.sqrt(a.sd**2 / a.answers + b.sd**2 / b.answers)
    margin = float(stats.t.ppf(0.5 + confidence / 2, min(a.answers, b.answers) - 1)) * se
    low, high = gap - margin, gap + margin
    return d_index / high, (d_index / low if low > 0 else math.inf)


def break_evens(lines: list[CostLine]) -> list[BreakEven]:
    """:func:`break_even` of every strategy against every other (ordered pairs, in the
    order given)."""
    return [break_even(a, b) for a in lines for b in lines if a.strategy != b.strategy]


def _whole_if_close(x: float) -> float:
    """``x``, or the whole number it is within :data:`WHOLE_TOLERANCE` of."""
    nearest = round(x)
    return float(nearest) if abs(x - nearest) <= WHOLE_TOLERANCE * max(1.0, abs(x)) else x
