"""The demo's wiring: the shipped corpus and questions through every demo strategy, with a
plan first."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from pydantic import PrivateAttr

from longctx.experiments.cli.demo import default_demo, demo_strategies, run_demo
from longctx.graphs import STRATEGIES
from tests.recording_server import shared_words
from tests.scripted import ScriptedChatModel


def test_demo_options_are_valid_configs():
    assert set(default_demo()) < set(demo_strategies())
    for name, options in demo_strategies().items():
        STRATEGIES.get(name).make_config(**options)


def test_demo_says_what_it_will_do_then_compares_every_strategy(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    said: list[str] = []
    llm = ScriptedChatModel(
        reply_fn=lambda prompt: (
            "So the final answer is: Bergen" if "follow up" in prompt else "Bergen"
        )
    )
    report = run_demo(tmp_path / "demo", llm=llm, questions=2, show_progress=False, say=said.append)
    assert (
        said
        and "4 strategies" in said[0]
        and "Plan on ScriptedChatModel" in said[1]
        and "rag: 2 question(s), ~2 calls" in said[1]
    )
    assert {r["strategy"] for r in report["summary"]} == set(default_demo())
    rag = next(r for r in report["summary"] if r["strategy"] == "rag")
    assert rag["score"] == 50.0  # "Bergen" is right for the first question only


#: RAPTOR's tree build compiles UMAP's numba code, once per process: 34 s of the 93 s this test took
#: on 2 loaded cores. Its demo run is in the slow tier; in the default suite RAPTOR answers through
#: its strategy in tests/test_raptor.py (a tree of leaves: no clustering).
COMPILES_UMAP = ("raptor",)


def run_demo_of(tmp_path, strategies: dict) -> dict:
    """The demo's report over one question with ``strategies`` and a scripted model."""
    llm = ScriptedChatModel(
        reply_fn=lambda prompt: (
            "So the final answer is: Bergen" if "follow up" in prompt else "Bergen"
        )
    )
    report = run_demo(
        tmp_path / "demo",
        llm=llm,
        questions=1,
        strategies=strategies,
        show_progress=False,
        say=lambda m: None,
    )
    assert report is not None
    return report


def test_demo_can_run_every_strategy(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    chosen = {n: o for n, o in demo_strategies().items() if n not in COMPILES_UMAP}
    report = run_demo_of(tmp_path, chosen)
    assert {r["strategy"] for r in report["summary"]} == set(chosen)


@pytest.mark.slow
def test_demo_can_run_raptor(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    chosen = {n: demo_strategies()[n] for n in COMPILES_UMAP}
    report = run_demo_of(tmp_path, chosen)
    assert {r["strategy"] for r in report["summary"]} == set(COMPILES_UMAP)


class PrefixCachingModel(ScriptedChatModel):
    """Reports the words a prompt shares at its start with the previous prompt as cached, as the
    embedded model's llama.cpp prefix cache does (the demo's table then has its cache columns)."""

    _last: list[str] = PrivateAttr(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        words = "\n".join(str(m.content) for m in messages).split()
        usage = result.generations[0].message.usage_metadata
        usage["input_token_details"] = {"cache_read": shared_words(self._last, words)}
        self._last = words
        return result


def test_the_demo_report_names_no_winner_on_its_few_scored_questions_and_says_why(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    llm = PrefixCachingModel(
        reply_fn=lambda prompt: (
            "So the final answer is: Bergen" if "follow up" in prompt else "Bergen"
        )
    )
    report = run_demo(tmp_path / "demo", llm=llm, show_progress=False, say=lambda m: None)
    score = next(w for w in report["winners"] if w["metric"] == "score")
    assert (
        score["strategies"] == []
        and "no difference can be significant on n=3 questions" in score["note"]
    )
    assert (
        "detect differences" not in score["note"]
    )  # 3 questions reach p 0.25 at best: nothing is detectable
    folder = tmp_path / "demo" / "run" / "report"
    assert (
        "no difference can be significant on n=3 questions"
        in (folder / "significance.md").read_text()
    )
    header = (folder / "pairwise.csv").read_text().splitlines()[0].split(",")
    assert header[:1] + header[1:] == [
        "metric",
        "strategy_a",
        "strategy_b",
        "n",
        "mean_a",
        "mean_b",
        "mean_diff",
        "ci_low",
        "ci_high",
        "p_value",
        "p_adjusted",
        "test",
        "detectable_difference",
    ]
    summary = (folder / "summary.csv").read_text().splitlines()[0].split(",")
    assert {"n_scored", "score_ci_low", "score_ci_high", "score_se", "frontier_tokens"} <= set(
        summary
    )
    assert 'id="pairwise"' in (folder / "report.html").read_text()
    # docs/demo.md shows the table `longctx demo` prints (summary.md, built here by the same code)
    printed = [cells(line) for line in (folder / "summary.md").read_text().splitlines()]
    shown = documented_demo_table()
    assert shown[0] == printed[0], "docs/demo.md's table: other columns than `longctx demo` prints"
    assert sorted(row[0] for row in shown[2:]) == sorted(row[0] for row in printed[2:])


def cells(line: str) -> list[str]:
    """The cells of a markdown table row."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def documented_demo_table() -> list[list[str]]:
    """The table docs/demo.md says `longctx demo` printed: the first one whose header starts
    ``| strategy | score |``."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "demo.md").read_text()
    lines = text[text.index("\n| strategy | score |") + 1 :].splitlines()
    return [cells(line) for line in itertools.takewhile(lambda x: x.startswith("|"), lines)]
