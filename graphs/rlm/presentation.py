"""How reports and the demo show RLM: the code of every turn, what it printed, and each
sub-call's depth, prompt size and reply."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longctx.graphs.plugin.api import Shown, StrategyPresentation, join, tag, text


def _sub_call(call: Mapping[str, Any]) -> Any:
    head = (
        f"{call.get('kind')} (depth {call.get('depth')}, {call.get('model')}): "
        f"{call.get('prompt_chars', 0):,} prompt chars -> "
    )
    return tag("li", head, tag("span", text(call.get("reply"), 300), cls="sub"))


def turn_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """One root turn: each block's code and output, its sub-calls, the answer if it gave one."""
    blocks = []
    for i, code in enumerate(step.get("code") or []):
        out = (step.get("stdout") or [""])[i] if i < len(step.get("stdout") or []) else ""
        err = (step.get("stderr") or [""])[i] if i < len(step.get("stderr") or []) else ""
        blocks.append(tag("pre", text(code), cls="code"))
        if out or err:
            blocks.append(tag("pre", text((out + err).strip(), 2000), cls="output"))
    calls = step.get("sub_calls") or []
    listed = tag("ul", *[_sub_call(c) for c in calls]) if calls else ""
    final = step.get("final")
    answered = tag("p", "Answer: ", tag("span", text(final), cls="sub")) if final else ""
    head = tag("p", f"Turn {step.get('turn')} (depth {step.get('depth', 0)})", cls="what")
    if not blocks:
        blocks.append(tag("pre", text(step.get("reply"), 2000)))
    return Shown(
        join(head, *blocks, listed, answered),
        frozenset({"turn", "depth", "code", "stdout", "stderr", "sub_calls", "final", "reply"}),
    )


PRESENTATION = StrategyPresentation(
    color="#aec7e8",
    demo_options={"max_iterations": 6, "repl": "sandbox"},
    step_views={"turn": turn_view},
)
