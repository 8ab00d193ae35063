"""A strategy added from outside the tree, as a third-party plug-in adds one, gets everything the
built-in strategies get from their registry entries without a line of the library edited: a run,
its own step view in report.html's drill-down, its declared colour in the page and the plots, a
row in the evidence-ceiling table and a place in ``longctx demo``. Also: the report shows a strategy
it does not know (a run's rows outlive a plug-in) with the defaults."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TypedDict

import matplotlib.image
import pytest

from longctx import Question
from longctx.experiments.benchmarks import Sample
from longctx.experiments.ceilings.measure import compute_ceilings, format_table
from longctx.experiments.cli.demo import demo_strategies
from longctx.experiments.reports.html_report.steps import steps_details
from longctx.experiments.reports.plots import strategy_color
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.graphs import STRATEGIES, StrategyConfig, StrategyPresentation
from longctx.graphs.calls.llm import complete
from longctx.graphs.plugin.ceiling import EvidenceCeiling, reach_of
from longctx.graphs.plugin.config import option
from longctx.graphs.plugin.nodes import linear_graph
from longctx.graphs.plugin.presentation import PALETTE, Shown, join, tag, text
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Step
from tests.scripted import ScriptedChatModel
from tests.test_html_report import answer_block, question_block

NAME = "tally"
COLOR = "#123456"


@dataclass(frozen=True, kw_only=True)
class TallyConfig(StrategyConfig):
    """Counts the corpus' words, then asks the model once."""

    max_new_tokens: int = option(16, min=1)


class TallyState(TypedDict, total=False):
    question: Question
    raw: str
    answer: str
    steps: Annotated[list[Step], operator.add]


def tally(state: TallyState, runtime) -> dict:
    ctx = runtime.context
    words = sum(len(d.text.split()) for d in ctx.corpus.documents)
    raw = complete(
        ctx.llm,
        f"{words} words. {state['question'].render()}",
        max_tokens=ctx.config.max_new_tokens,
    )
    return {
        "raw": raw,
        "answer": raw.strip(),
        "steps": [Step("tally", words=words, note="<b>counted</b>", calls=1)],
    }


def tally_view(step, _evidence) -> Shown:
    """The plug-in's own rendering of its step: a headline and the note, escaped by the
    markup helpers."""
    return Shown(
        join(
            tag("p", f"Tallied {step['words']} words", cls="what"),
            tag("pre", text(step["note"]), cls="tally"),
        ),
        frozenset({"words", "note"}),
    )


@dataclass(frozen=True, kw_only=True)
class TallyCeiling(EvidenceCeiling):
    """Tally reads every document, so all the evidence reaches its call."""

    def reach(self, cfg, item, env):
        return reach_of(item.evidence, (d.doc_id for d in item.corpus.documents))

    def describe(self, cfg, env, corpus_tokens=None) -> str:
        return "every document is counted"


@pytest.fixture
def plugin():
    """The plug-in registered as a third-party package registers it (its module's decorator), for
    this test only."""
    presentation = StrategyPresentation(
        color=COLOR, demo_options={"max_new_tokens": 8}, step_views={"tally": tally_view}
    )
    with STRATEGIES.scoped(
        NAME,
        config_cls=TallyConfig,
        presentation=presentation,
        ceiling=TallyCeiling(),
        description="counts words",
    ) as register:
        register(lambda config=None: linear_graph(NAME, TallyState, ("tally", tally)))
        yield STRATEGIES.get(NAME)


def _samples() -> list[Sample]:
    corpus = Corpus.from_texts(
        ["The vault code is 7421.", "The harbour has a lighthouse."], titles=["Vault", "Harbour"]
    )
    asked = [("What is the vault code?", "7421"), ("What is in the harbour?", "a lighthouse")]
    return [
        Sample(
            sample_id=f"q{i}",
            benchmark="synth",
            dataset="finance",
            corpus=corpus,
            question=Question(text=q),
            answers=(a,),
            metadata={"question": q, "evidence_doc_ids": [str(i)]},
        )
        for i, (q, a) in enumerate(asked)
    ]


def test_a_plugin_strategy_gets_its_report_section_colour_and_demo_place(plugin, tmp_path):
    samples = _samples()
    out = tmp_path / "run"
    cfg = RunConfig(
        benchmark="synth",
        strategies=(NAME, "rag"),
        llm_cache=False,
        strategy_options={"rag": {"top_k": 1}},
    )
    run_experiment(
        cfg,
        out,
        llm=ScriptedChatModel(reply_fn=lambda prompt: "7421"),
        samples=samples,
        show_progress=False,
    )
    assert {r["strategy"] for r in read_rows(out) if r["status"] == "ok"} == {NAME, "rag"}
    result = build_report(out, samples=samples)
    page = Path(result["html"]).read_text(encoding="utf-8")

    block = answer_block(question_block(page, "q0"), NAME)  # its section of the drill-down
    assert (
        '<div class="step" data-node="tally"><div class="node">tally</div><p class="what">Tallied '
        "10 words</p>" in block
    )
    assert (
        '<pre class="tally">&lt;b&gt;counted&lt;/b&gt;</pre>' in block
    )  # the view's text is escaped
    assert (
        "<dt>calls</dt>" in block and "<dt>words</dt>" not in block
    )  # facts the view did not show are listed
    assert (
        f'<tr data-strategy="{NAME}"><td><span class="swatch" style="background:{COLOR}">' in page
    )
    assert strategy_color(NAME) == COLOR

    pixels = matplotlib.image.imread(out / "report" / "accuracy_vs_tokens.png")[..., :3]
    rgb = tuple(int(COLOR[i : i + 2], 16) / 255 for i in (1, 3, 5))
    assert (abs(pixels - rgb).max(axis=-1) < 1 / 255).any()  # its point is drawn in its colour

    assert demo_strategies()[NAME] == {"max_new_tokens": 8}

    ceilings = compute_ceilings(samples, cache_dir=tmp_path / "cache")
    assert (
        ceilings[-1].strategy == NAME and ceilings[-1].complete_share == 1.0
    )  # after the built-in rules
    assert f"| {NAME} | 100.0% | 100.0% | 2 | every document is counted |" in format_table(ceilings)


def test_a_strategy_the_process_does_not_know_is_reported_with_the_defaults(tmp_path):
    assert "retired_plugin" not in STRATEGIES
    assert strategy_color("retired_plugin") in PALETTE and strategy_color(
        "retired_plugin"
    ) == strategy_color("retired_plugin")
    shown = steps_details("retired_plugin", [{"node": "tally", "words": 3}], [])
    assert (
        'data-node="tally"' in shown and "<dt>words</dt>" in shown
    )  # its facts, as for any node without a view


def test_a_bad_colour_is_a_one_line_error():
    with pytest.raises(ValueError, match="'#rrggbb', got 'blue'"):
        StrategyPresentation(color="blue")
    with pytest.raises(ValueError, match="demo_default needs demo_options"):
        StrategyPresentation(demo_default=True)


def test_a_nested_runs_steps_are_shown_with_that_strategys_views():
    """Self-Route's fallback steps name the strategy that wrote them: MemAgent's memory is its table
    there too."""
    steps = [
        {"node": "measure_context", "route": "memagent", "reason": "too long"},
        *(
            {
                "node": "update_memory",
                "leg": "memagent",
                "chunk": k,
                "memory": f"m{k // 2}",
                "tokens": 3,
            }
            for k in range(4)
        ),
    ]
    shown = steps_details("self_route", steps, [])
    assert 'Route: <b>memagent</b> · reason: <span class="reason">too long</span>' in shown
    assert (
        shown.count('data-node="update_memory"') == 1
        and "Memory after each chunk (4 chunks read)" in shown
    )
    assert "0–1 (unchanged)" in shown and "2–3 (unchanged)" in shown
