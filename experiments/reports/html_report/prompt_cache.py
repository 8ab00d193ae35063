"""The report's prompt-cache section: per strategy, cost per answer with the server's prompt
cache and without it, the cost frontier each way, and which strategies the cache moves onto or
off the frontier.

A provider bills the prompt tokens it read from its cache at a cached rate, and a local model
(llama.cpp, the embedded one) skips their prefill, so a strategy whose prompts start with text
every question shares (full context: the corpus) costs less per question with a cache than the same
tokens without one, and the cost frontier can change. USD tells it for a priced model; the tokens
the model computed (prompt tokens it did not read from its cache, plus completion tokens) tell it
for a free local one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.experiments.reports.html_report.cells import e, number, usd_exact
from longctx.graphs.plugin.registry import STRATEGIES

#: (frontier column with the cache, without it, what the frontier weighs against the score)
FRONTIERS = (
    ("frontier_cost", "frontier_cost_uncached", "USD per answer"),
    ("frontier_computed_tokens", "frontier_tokens", "tokens the model computed per answer"),
)


def prompt_cache_section(
    table: Sequence[Mapping[str, Any]], costs: Mapping[str, Mapping[str, Any]]
) -> str:
    """Per strategy (``table``: the summary with costs): cached prompt tokens, USD and tokens per
    answer with and without the cache, the frontier each way, what its prompts start with; then the
    frontier's changes."""
    by_name = {r["strategy"]: r for r in table}
    rows = []
    for name, data in costs.items():
        row = by_name.get(name, {})
        sharing = STRATEGIES.get(name).prompt_sharing if name in STRATEGIES else None
        cells = [
            number(row.get("cached_prompt_tokens")),
            usd_exact(data.get("usd_per_answer")),
            usd_exact(data.get("usd_per_answer_uncached")),
            row.get("frontier_cost"),
            row.get("frontier_cost_uncached"),
            number(row.get("computed_tokens")),
            number(row.get("tokens")),
            row.get("frontier_computed_tokens"),
            row.get("frontier_tokens"),
        ]
        shared = sharing.what if sharing is not None else "what differs per question"
        numbers = "".join(f"<td class=num>{e(c)}</td>" for c in cells)
        rows.append(f"<tr><td>{e(name)}</td>{numbers}<td>{e(shared)}</td></tr>")
    head = (
        "<th>strategy</th><th>cached prompt tokens / answer</th><th>USD / answer with the prompt "
        "cache</th><th>USD / answer without</th>"
        "<th>cost frontier with the cache</th><th>without</th><th>tokens computed / answer (with "
        "the cache)</th><th>tokens / answer</th>"
        "<th>token frontier with the cache</th><th>without</th><th>its prompts start with</th>"
    )
    return (
        '<section id="prompt-cache"><h2>Prompt cache</h2><p class="note">Prompt tokens the '
        "server reported as read from its prompt "
        "cache cost the cached-input rate (a local model skips their prefill). Per answer, with "
        "the cache and without it: USD, the "
        "tokens the model computed (prompt tokens not read from the cache, plus completion "
        "tokens), and each strategy's place on the "
        f"frontier of score against each.</p><p>{e(frontier_changes(table))}</p>"
        '<div class="wide"><table '
        f'class="prices"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def frontier_changes(table: Sequence[Mapping[str, Any]]) -> str:
    """The strategies the prompt cache moves onto or off each frontier, in a sentence
    per frontier."""
    if not any(r.get("cached_prompt_tokens") for r in table):
        return (
            "The server reported no cached prompt tokens in this run: every cost is the same "
            "with and without a prompt cache."
        )
    sentences = []
    for with_cache, without, weighed in FRONTIERS:
        joins = [
            r["strategy"]
            for r in table
            if r.get(with_cache) == "frontier" and r.get(without) == "dominated"
        ]
        leaves = [
            r["strategy"]
            for r in table
            if r.get(with_cache) == "dominated" and r.get(without) == "frontier"
        ]
        if not any(r.get(with_cache) for r in table):
            continue
        if not joins and not leaves:
            sentences.append(
                "The prompt cache changes no strategy's place on the frontier of score against "
                f"{weighed}."
            )
            continue
        moves = [
            f"{', '.join(joins)} join{'s' if len(joins) == 1 else ''} it" if joins else "",
            f"{', '.join(leaves)} leave{'s' if len(leaves) == 1 else ''} it" if leaves else "",
        ]
        sentences.append(
            f"On the frontier of score against {weighed}, with the prompt cache "
            f"{' and '.join(m for m in moves if m)}."
        )
    return " ".join(sentences)


__all__ = ["frontier_changes", "prompt_cache_section"]
