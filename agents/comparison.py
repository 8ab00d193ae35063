"""Answers of several strategies to one question, side by side with what each cost.

:meth:`longctx.agents.workspace.Workspace.compare` returns a :class:`Comparison`: ``to_rows()``
gives plain dicts (for pandas or a CSV), ``str()`` a plain-text table, and in a notebook it shows as
an HTML table (``_repr_html_``). USD is filled when the workspace was given a price, at the report's
rule (:mod:`longctx.graphs.metering.pricing`: cached prompt tokens at the cached rate). An answer
replayed from its checkpoint (a MemAgent run asked again) shows what it cost when its calls were
paid, and how many of them were replayed now, never a free answer.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from longctx.graphs.metering.pricing import TokenPrice
from longctx.retrieval.contract import Answer, Question

#: Columns of a row, in order. ``calls``, the tokens and ``cost_usd`` are what the answer cost when
#: its calls were paid, those of an earlier call it replayed or resumed included; ``replayed``
#: counts the calls answered now without a request (from that earlier run's checkpoint, or from the
#: LLM cache).
COLUMNS = (
    "strategy",
    "answer",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "seconds",
    "cost_usd",
    "replayed",
    "stopped",
    "error",
)
#: Columns shown only when some row has a value (``replayed``: when some row replayed a call).
OPTIONAL = ("cost_usd", "replayed", "stopped", "error")
#: The note under a table with replayed calls.
REPLAYED_NOTE = (
    "replayed: calls answered now without a request (an earlier run's checkpoint, or the LLM "
    "cache); calls, tokens and cost_usd count the checkpoint's as they were paid (the LLM cache "
    "keeps no tokens)"
)
#: Characters of an answer shown in the plain-text table (rows and HTML keep it whole).
TEXT_WIDTH = 60


@dataclass
class Comparison:
    """One question answered by several strategies.

    Attributes:
        question: The question asked.
        answers: Strategy name -> its :class:`~retrieval.contract.Answer`, in the order asked.
        errors: Strategy name -> why it gave no answer (a budget its plan could not fit).
        price: USD per 1M prompt, completion and cached prompt tokens used for ``cost_usd``, or
            ``None``.
        order: The strategies in the order asked (answered or not).
    """

    question: Question
    answers: dict[str, Answer] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    price: TokenPrice | None = None
    order: list[str] = field(default_factory=list)

    def __getitem__(self, strategy: str) -> Answer:
        return self.answers[strategy]

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        return iter(self.to_rows())

    def __len__(self) -> int:
        return len(self.order)

    def to_rows(self) -> list[dict[str, Any]]:
        """One dict per strategy, in the order asked, with the keys of :data:`COLUMNS`."""
        rows = []
        for name in self.order:
            a = self.answers.get(name)
            if a is None:
                rows.append(
                    {**dict.fromkeys(COLUMNS), "strategy": name, "error": self.errors.get(name)}
                )
                continue
            u = a.usage
            cached = u.cached_prompt_tokens + u.earlier_cached_prompt_tokens
            cost = (
                None
                if self.price is None
                else self.price.cost(u.run_prompt_tokens, u.run_completion_tokens, cached)
            )
            rows.append(
                {
                    "strategy": name,
                    "answer": a.answer,
                    "calls": u.run_llm_calls,
                    "prompt_tokens": u.run_prompt_tokens,
                    "completion_tokens": u.run_completion_tokens,
                    "seconds": round(u.seconds, 3),
                    "cost_usd": cost,
                    "replayed": (u.earlier_llm_calls + u.cached_calls) or None,
                    "stopped": a.stopped,
                    "error": None,
                }
            )
        return rows

    def _cells(self, row: Mapping[str, Any], width: int | None) -> list[str]:
        def cell(key: str) -> str:
            value = row[key]
            if value is None:
                return ""
            if key == "cost_usd":
                return f"${value:,.4f}"
            if key == "seconds":
                return f"{value:,.2f}"
            if isinstance(value, int):
                return f"{value:,}"
            text = " ".join(str(value).split())
            return text if width is None or len(text) <= width else text[: width - 3] + "..."

        return [cell(k) for k in self._columns()]

    def _columns(self) -> list[str]:
        """The columns worth showing: cost only with a price, stopped / error only when some row has
        one."""
        rows = self.to_rows()
        return [c for c in COLUMNS if c not in OPTIONAL or any(r[c] is not None for r in rows)]

    def __str__(self) -> str:
        header = self._columns()
        body = [self._cells(r, TEXT_WIDTH) for r in self.to_rows()]
        widths = [max(len(x) for x in column) for column in zip(header, *body)]
        lines = [f"Q: {self.question.text}", "  ".join(h.ljust(w) for h, w in zip(header, widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in body]
        if "replayed" in header:
            lines.append(REPLAYED_NOTE)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """An HTML table for notebooks (answers whole, escaped)."""
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self._columns())
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in self._cells(r, None)) + "</tr>"
            for r in self.to_rows()
        )
        caption = html.escape(self.question.text)
        note = (
            "<tfoot><tr><td "
            f"colspan='{len(self._columns())}'>{html.escape(REPLAYED_NOTE)}</td></tr></tfoot>"
            if "replayed" in self._columns()
            else ""
        )
        table = f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody>{note}"
        return f"<table><caption>{caption}</caption>{table}</table>"
