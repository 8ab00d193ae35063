"""The page's section on cost per question as the questions over one corpus accumulate: each
strategy's index cost shared out over n questions, and where each pair of strategies breaks even
(:mod:`longctx.experiments.planning.amortized_costs`); its plot is embedded with the others."""

from __future__ import annotations

from longctx.experiments.planning.amortized_costs import (
    SHOWN_QUESTIONS,
    Amortization,
    amortized_rows,
    break_even_matrix,
    crossing_text,
    shown_digits,
)
from longctx.experiments.reports.html_report.cells import e, swatch


def amortized_section(amortized: Amortization | None) -> str:
    """The table of a question's cost at 1, 2, 5 ... questions per corpus, the break-even sentences
    and matrix (nothing without answers)."""
    if amortized is None:
        return ""
    columns = ("index_per_corpus", "per_question", *(f"at_{n}" for n in SHOWN_QUESTIONS))
    digits = shown_digits(amortized)
    heads = [
        "index / corpus",
        "each question",
        *(f"{n} question{'' if n == 1 else 's'}" for n in SHOWN_QUESTIONS),
    ]
    body = "".join(
        f'<tr data-strategy="{e(row["strategy"])}"><td>{swatch(row["strategy"])}</td>'
        + "".join(f'<td class="num">{_value(row[c], amortized.unit, digits)}</td>' for c in columns)
        + "</tr>"
        for row in amortized_rows(amortized)
    )
    crossings = "".join(
        f'<li data-pair="{e(b.strategy)}|{e(b.other)}">{e(crossing_text(amortized, b))}</li>'
        for b in amortized.crossings()
    )
    none = (
        "<p>No two strategies' lines cross: the cheaper one is cheaper at any number of "
        "questions.</p>"
    )
    said = f'<ul class="break-even">{crossings}</ul>' if crossings else none
    matrix = break_even_matrix(amortized)
    names = [line.strategy for line in amortized.lines]
    grid = "".join(
        f"<tr><td>{swatch(row['cheaper'])}</td>"
        + "".join(f"<td>{e(row[n])}</td>" for n in names)
        + "</tr>"
        for row in matrix
    )
    head_cells = "".join(f"<th>{e(h)}</th>" for h in heads)
    name_cells = "".join(f"<th>{e(n)}</th>" for n in names)
    return (
        '<section id="amortized"><h2>Cost per question over one corpus</h2><p class="note">A '
        f"question's cost ({e(amortized.unit)}) when n questions are asked over the same corpus: "
        "(index + n &times; each question) / n. The index is the index-time work (usage.index_*: "
        "RAPTOR's tree, structured's records) paid once per corpus; a strategy that built nothing "
        "in this run, or reused a cached index, has 0.</p>"
        f'<table class="amortized"><thead><tr><th>strategy</th>{head_cells}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
        f"<h3>Break-even</h3>{said}"
        '<p class="note">When the strategy of each row is cheaper per question than the strategy '
        "of each column:</p>"
        f'<table class="break-even"><thead><tr><th>cheaper</th>{name_cells}</tr></thead>'
        f"<tbody>{grid}</tbody></table>"
        "</section>"
    )


def _value(value: float, unit: str, digits: int) -> str:
    """A cost cell at ``digits`` decimals
    (:func:`~experiments.planning.amortized_costs.shown_digits`: USD to the millionth, tokens to the
    tenth, or more where a break-even point needs them)."""
    return e(f"${value:,.{digits}f}") if unit == "USD" else e(f"{value:,.{digits}f}")
