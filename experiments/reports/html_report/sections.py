"""The report's sections around its tables: the header (model, strategies, run times), an
unfinished run's notice, the winners, the estimated cost and the prices behind it, the plots."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.planning.prices import DEFAULT_PRICES_DATE, Price
from longctx.experiments.reports.html_report.cells import e, number, swatch, usd
from longctx.experiments.reports.html_report.winners import incomplete_line


def header_section(
    benchmark: str,
    manifest: Mapping[str, Any],
    per_strategy: Mapping[str, Any],
    samples: Mapping[str, Any],
) -> str:
    """The title and the run's facts: model, strategies, questions, when it ran, library and
    git revision."""
    invocations = manifest.get("invocations") or [{}]
    facts = {
        "model": manifest.get("model"),
        "strategies": ", ".join(per_strategy),
        "questions": len(samples),
        "run": f"{invocations[0].get('started', '?')} to {invocations[-1].get('finished', '?')}",
        "library": manifest.get("library_version"),
        "git": (invocations[-1].get("git_revision") or "")[:12] or None,
    }
    items = "".join(
        f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts.items() if v not in (None, "")
    )
    return f'<header><h1>longctx report: {e(benchmark)}</h1><dl class="facts">{items}</dl></header>'


def incomplete_section(missing: Mapping[str, int], questions: int) -> str:
    """What an unfinished run lacks (nothing for a finished one)."""
    if not missing:
        return ""
    return (
        '<section id="incomplete" '
        f'class="incomplete"><p><b>{e(incomplete_line(missing, questions))}</b></p></section>'
    )


def winners_section(winners: Sequence[Mapping[str, Any]]) -> str:
    """Each metric's winner with its value, or why none is named."""
    if not winners:
        return ""
    items = []
    for w in winners:
        if w["strategies"]:
            value = usd(w["value"]) if w["metric"] == "cost_usd" else e(number(w["value"]))
            names = ", ".join(swatch(n) for n in w["strategies"])
            items.append(
                f'<li data-metric="{e(w["metric"])}" data-significant="1"><b>{e(w["label"])}</b>: '
                f'{names} ({value}) <span class="note">{e(w["note"])}</span></li>'
            )
        else:
            items.append(
                f'<li data-metric="{e(w["metric"])}" data-significant="0"><span '
                f'class="nowin">{e(w["note"])}</span></li>'
            )
    return (
        '<section id="winners"><h2>Winner per metric</h2><p class="note">A winner is named only '
        "when it beats every other "
        "strategy on the questions they share (paired test, Holm-adjusted p &lt; 0.05); see the "
        "matrix below.</p>"
        f'<ul class="winners">{"".join(items)}</ul></section>'
    )


def costs_section(costs: Mapping[str, Mapping[str, Any]], prices: Mapping[str, Any] | None) -> str:
    """The prices used per model and where each came from (what the prompt cache saved:
    :mod:`longctx.experiments.reports.html_report.prompt_cache`)."""
    used: dict[str, Price | None] = {}
    for data in costs.values():
        used.update(data["prices"])
    rows = [_price_row(model, price) for model, price in used.items()]
    return (
        '<section id="costs"><h2>Estimated cost</h2><p class="note">An <b>estimate</b>: tokens '
        "as the model reported them "
        "(or counted), times USD per 1M tokens; built-in prices are public list prices as of "
        f"{e(DEFAULT_PRICES_DATE)}. Prompt tokens "
        "the server reported as read from its prompt cache are charged at the cached-input rate; "
        "batch discounts and cache writes "
        "are left out. Calls replayed from the LLM cache cost nothing. Set your own with "
        '<code>longctx report DIR --prices prices.json</code>, e.g. <code>{"gpt-4o-mini": '
        '{"prompt": 0.15, "cached": 0.075, "completion": 0.6}}</code>.</p>'
        '<table class="prices"><thead><tr><th>model</th><th>USD / 1M prompt</th><th>USD / 1M '
        "cached prompt</th><th>USD / 1M completion</th>"
        f"<th>price from</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _price_row(model: str, price: Price | None) -> str:
    """One model's prices per 1M tokens and where they came from."""
    if price is None:
        how, prompt, cached, completion = "unknown: add it to a --prices file", "", "", ""
    else:
        how = {
            "user": "your --prices file",
            "local": "local model: free",
            "default": f"built-in list price as of {DEFAULT_PRICES_DATE} (estimate)",
        }[price.source]
        if price.source != "local" and price.key != model:
            how += f", entry {price.key!r}"
        prompt, completion = f"${price.prompt:g}", f"${price.completion:g}"
        cached = (
            f"${price.cached:g}"
            if price.cached is not None
            else f"${price.prompt:g} (no discount known)"
        )
    cells = "".join(f'<td class="num">{e(v)}</td>' for v in (prompt, cached, completion))
    return f"<tr><td>{e(model)}</td>{cells}<td>{e(how)}</td></tr>"


def plots_section(folder: Path) -> str:
    """The plots already written in ``folder``, embedded as PNG ``data:`` URIs (nothing when
    there are none)."""
    images = []
    for name, caption in (
        ("accuracy_vs_tokens.png", "Accuracy vs tokens spent per answer"),
        ("accuracy_vs_usd.png", "Accuracy vs estimated USD per answer (priced models only)"),
        ("accuracy_vs_length.png", "Accuracy vs corpus length"),
        ("cost_per_question.png", "Cost per question vs questions asked over one corpus"),
    ):
        path = folder / name
        if path.is_file():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            images.append(
                f'<figure><img alt="{e(caption)}" '
                f'src="data:image/png;base64,{data}"><figcaption>{e(caption)}</figcaption></figure>'
            )
    return f'<section id="plots"><h2>Plots</h2>{"".join(images)}</section>' if images else ""
