"""An answer's steps in order, each as its strategy's registry entry shows it
(``presentation.step_views`` and ``run_views``, declared in the strategy's package; a nested run's
step as that run's strategy does), every other step as its facts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from longctx.agents.jsonsafe import dumps
from longctx.experiments.reports.html_report.cells import e
from longctx.graphs.plugin.presentation import LEG_KEY, StrategyPresentation, escape
from longctx.graphs.plugin.presentation import text as cut
from longctx.graphs.plugin.registry import STRATEGIES


def steps_details(
    strategy: str, steps: Sequence[Mapping[str, Any]], evidence: Sequence[Mapping[str, Any]]
) -> str:
    """The steps in order, each as its strategy shows it (a nested run's step as that run's
    strategy does)."""
    if not steps:
        return '<div class="steps"><b>Steps</b> <span class="na">none recorded</span></div>'
    by_chunk = {ev.get("chunk_id"): ev for ev in evidence if ev.get("chunk_id") is not None}
    blocks, i = [], 0
    while i < len(steps):
        node, looks = (
            str(steps[i].get("node", "?")),
            _presentation(steps[i].get(LEG_KEY) or strategy),
        )
        run_view = looks.run_views.get(node)
        if run_view is not None:  # consecutive steps of this node are one block
            j = _run_end(steps, i, node)
            blocks.append(_step_box(node, escape(run_view(steps[i:j]))))
            i = j
            continue
        blocks.append(_one_step(node, looks, steps[i], by_chunk))
        i += 1
    return (
        '<details class="steps" open><summary><b>Steps</b> '
        f"({len(steps)})</summary>{''.join(blocks)}</details>"
    )


def _run_end(steps: Sequence[Mapping[str, Any]], i: int, node: str) -> int:
    """The index after the steps of ``node`` (and of ``steps[i]``'s nested run) that follow one
    another from ``i``."""
    leg = steps[i].get(LEG_KEY)
    j = i
    while j < len(steps) and steps[j].get("node") == node and steps[j].get(LEG_KEY) == leg:
        j += 1
    return j


def _one_step(
    node: str,
    looks: StrategyPresentation,
    step: Mapping[str, Any],
    by_chunk: Mapping[Any, Mapping[str, Any]],
) -> str:
    """A step as its strategy's step view shows it, with the facts the view did not show; its facts
    alone without one."""
    view = looks.step_views.get(node)
    if view is None:
        return _step_box(node, _facts(step))
    seen = view(step, by_chunk)
    return _step_box(node, escape(seen.html), _facts(step, seen.keys))


def _presentation(strategy: Any) -> StrategyPresentation:
    """How ``strategy`` is shown: its registry entry's, or the default for a name this process has
    not registered."""
    return (
        STRATEGIES.get(strategy).presentation
        if isinstance(strategy, str) and strategy in STRATEGIES
        else StrategyPresentation()
    )


def _step_box(node: str, body: str, extra: str = "") -> str:
    return (
        f'<div class="step" data-node="{e(node)}"><div '
        f'class="node">{e(node)}</div>{body}{extra}</div>'
    )


def _facts(step: Mapping[str, Any], skip: Iterable[str] = ()) -> str:
    """The step's remaining facts as a definition list (non-scalars as JSON)."""
    skip = {"node", *skip}
    items = []
    for key, value in step.items():
        if key in skip:
            continue
        text = value if isinstance(value, str) else dumps(value)
        tag = "pre" if isinstance(value, str) and "\n" in value else "span"
        items.append(f"<dt>{e(key)}</dt><dd><{tag}>{cut(text)}</{tag}></dd>")
    return f'<dl class="kv">{"".join(items)}</dl>' if items else ""
