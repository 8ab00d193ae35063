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

Per strategy and its effective config, :func:`compute_ceilings` reports the share of questions whose
*complete* evidence can reach the final call, and the mean share of evidence that can. Each
strategy's rule is an :class:`longctx.graphs.plugin.ceiling.EvidenceCeiling` on its registry entry
(``STRATEGIES.get(name).ceiling``), defined in its own package (``graphs/<name>/ceiling.py``) with
the strategy's own retrieval, packing and truncation code; this module applies the registered rules,
in their ``rank`` order, to the questions :mod:`longctx.experiments.ceilings.items` gathers, and
:mod:`longctx.experiments.ceilings.tables` prints them. A strategy registered without a rule
(``ceiling=None``) is reported as skipped. See ``docs/ceilings.md`` for each built-in rule.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.ceilings.items import NO_EVIDENCE, items_from_samples, names_evidence
from longctx.experiments.ceilings.tables import (
    UPPER_BOUND_NOTE,
    Ceiling,
    ceilings_json,
    format_table,
)
from longctx.graphs.plugin.ceiling import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Reach,
    SkipCeiling,
)
from longctx.graphs.plugin.registry import STRATEGIES
from longctx.retrieval.tokenizers import (
    Tokenizer,
    TokenizerError,
    hf_tokenizer,
    parse_spec,
    tiktoken_tokenizer,
)

#: One question with its evidence, and what every rule gets besides its config
#: (``longctx.graphs.plugin.ceiling``).
Item = CeilingItem
Env = CeilingEnv


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
    """Every registered strategy that has a ceiling rule, in the rules' ``rank`` order
    (ties by name)."""
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
    """Evidence ceilings of ``strategies`` (default: every registered one with a rule) over
    ``samples``.

    Args:
        samples: Synthetic samples (``longctx.experiments.synth.load_samples``) or benchmark samples
            whose metadata names ``evidence_doc_ids``; samples without evidence are left out.
        strategies: Registry names; one registered without a rule is reported as skipped.
        options: Config overrides per strategy, as ``longctx run --option``
            (``{"rag": {"top_k": 20}}``).
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
            or (
                "No sample names its evidence (evidence_doc_ids): ceilings need evidence, e.g. a "
                "'longctx synth' folder"
            )
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
    """``complete_share`` per ``(task, length)`` cell, tasks and lengths in first-seen order
    (the loader's)."""
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
    a local Hugging Face tokenizer, loaded offline by
    :func:`longctx.retrieval.tokenizers.hf_tokenizer`."""
    if spec in (None, "", "cl100k"):
        return None
    kind, arg = parse_spec(spec if ":" in spec else f"hf:{spec}")
    if kind == "tiktoken":
        return tiktoken_tokenizer(arg)
    if kind != "hf":
        raise TokenizerError(
            "--tokenizer for ceilings takes cl100k, tiktoken:NAME or a local Hugging Face "
            f"tokenizer (hf:PATH), got {spec!r}"
        )
    return hf_tokenizer(arg)


def report_ceilings(
    cfg: Mapping[str, Any], samples: Sequence[Any], summary: list[dict[str, Any]], folder: Path
) -> list[Ceiling]:
    """``longctx report``'s hook: when the run's samples name evidence, add each strategy's ceiling.

    Adds ``ceiling`` (complete-evidence share, in percent like the scores) to each summary
    row whose strategy has a rule, and writes ``ceilings.md`` / ``ceilings.json`` into
    ``folder``. Returns the ceilings (empty when no sample names evidence).
    """
    if not any(names_evidence(s) for s in samples):
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


#: What ``longctx.experiments.ceilings.measure`` offers: the computation here, the questions
#: and tables it re-exports.
__all__ = [
    "NO_EVIDENCE",
    "UPPER_BOUND_NOTE",
    "Ceiling",
    "Env",
    "Item",
    "ceilings_json",
    "compute_ceilings",
    "default_strategies",
    "format_table",
    "items_from_samples",
    "load_tokenizer",
    "report_ceilings",
]
