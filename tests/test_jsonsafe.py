"""longctx.agents.jsonsafe: whatever a strategy returns becomes strict, bounded JSON."""

import dataclasses
import json
import math
from decimal import Decimal
from typing import Any

import numpy as np
import pytest

from longctx.agents.jsonsafe import (
    CYCLE,
    MAX_DEPTH,
    MAX_VALUES,
    bytes_text,
    dumps,
    is_plain,
    json_safe,
)


@dataclasses.dataclass
class Cell:
    name: str
    value: float


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    "value,expected",
    [
        (b"abc", "abc"),
        ("caf\u00e9".encode(), "caf\u00e9"),
        (b"\x00\xff\xfe", "<3 bytes: 00fffe>"),
        (bytearray(b"\xff" * 40), "<40 bytes: " + "ff" * 32 + "...>"),
        (float("inf"), None),
        (float("-inf"), None),
        (float("nan"), None),
        (1e999, None),
        (np.int64(7), 7),
        (np.float32(0.5), 0.5),
        (np.float64("inf"), None),
        (np.bool_(True), True),
        (np.arange(3), [0, 1, 2]),
        (np.array(2.5), [2.5]),
        ((1, "a"), [1, "a"]),
        ({3}, [3]),
        (Cell("x", float("nan")), {"name": "x", "value": None}),
        (Decimal("1.5"), 1.5),
        ({1: "a", (1, 2): "b", b"k": "c"}, {"1": "a", "[1, 2]": "b", "k": "c"}),
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        (10**5000, "<integer of 16,610 bits>"),
        (Unprintable(), "<unprintable Unprintable>"),
        ({"ok": [1, 2.5, None, True, "x"]}, {"ok": [1, 2.5, None, True, "x"]}),
    ],
    ids=lambda v: type(v).__name__,  # str() of a 5,000-digit integer raises
)
def test_values_become_plain_json(value, expected):
    assert json_safe(value) == expected


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_dumps_is_strict_json_that_utf8_can_write():
    text = dumps(
        {"a": [b"\xff", float("inf"), np.float64("nan"), "\udfff"], "b": {"c": np.int32(3)}}
    )
    assert _strict(text) == {"a": ["<1 bytes: ff>", None, None, "\ufffd"], "b": {"c": 3}}
    text.encode("utf-8")  # no lone surrogate left


def test_a_long_string_is_cut_with_a_marker():
    out = json_safe("x" * 1000, max_chars=10)
    assert out == "x" * 10 + "...[cut: 990 more characters]"
    assert json_safe("x" * 1000, max_chars=None, max_total=None) == "x" * 1000


def test_the_whole_value_is_bounded():
    value = {"rows": ["y" * 100 for _ in range(10_000)], "after": list(range(10_000))}
    out = json_safe(value, max_chars=1000, max_total=5000)
    assert len(dumps(out)) < 8000
    assert out["rows"][-1].startswith("...[cut: ") and out["rows"][-1].endswith(" more items]")
    assert "after" not in out and out["..."] == "[cut: 1 more entries]"


def test_a_list_of_mappings_past_the_budget_ends_with_a_mapping():
    steps = [{"node": "update_memory", "memory": "m" * 50} for _ in range(100)]
    out = json_safe(steps, max_total=500)
    assert all(isinstance(s, dict) for s in out) and out[-1]["..."].endswith(" more items]")


def test_a_mapping_past_the_budget_says_how_much_was_cut():
    out = json_safe({f"k{i}": i for i in range(1000)}, max_total=100)
    assert out["..."].startswith("[cut: ") and out["..."].endswith(" more entries]")


def test_a_value_nested_too_deep_is_cut_at_the_depth_limit():
    deep: list = []
    for _ in range(100):
        deep = [deep]
    out = json_safe(deep, max_total=None)
    depth = 0
    while isinstance(out, list):
        out, depth = out[0], depth + 1
    assert depth == MAX_DEPTH and out.startswith("<nested deeper")


def _self_referencing():
    """``c = []; c += [c, c]``: a list holding itself twice (issue #35, 14: it hung a run,
    memory growing)."""
    loop: list = []
    loop += [loop, loop]
    return loop


def _shared_22_levels():
    """22 lists, each holding the one below twice: four million leaves (issue #35, 14: 44 s and
    1.6 GB)."""
    shared: Any = "leaf"
    for _ in range(22):
        shared = [shared, shared]
    return shared


@pytest.mark.timeout(60)
def test_a_value_that_contains_itself_is_marked_where_it_recurs():
    loop = _self_referencing()
    assert json_safe(loop, max_chars=None, max_total=None) == [CYCLE, CYCLE]
    mapping: dict = {"a": 1}
    mapping["self"] = {"up": mapping, "list": [mapping]}
    assert json_safe(mapping, max_total=None) == {"a": 1, "self": {"up": CYCLE, "list": [CYCLE]}}
    assert not is_plain(loop)


@pytest.mark.timeout(60)
def test_shared_sub_values_are_cut_after_max_values_not_expanded():
    out = json_safe(_shared_22_levels(), max_chars=None, max_total=None)
    text = json.dumps(out)
    assert text.count('"leaf"') < MAX_VALUES < 4_194_304 and len(text) < 20 * MAX_VALUES
    assert text.endswith('"...[cut: 1 more items]"]') and not is_plain(_shared_22_levels())


def test_max_values_keeps_a_value_of_that_many_whole_and_cuts_one_more():
    steps = [{"node": "n", "i": i} for i in range(10_000)]  # 1 + 10,000 x 3 values
    assert json_safe(steps, max_values=30_001) == steps
    cut = json_safe(steps, max_values=30_000)
    assert cut[:-1] == steps[:-1] and cut[-1] == {"node": "n", "...": "[cut: 1 more entries]"}
    shared = {"doc": "d1"}
    assert (
        json_safe([shared, shared, shared]) == [shared] * 3
    )  # shared without a cycle: each kept whole


def test_a_100_mb_string_costs_no_more_than_its_cut():
    out = json_safe({"cell": "z" * 100_000_000})
    assert len(out["cell"]) < 100_100 and math.isfinite(len(dumps(out)))


def test_bytes_text_keeps_utf8_and_previews_the_rest():
    assert bytes_text("\u4e2d".encode()) == "\u4e2d"
    assert bytes_text(b"\xe4\xb8") == "<2 bytes: e4b8>"


@pytest.mark.parametrize(
    "value,plain",
    [
        ({"a": [1, 2.5, None, True, "x", (1, 2)]}, True),
        ({"a": float("inf")}, False),
        ([b"x"], False),
        ({1: "a"}, False),
        ("\ud800", False),
        (np.int64(1), False),
        ({"s": {1}}, False),
        (10**5000, False),
    ],
    ids=lambda v: type(v).__name__,
)
def test_is_plain_tells_what_needs_no_conversion(value, plain):
    assert is_plain(value) is plain
