"""Render planned documents as Markdown: headers, prose, tables, filler, planted sentences.

Each report states exactly the statements the fact base planned for it: values appear
in tables, in prose, or both, written in varied forms (``values.written_forms``). Filler
paragraphs pad the document to its token budget; sentences are counted as they are
drawn, so no document is tokenized more than once more when it is finished.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from longctx.experiments.synth import filler, values
from longctx.experiments.synth.domains import Domain
from longctx.experiments.synth.facts import STATIC, DocPlan, Statement
from longctx.retrieval.tokens import count_tokens, count_tokens_batch

_PROSE_BOTH = (
    "{Label} was {v} in {p}, compared with {vp} in {pp}.",
    "In {p}, {name} reported {label} of {v} ({pp}: {vp}).",
    "{Label} for {p} amounted to {v}, against {vp} in {pp}.",
    "{name} recorded {label} of {v} in {p}; the {pp} figure was {vp}.",
)
_PROSE_CURRENT = (
    "For {p}, {label} came to {v}.",
    "{name} reported {label} of {v} in {p}.",
    "{Label} stood at {v} in {p}.",
)
_NOISE_LINES = (
    "Analysts following {name} said its {label} would be watched closely in the coming season.",
    "Commentators compared {name} with its peers, although no new {label} figures were released.",
    "Observers expect {name} to discuss its {label} at the next public briefing.",
)


@dataclass
class _Section:
    blocks: list[str]
    filler: bool
    tokens: list[int] = field(default_factory=list)


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def _fact_section(
    rng: random.Random,
    domain: Domain,
    heading: str,
    fields: Sequence[str],
    cur: dict,
    prev: dict,
    name: str,
    year: int,
) -> _Section:
    """A section stating its fields for ``year`` and ``year - 1`` in a table and/or prose."""
    p, pp = domain.period(year), domain.period(year - 1)
    in_table = [f for f in fields if rng.random() < 0.65]
    blocks = [f"## {heading}", filler.sentence(rng, domain.name, name)]
    if in_table:
        rows = [f"| Item | {p} | {pp} |", "|---|---:|---:|"]
        for fname in in_table:
            spec = domain.field(fname)
            rows.append(
                f"| {_cap(spec.label)} ({values.unit_label(spec.kind)}) | "
                f"{values.table_cell(cur[fname], spec.kind)} | "
                f"{values.table_cell(prev[fname], spec.kind)} |"
            )
        blocks.append("\n".join(rows))
    sentences = []
    for fname in fields:
        spec = domain.field(fname)
        both = fname not in in_table or rng.random() < 0.4
        if fname in in_table and not both and rng.random() < 0.5:
            continue
        template = rng.choice(_PROSE_BOTH if both else _PROSE_CURRENT)
        sentences.append(
            template.format(
                Label=_cap(spec.label),
                label=spec.label,
                name=name,
                p=p,
                pp=pp,
                v=values.pick_form(cur[fname], spec.kind, rng),
                vp=values.pick_form(prev[fname], spec.kind, rng),
            )
        )
    if sentences:
        blocks.append(" ".join(sentences))
    return _Section(blocks, filler=False)


def report_sections(
    rng: random.Random, domain: Domain, plan: DocPlan, stmts: Sequence[Statement]
) -> list[_Section]:
    """Header, fact sections and (initially one-paragraph) filler sections of a report."""
    name, year = plan.entity, plan.year
    if name is None or year is None:
        raise ValueError(f"document {plan.doc_id}: a report's plan names its entity and year")
    cur = {s.field: s.value for s in stmts if s.fiscal_year == year}
    prev = {s.field: s.value for s in stmts if s.fiscal_year == year - 1}
    cats = {s.field: s.text for s in stmts if s.fiscal_year == STATIC}
    header = [
        f"# {name} — {domain.document_kind} {domain.period(year)}",
        f"**Published:** {plan.published}  ",
    ]
    header += [f"**{_cap(c.label)}:** {cats[c.name]}  " for c in domain.categoricals]
    profile = ", ".join(f"its {c.label} is {cats[c.name]}" for c in domain.categoricals)
    sections = [_Section(["\n".join(header), f"{name} at a glance: {profile}."], filler=False)]
    facts = [_fact_section(rng, domain, h, fs, cur, prev, name, year) for h, fs in domain.sections]
    fillers = [
        _Section([f"## {h}", filler.paragraph(rng, domain.name, name)], filler=True)
        for h in domain.filler_sections
    ]
    for i in range(max(len(facts), len(fillers))):
        sections += fillers[i : i + 1] + facts[i : i + 1]
    return sections


def noise_sections(
    rng: random.Random, domain: Domain, plan: DocPlan, entity_names: Sequence[str]
) -> list[_Section]:
    """A digest that names entities and fields but states no value."""
    header = f"# Industry Digest\n\n**Published:** {plan.published}  "
    sections = [_Section([header], filler=False)]
    for _ in range(3):
        name = rng.choice(entity_names)
        line = rng.choice(_NOISE_LINES).format(name=name, label=rng.choice(domain.fields).label)
        sections.append(
            _Section(
                [f"## Notes on {name}", line, filler.paragraph(rng, domain.name, name)], filler=True
            )
        )
    return sections


def fill_to_budget(
    rng: random.Random, domain: Domain, sections: list[_Section], budget: int, name: str
) -> None:
    """Count the blocks, then append filler sentences to filler sections until
    ``budget`` is reached."""
    for s in sections:
        s.tokens = count_tokens_batch(s.blocks)
    used = sum(sum(s.tokens) + len(s.tokens) for s in sections)
    targets = [s for s in sections if s.filler] or sections[-1:]
    i = 0
    while used < budget:
        section = targets[i % len(targets)]
        i += 1
        sentences, tokens = [], 0
        for _ in range(rng.randint(4, 7)):
            text = filler.sentence(rng, domain.name, name)
            n = count_tokens(text)
            if used + tokens + n > budget and used + tokens + n - budget > budget - used - tokens:
                break
            sentences.append(text)
            tokens += n
        if not sentences:
            break
        section.blocks.append(" ".join(sentences))
        section.tokens.append(tokens)
        used += tokens + 1


def assemble(sections: list[_Section], plants: Sequence[tuple[int, str]]) -> str:
    """Join sections into Markdown, inserting each planted paragraph at the block boundary
    nearest its token offset within the document (never inside the header)."""
    blocks = [b for s in sections for b in s.blocks]
    tokens = [t + 1 for s in sections for t in s.tokens]
    starts, acc = [], 0
    for t in tokens:
        starts.append(acc)
        acc += t
    inserts: dict[int, list[str]] = {}
    for offset, text in plants:
        boundary = min(
            range(1, len(blocks) + 1),
            key=lambda j: abs((starts[j] if j < len(starts) else acc) - offset),
        )
        inserts.setdefault(boundary, []).append(text)
    out = []
    for j, block in enumerate(blocks):
        out.extend(inserts.get(j, []))
        out.append(block)
    out.extend(inserts.get(len(blocks), []))
    return "\n\n".join(out) + "\n"
