"""OOLONG's scoring (experiments/metrics/oolong.py) agrees with the official ``eval_helpers.py`` on
every pair ``tests/oolong_official.py`` ran it on: score (and its Python type), parse, confidence,
gold (the overall line is held in tests/test_oolong_prompts.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longctx.experiments.metrics import METRICS
from longctx.experiments.metrics import oolong as m

FIXTURES = Path(__file__).parent / "fixtures" / "oolong"
SCORES = json.loads((FIXTURES / "scores.json").read_text(encoding="utf-8"))


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, list)) or value is None else str(value)


def _ours(scored: m.Scored) -> dict[str, Any]:
    return {
        "score": scored.score,
        "score_type": type(scored.score).__name__,
        "attempted_parse": _plain(scored.attempted_parse),
        "parse_confidence": scored.parse_confidence,
        "gold": _plain(scored.answer),
    }


def _official(case: dict[str, Any]) -> dict[str, Any]:
    return {
        k: case[k] for k in ("score", "score_type", "attempted_parse", "parse_confidence", "gold")
    }


def test_the_fixture_covers_every_answer_type_with_full_partial_and_no_credit() -> None:
    kinds = {(c["answer_type"], c["score_type"]) for c in SCORES["synth"]}
    assert {t for t, _ in kinds} >= {
        "ANSWER_TYPE.NUMERIC",
        "ANSWER_TYPE.LABEL",
        "ANSWER_TYPE.COMPARISON",
        "ANSWER_TYPE.USER",
        "ANSWER_TYPE.DATE",
    }
    assert ("ANSWER_TYPE.NUMERIC", "float") in kinds and ("ANSWER_TYPE.DATE", "bool") in kinds
    partial = [c for c in SCORES["dnd"] if 0 < c["score"] < 1]
    assert len(SCORES["synth"]) + len(SCORES["dnd"]) > 500 and partial


def test_synth_scores_equal_the_official_on_every_pair() -> None:
    wrong = [
        (c["id"], c["reply"], _official(c), ours)
        for c in SCORES["synth"]
        if (ours := _ours(m.synth_score(c["answer"], c["answer_type"], c["reply"]))) != _official(c)
    ]
    assert not wrong, wrong[:5]


def test_dnd_scores_equal_the_official_on_every_pair() -> None:
    wrong = [
        (c["id"], c["reply"], _official(c), ours)
        for c in SCORES["dnd"]
        if (ours := _ours(m.dnd_score(c["answer"], c["reply"]))) != _official(c)
    ]
    assert not wrong, wrong[:5]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Answer: 10", 0.75**2),  # 0.75 ** |12 - 10|
        ("Answer: 12", 1),
        ("Answer: twelve", 0),
    ],
)
def test_numeric_partial_credit(reply: str, expected: float) -> None:
    assert m.synth_score("[12]", m.NUMERIC, reply).score == expected
    assert METRICS.get("oolong_synth")(reply, "[12]", answer_type=m.NUMERIC) == expected


def test_a_long_blank_reply_reads_empty_where_the_official_code_fails() -> None:
    assert m.synth_parse(" " * 25) == ("", "low")
