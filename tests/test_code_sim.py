"""``code_sim`` (LongBench lcc / repobench-p) as the official requirements compute it.

LongBench installs ``fuzzywuzzy`` without ``python-Levenshtein``, so ``fuzz.ratio`` is
difflib's ``SequenceMatcher`` ratio; the Levenshtein (rapidfuzz) value is kept as the
labelled alternative ``code_sim_levenshtein``. Expected values computed by hand from
difflib's matching blocks (M matched characters, T total: ``round(200 * M / T)``).
"""

from __future__ import annotations

import difflib
import random
import warnings

import pytest

from longctx.experiments.metrics import METRICS
from longctx.experiments.metrics import longbench_v1 as lb1


@pytest.mark.parametrize(
    "pred, gold, official, levenshtein",
    [
        (
            "int main()",
            "main int()",
            0.60,
            0.70,
        ),  # blocks "main" + "()" = 6 of 20; LCS "int()"/"main()" = 7
        (
            "if not os.path.exists(path):",
            "if os.path.isdir(path) and not exists:",
            0.55,
            0.61,
        ),  # 36/66 vs 40/66
        (
            "ab" * 110,
            "ba" * 110,
            0.0,
            1.0,
        ),  # 220 chars: difflib's autojunk makes 'a' and 'b' junk; InDel 438/440
        (
            "abcdefgh",
            "aXXXXXXX",
            0.12,
            0.12,
        ),  # 12.5 rounds half to even, as fuzzywuzzy's int(round())
        ("abcdefgh", "abcdeXXX", 0.62, 0.62),  # 62.5 -> 62
        (
            "```python\n# comment\nreturn x + 1\n",
            "return x+1",
            0.91,
            0.91,
        ),  # first clean line; 20/22
        ("// only comments", "x = 1", 0.0, 0.0),  # no clean line: "" scores 0
        ("\n\nx = 1", "x = 1", 1.0, 1.0),  # leading newlines stripped; equal lines score 100
        (
            "# no code",
            "",
            1.0,
            1.0,
        ),  # "" vs "": fuzzywuzzy's equality check comes before its empty check
    ],
)
def test_code_sim_official_and_levenshtein(pred, gold, official, levenshtein):
    assert METRICS.get("code_sim")(pred, gold) == pytest.approx(official)
    assert METRICS.get("code_sim_levenshtein")(pred, gold) == pytest.approx(levenshtein)


def _code_pairs(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """Code-like lines and edited copies (swaps, drops, inserts), some past difflib's 200-char
    autojunk limit."""
    rng = random.Random(seed)
    vocab = [
        *"self . x y = == ( ) [ ] ,".split(),
        " ",
        *"return if for in range len 0 1 + - _cache key value : 'a' None not and".split(),
    ]
    pairs = []
    for i in range(n):
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 120 if i % 10 == 0 else 25))]
        edited = list(words)
        for _ in range(rng.randint(0, 6)):
            op, j = rng.random(), rng.randrange(len(edited) or 1)
            if op < 0.3 and len(edited) > 1:
                del edited[j]
            elif op < 0.6:
                edited.insert(j, rng.choice(vocab))
            elif len(edited) > 1:
                k = rng.randrange(len(edited))
                edited[j], edited[k] = edited[k], edited[j]
        pairs.append(("".join(words), "".join(edited)))
    return pairs + [("", ""), ("", "x"), ("x", "")]


def test_code_sim_equals_fuzzywuzzy_without_levenshtein_on_many_pairs():
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # "Using slow pure-python SequenceMatcher": exactly the official setting
        fuzz = pytest.importorskip("fuzzywuzzy.fuzz")
    if fuzz.SequenceMatcher is not difflib.SequenceMatcher:
        pytest.skip(
            "python-Levenshtein is installed: fuzzywuzzy no longer computes the official "
            "(difflib) ratio"
        )
    pairs = _code_pairs(2000)
    assert sum(len(a) >= 200 for a, _ in pairs) >= 20  # the autojunk regime is exercised
    mismatches = [(a, b) for a, b in pairs if lb1.code_sim_score(a, b) != fuzz.ratio(a, b) / 100]
    assert not mismatches, mismatches[:3]
    # and the two ratios really differ on such lines, so the choice matters
    differ = sum(lb1.code_sim_score(a, b) != lb1.code_sim_levenshtein_score(a, b) for a, b in pairs)
    assert differ > len(pairs) // 20
