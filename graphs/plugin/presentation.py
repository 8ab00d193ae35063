"""How reports, plots and the demo show a strategy: its :class:`StrategyPresentation`, declared on
its registry entry in its own package, so that the report, the plots and the demo name no strategy.

A step view turns one of the strategy's steps into HTML for ``report.html``'s drill-down. It
builds :class:`Markup` with :func:`tag`, :func:`text` and :func:`join`, which escape every
plain string, so a view cannot put text from the data into the page unescaped. A step that a
nested run wrote (Self-Route's fallback) names that strategy under :data:`LEG_KEY` and is shown
with that strategy's views.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: Longest text shown for one value of a step (memories, transcripts); the rest is cut with a note.
MAX_TEXT = 4000
#: Colours of strategies that declare none (third-party plug-ins), picked by a hash of the name;
#: none is a built-in's.
PALETTE = (
    "#7f7f7f",
    "#bcbd22",
    "#393b79",
    "#637939",
    "#8c6d31",
    "#843c39",
    "#7b4173",
    "#3182bd",
    "#31a354",
    "#756bb1",
)
#: The step key naming the strategy whose nested run wrote the step.
LEG_KEY = "leg"

_COLOR = re.compile(r"#[0-9a-fA-F]{6}")


class Markup(str):
    """HTML that is safe to put in the page as it is (made by :func:`tag`, :func:`text`,
    :func:`join`)."""

    __slots__ = ()


def escape(value: Any) -> Markup:
    """``value`` as HTML: :class:`Markup` as it is, ``None`` empty, anything else escaped text."""
    if isinstance(value, Markup):
        return value
    return Markup("" if value is None else html.escape(str(value), quote=True))


def text(value: Any, limit: int = MAX_TEXT) -> Markup:
    """Escaped text cut to ``limit`` characters, with a note of how much was left out."""
    value = "" if value is None else str(value)
    if len(value) <= limit:
        return escape(value)
    return Markup(
        f'{escape(value[:limit])}<span class="more"> … ({len(value) - limit:,} more '
        "characters)</span>"
    )


def join(*parts: Any) -> Markup:
    """The parts one after another, each escaped unless it is :class:`Markup`."""
    return Markup("".join(escape(p) for p in parts))


def tag(name: str, *children: Any, cls: str | None = None) -> Markup:
    """``<name class="cls">children</name>``, each child escaped unless it is :class:`Markup`."""
    attr = f' class="{escape(cls)}"' if cls else ""
    return Markup(f"<{name}{attr}>{join(*children)}</{name}>")


def bullets(items: Iterable[Any]) -> Markup:
    """An unordered list of ``items`` (each escaped unless it is :class:`Markup`)."""
    return tag("ul", *(tag("li", i) for i in items))


@dataclass(frozen=True)
class Shown:
    """What a step view shows: its markup, and the step's keys it covers (the report lists the
    other keys below it as facts)."""

    html: Markup
    keys: frozenset[str] = frozenset()


#: ``(step, evidence by chunk id) -> Shown``: one step in the drill-down (the evidence lets a view
#: show the text of the chunks a step names).
StepView = Callable[[Mapping[str, Any], Mapping[Any, Mapping[str, Any]]], Shown]
#: ``steps -> Markup``: a run of consecutive steps of one node shown as one block (MemAgent's
#: memory).
RunView = Callable[[Sequence[Mapping[str, Any]]], Markup]


@dataclass(frozen=True)
class StrategyPresentation:
    """How the report, the plots and ``longctx demo`` show a strategy; nothing here changes how it
    runs.

    Attributes:
        color: Its colour in every plot and in ``report.html`` (``#rrggbb``); ``None``: one of
            :data:`PALETTE` picked by a hash of the name, the same in every run.
        demo_options: Config options at the demo's scale (small chunks, few calls); ``None``: not
            offered by ``longctx demo``.
        demo_default: Whether ``longctx demo`` runs it without ``--strategies`` (those that finish
            in minutes on 2 cores).
        step_views: Node name -> :data:`StepView` for the steps that node writes; a node without one
            is shown as its facts.
        run_views: Node name -> :data:`RunView` for a node whose consecutive steps are one block.
    """

    color: str | None = None
    demo_options: Mapping[str, Any] | None = None
    demo_default: bool = False
    step_views: Mapping[str, StepView] = field(default_factory=dict)
    run_views: Mapping[str, RunView] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.color is not None and not _COLOR.fullmatch(self.color):
            raise ValueError(f"A strategy's colour is '#rrggbb', got {self.color!r}")
        if self.demo_default and self.demo_options is None:
            raise ValueError("demo_default needs demo_options (the options the demo runs it with)")


def palette_color(name: str) -> str:
    """The colour of a strategy that declares none: fixed by a hash of its name."""
    digest = int(hashlib.sha256(name.encode("utf-8")).hexdigest(), 16)
    return PALETTE[digest % len(PALETTE)]
