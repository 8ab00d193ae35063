"""Evidence ceilings: what each strategy can possibly answer, measured without a model.

Whether the evidence a question needs can reach a strategy's final model call at all is a
property of the strategy and its settings, not of the model: RAG's top-k chunks contain
every evidence document or they do not; PAI's prefilter keeps them or not; MemAgent's
1,024-token memory can hold the needed records or not; full context fits or is
truncated. With the evidence known (every synthetic question names its documents and its
records), these ceilings are exact and LLM-free.

**A ceiling is an upper bound on accuracy, not an accuracy**: it assumes the model does
everything else perfectly (judges keep exactly the evidence, a decomposer asks the right
sub-questions, the memory keeps only what matters, the final call reasons without error).

Per strategy and its effective config, :func:`compute_ceilings` reports the share of
questions whose *complete* evidence can reach the final call, and the mean share of
evidence that can. Each strategy's rule is an :class:`graphs.ceiling.EvidenceCeiling` on its
registry entry (``STRATEGIES.get(name).ceiling``), defined in its own package
(``graphs/<name>/ceiling.py``) with the strategy's own retrieval, packing and truncation
code; this module only gathers the questions, applies the registered rules in their
``rank`` order and prints the tables. A strategy registered without a rule (``ceiling=None``)
is reported as skipped. See ``docs/ceilings.md`` for each built-in rule.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.synth.records import load_records
from graphs.ceiling import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    EvidenceSpan,
    Reach,
    SkipCeiling,
)
from graphs.registry import STRATEGIES
from retrieval.tokenizers import (
    Tokenizer,
    TokenizerError,
    hf_tokenizer,
    parse_spec,
    tiktoken_tokenizer,
)

#: One question with its evidence, and what every rule gets besides its config (``graphs.ceiling``).
Item = CeilingItem
Env = CeilingEnv

#: Printed and stored with every ceiling table.
UPPER_BOUND_NOTE = (
    "A ceiling is an upper bound, not an accuracy: the share of questions whose complete evidence can reach "
    "the strategy's final model call, assuming the model does everything else perfectly."
)


@dataclass
class Ceiling:
    """A strategy's ceiling over a set of questions.

    Attributes:
        strategy: Registry name.
        config: The effective config (JSON-safe).
        rule: The rule applied, in words.
        unit: What evidence is counted in (``documents``, ``records``, or ``sentences`` for BABILong's supporting facts).
        questions: Questions measured.
        complete_share: Share of questions whose complete evidence can reach the final call.
        mean_share: Mean over questions of the share of their evidence that can.
        by_difficulty: ``complete_share`` per difficulty (synthetic corpora).
        by_task_length: ``complete_share`` per task, then length (BABILong).
        per_question: ``{sample_id, reached, total}`` per question.
        detail: Rule-specific extras (PAI's judge mode, Self-Route's routed ceiling, ...).
        skipped: Why no ceiling was computed (then the numbers are ``None``).
    """

    strategy: str
    config: dict[str, Any]
    rule: str
    unit: str = "documents"
    questions: int = 0
    complete_share: float | None = None
    mean_share: float | None = None
    by_difficulty: dict[str, float] = field(default_factory=dict)
    by_task_length: dict[str, dict[str, float]] = field(default_factory=dict)
    per_question: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# -- items -----------------------------------------------------------------------------


#: Why a benchmark's samples name no evidence, in the error when none does.
NO_EVIDENCE = {
    "babilong": "BABILong's released files carry input, question and target only, not the supporting facts: ceilings need "
                "samples generated with 'python -m experiments.babilong_gen' (they record where each supporting fact is)",
}  # fmt: skip


def _spans_item(s: Any, meta: dict[str, Any]) -> Item:
    """A question whose evidence is sentences (``metadata["evidence_spans"]``: BABILong's supporting facts), per task x length."""
    spans = tuple(EvidenceSpan(d, a, b) for d, a, b in meta["evidence_spans"])
    cell = (str(s.dataset), str(meta["length"])) if "length" in meta else None
    return Item(
        s.sample_id,
        s.corpus,
        s.question,
        tuple(dict.fromkeys(x.doc_id for x in spans)),
        spans=spans,
        cell=cell,
    )


def items_from_samples(samples: Iterable[Any]) -> list[Item]:
    """Questions that name their evidence: documents (``evidence_doc_ids`` attribute or metadata), with synth
    records when known, or sentences (``metadata["evidence_spans"]``, generated BABILong)."""
    records_by_path: dict[str, dict] = {}
    out = []
    for s in samples:
        meta = dict(getattr(s, "metadata", {}) or {})
        if meta.get("evidence_spans") is not None:
            out.append(_spans_item(s, meta))
            continue
        evidence = getattr(s, "evidence_doc_ids", None) or meta.get("evidence_doc_ids")
        if not evidence:
            continue
        recs = None
        path = meta.get("path")
        if path and (Path(path) / "facts.sqlite").exists():
            if path not in records_by_path:
                records_by_path[path] = load_records(path)
            recs = records_by_path[path].get(s.sample_id)
        difficulty = getattr(s, "difficulty", None) or meta.get("difficulty")
        out.append(
            Item(
                s.sample_id,
                s.corpus,
                s.question,
                tuple(evidence),
                difficulty,
                recs.records if recs else None,
                recs.sub_questions if recs else None,
            )
        )
    return out


def _json_config(cfg: Any) -> dict[str, Any]:
    data = (
        dataclasses.asdict(cfg)
        if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type)
        else {}
    )
    return json.loads(
        json.dumps(data, default=lambda o: dict(o) if isinstance(o, Mapping) else str(o))
    )


def default_strategies() -> list[str]:
    """Every registered strategy that has a ceiling rule, in the rules' ``rank`` order (ties by name)."""
    ranked = [
        (rule.rank, name)
        for name in STRATEGIES.available()
        if (rule := STRATEGIES.get(name).ceiling) is not None
    ]
    return [name for _, name in sorted(ranked)]


def compute_ceilings(
    samples: Iterable[Any],
    strategies: Sequence[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    gold_sub_questions: bool = False,
    tokenizer: Any = None,
    cache_dir: str | Path | None = None,
) -> list[Ceiling]:
    """Evidence ceilings of ``strategies`` (default: every registered one with a rule) over ``samples``.

    Args:
        samples: Synthetic samples (``experiments.synth.load_samples``) or benchmark samples whose
            metadata names ``evidence_doc_ids``; samples without evidence are left out.
        strategies: Registry names; one registered without a rule is reported as skipped.
        options: Config overrides per strategy, as ``longctx run --option`` (``{"rag": {"top_k": 20}}``).
        gold_sub_questions: Rules that ask sub-questions (follow-ups, decompositions) ask the gold
            ones (one per entity the records name) instead of the question itself.
        tokenizer: The rules' tokenizer (memory and window sizes): ``None`` (cl100k), an object with
            ``encode`` / ``decode`` (a Hugging Face tokenizer), or an ``(encode, decode)`` pair.
        cache_dir: Index cache root (default ``$LONGCTX_CACHE_DIR`` or ``~/.cache/longctx``).

    Raises:
        ValueError: no sample names its evidence; an unknown strategy or option.
    """
    samples = list(samples)
    items = items_from_samples(samples)
    if not items:
        why = sorted(
            {NO_EVIDENCE[b] for s in samples if (b := getattr(s, "benchmark", None)) in NO_EVIDENCE}
        )
        raise ValueError(
            "; ".join(why)
            or "No sample names its evidence (evidence_doc_ids): ceilings need evidence, e.g. a 'longctx synth' folder"
        )
    env = Env(
        cache_dir=cache_dir,
        gold_sub_questions=gold_sub_questions,
        sentences=items[0].spans is not None,
    )
    if tokenizer is not None:
        env.encode, env.decode = _codec(tokenizer)
    options = dict(options or {})
    names = list(strategies) if strategies else default_strategies()
    unknown = [k for k in options if k not in names]
    if unknown:
        raise ValueError(f"--option for strategies not measured: {', '.join(unknown)}")
    out = []
    for name in names:
        spec = STRATEGIES.get(name)
        cfg = spec.make_config(**dict(options.get(name, {})))
        if spec.ceiling is None:
            out.append(
                Ceiling(name, _json_config(cfg), "", skipped="no ceiling rule for this strategy")
            )
            continue
        out.append(_one(name, spec.ceiling, cfg, items, env))
    return out


def _one(name: str, rule: EvidenceCeiling, cfg: Any, items: list[Item], env: Env) -> Ceiling:
    unit = "sentences" if items[0].spans is not None else rule.unit
    ceiling = Ceiling(
        name, _json_config(cfg), rule.describe(cfg, env, items[0].corpus.num_tokens), unit=unit
    )
    reaches: list[Reach] = []
    try:
        for item in items:
            reach = rule.reach(cfg, item, env)
            reaches.append(reach)
            ceiling.per_question.append(
                {"sample_id": item.sample_id, "reached": reach.reached, "total": reach.total}
            )
    except SkipCeiling as why:
        ceiling.skipped = str(why)
        ceiling.per_question = []
        return ceiling
    ceiling.questions = len(reaches)
    ceiling.complete_share = sum(r.complete for r in reaches) / len(reaches)
    ceiling.mean_share = sum(r.share for r in reaches) / len(reaches)
    by: dict[str, list[bool]] = {}
    for item, r in zip(items, reaches):
        if item.difficulty:
            by.setdefault(item.difficulty, []).append(r.complete)
    ceiling.by_difficulty = {d: sum(v) / len(v) for d, v in sorted(by.items())}
    ceiling.by_task_length = _by_cell(items, reaches)
    ceiling.detail.update(rule.detail(cfg, items, reaches, env))
    return ceiling


def _by_cell(items: Sequence[Item], reaches: Sequence[Reach]) -> dict[str, dict[str, float]]:
    """``complete_share`` per ``(task, length)`` cell, tasks and lengths in first-seen order (the loader's)."""
    cells: dict[str, dict[str, list[bool]]] = {}
    for item, r in zip(items, reaches):
        if item.cell is not None:
            cells.setdefault(item.cell[0], {}).setdefault(item.cell[1], []).append(r.complete)
    return {t: {n: sum(v) / len(v) for n, v in row.items()} for t, row in cells.items()}


def _codec(tokenizer: Any) -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
    if isinstance(tokenizer, tuple) and len(tokenizer) == 2:
        return tokenizer
    if isinstance(tokenizer, Tokenizer):
        return tokenizer.encode, tokenizer.decode
    if hasattr(tokenizer, "encode") and hasattr(tokenizer, "decode"):
        try:
            tokenizer.encode("x", add_special_tokens=False)
            return (lambda t: list(tokenizer.encode(t, add_special_tokens=False))), (
                lambda ids: tokenizer.decode(ids)
            )
        except TypeError:
            return (lambda t: list(tokenizer.encode(t))), (lambda ids: tokenizer.decode(ids))
    raise TypeError("tokenizer must have encode/decode or be an (encode, decode) pair")


def load_tokenizer(spec: str | None) -> Tokenizer | None:
    """``None`` / ``cl100k``: the library's counter; ``tiktoken:NAME``; ``hf:PATH`` or a bare path:
    a local Hugging Face tokenizer, loaded offline by :func:`retrieval.tokenizers.hf_tokenizer`."""
    if spec in (None, "", "cl100k"):
        return None
    kind, arg = parse_spec(spec if ":" in spec else f"hf:{spec}")
    if kind == "tiktoken":
        return tiktoken_tokenizer(arg)
    if kind != "hf":
        raise TokenizerError(
            f"--tokenizer for ceilings takes cl100k, tiktoken:NAME or a local Hugging Face tokenizer (hf:PATH), got {spec!r}"
        )
    return hf_tokenizer(arg)


# -- output ------------------------------------------------------------------------------


_DIFFICULTY_ORDER = ("easy", "medium", "hard", "needle")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_table(ceilings: Sequence[Ceiling], *, title: str | None = None) -> str:
    """A Markdown table of ceilings, with the upper-bound note."""
    lines = [
        f"# Evidence ceilings: {title}" if title else "# Evidence ceilings",
        "",
        UPPER_BOUND_NOTE,
        "",
    ]
    lines += [
        "| strategy | complete evidence | mean evidence share | questions | rule |",
        "|---|---|---|---|---|",
    ]
    for c in ceilings:
        if c.skipped:
            lines.append(f"| {c.strategy} | - | - | - | skipped: {c.skipped} |")
            continue
        extra = ""
        if "routed_complete_share" in c.detail:
            extra = (
                f"; with perfect routing to its fallback {_pct(c.detail['routed_complete_share'])}"
            )
        unit = f" ({c.unit})" if c.unit in ("records", "sentences") else ""
        lines.append(
            f"| {c.strategy} | {_pct(c.complete_share)} | {_pct(c.mean_share)}{unit} | {c.questions} | {c.rule}{extra} |"
        )
    seen = {d for c in ceilings for d in c.by_difficulty}
    diffs = [d for d in _DIFFICULTY_ORDER if d in seen] + sorted(seen - set(_DIFFICULTY_ORDER))
    if diffs:
        lines += [
            "",
            "Complete-evidence share by difficulty:",
            "",
            "| strategy | " + " | ".join(diffs) + " |",
            "|---|" + "---|" * len(diffs),
        ]
        for c in ceilings:
            if not c.skipped:
                lines.append(
                    f"| {c.strategy} | "
                    + " | ".join(_pct(c.by_difficulty.get(d)) for d in diffs)
                    + " |"
                )
    return "\n".join(lines + _task_length_tables(ceilings)) + "\n"


def _task_length_tables(ceilings: Sequence[Ceiling]) -> list[str]:
    """Per strategy, the complete-evidence share per task (rows) x length (columns), as BABILong's tables lay out accuracy."""
    lines: list[str] = []
    for c in ceilings:
        if c.skipped or not c.by_task_length:
            continue
        lengths = list(dict.fromkeys(n for row in c.by_task_length.values() for n in row))
        lines += ["", f"Complete-evidence share by task x length, {c.strategy}:", "",
                  "| task | " + " | ".join(lengths) + " |", "|---|" + "---|" * len(lengths)]  # fmt: skip
        lines += [
            f"| {t} | " + " | ".join(_pct(row.get(n)) for n in lengths) + " |"
            for t, row in c.by_task_length.items()
        ]
    return lines


def ceilings_json(ceilings: Sequence[Ceiling], *, per_question: bool = True) -> dict[str, Any]:
    """The JSON form: the note and one object per strategy."""
    rows = []
    for c in ceilings:
        d = c.to_dict()
        if not per_question:
            d.pop("per_question")
        rows.append(d)
    return {"note": UPPER_BOUND_NOTE, "ceilings": rows}


# -- report hook -------------------------------------------------------------------------


def _names_evidence(sample: Any) -> bool:
    meta = dict(getattr(sample, "metadata", {}) or {})
    return bool(
        getattr(sample, "evidence_doc_ids", None)
        or meta.get("evidence_doc_ids")
        or meta.get("evidence_spans")
    )


def report_ceilings(
    cfg: Mapping[str, Any], samples: Sequence[Any], summary: list[dict[str, Any]], folder: Path
) -> list[Ceiling]:
    """``longctx report``'s hook: when the run's samples name evidence, add each strategy's ceiling.

    Adds ``ceiling`` (complete-evidence share, in percent like the scores) to each summary
    row whose strategy has a rule, and writes ``ceilings.md`` / ``ceilings.json`` into
    ``folder``. Returns the ceilings (empty when no sample names evidence).
    """
    if not any(_names_evidence(s) for s in samples):
        return []
    names = [
        n
        for n in cfg.get("strategies", [])
        if n in STRATEGIES and STRATEGIES.get(n).ceiling is not None
    ]
    if not names:
        return []
    options = {k: v for k, v in dict(cfg.get("strategy_options") or {}).items() if k in names}
    ceilings = compute_ceilings(samples, names, options)
    by_name = {c.strategy: c for c in ceilings}
    for row in summary:
        c = by_name.get(row["strategy"])
        if c is not None and c.complete_share is not None:
            items = list(row.items())  # the ceiling goes right after the score
            row.clear()
            for key, value in items:
                row[key] = value
                if key == "score":
                    row["ceiling"] = round(100 * c.complete_share, 1)
            row.setdefault("ceiling", round(100 * c.complete_share, 1))
    (folder / "ceilings.md").write_text(format_table(ceilings, title=str(cfg.get("benchmark", ""))))
    (folder / "ceilings.json").write_text(json.dumps(ceilings_json(ceilings), indent=2))
    return ceilings
