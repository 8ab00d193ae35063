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
evidence that can. One rule per strategy, each in the function named after it:

* ``rag`` (:func:`rag_ceiling`): the documents of the chunks the strategy's own
  ``retrieve`` node returns for the question, with the strategy's index (BM25 by
  default, built and cached by the same ``RetrievalSettings.build_index``); every
  retrieved chunk goes into the prompt, so packing drops nothing.
* ``self_route`` (:func:`self_route_ceiling`): its RAG leg, the same rule with its own
  retrieval settings (300 words x 5). The detail ``routed`` adds perfect routing: a
  question whose RAG leg lacks evidence is declined and answered by the full-context leg
  (corpus fits the window) or the fallback strategy, under that strategy's rule.
* ``self_ask`` (:func:`self_ask_ceiling`): the union of the documents its
  ``retrieve_follow_up`` node returns for each follow-up; the follow-up is the question
  itself, or with ``gold_sub_questions`` one gold sub-question per entity the records
  name, at most ``max_iterations`` of them. (The final call sees only the intermediate
  answers; with perfect readers these carry what the chunks held.)
* ``pai`` / ``pai_minus`` (:func:`pai_ceiling`): the judge candidates of PAI's own
  ``plan_judging`` node (every chunk when exhaustive, ``judge_mode`` auto switching at
  ``exhaustive_max_tokens``; else each sub-question's top-k); judges assumed perfect keep
  one chunk per evidence document among the candidates, and PAI's ``pack`` fits them
  into ``sub_answer_context_tokens``. Sub-questions: the question itself (PAI's
  degraded plan), or with ``gold_sub_questions`` the gold ones, at most ``max_items``.
* ``memagent`` (:func:`memagent_ceiling`): whether the minimal rendering of the needed
  records (``entity | field | year | value``, one line each) fits the memory budget
  (``max_new_tokens``, 1,024) in the model's tokens (cl100k unless a tokenizer is given);
  the share is the share of records (in corpus order) that fit. Needs records: synthetic
  corpora only.
* ``full_context`` (:func:`full_context_ceiling`): the documents of the filled prompt
  that survive the strategy's own middle truncation to the window minus the answer
  budget and reserve (a document cut by the truncation counts as reached: upper bound).
* ``structured`` (when registered): reads every document, so all evidence reaches it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from experiments.synth.records import load_records, render_records
from graphs import full_context, pai, rag
from graphs.context import StrategyContext
from graphs.pai.graph import pack, plan_judging
from graphs.registry import STRATEGIES
from graphs.self_ask.graph import retrieve_follow_up
from retrieval import Corpus, tokens
from retrieval.tokenizers import Tokenizer, TokenizerError, hf_tokenizer, parse_spec, tiktoken_tokenizer

#: Printed and stored with every ceiling table.
UPPER_BOUND_NOTE = (
    "A ceiling is an upper bound, not an accuracy: the share of questions whose complete evidence can reach "
    "the strategy's final model call, assuming the model does everything else perfectly."
)
#: Strategies with a ceiling rule, in display order (``structured`` only when registered).
RULE_ORDER = ("rag", "self_route", "self_ask", "pai", "pai_minus", "memagent", "full_context", "structured")


@dataclass(frozen=True)
class Item:
    """One question with its evidence: documents, and (synthetic corpora) records and gold sub-questions."""

    sample_id: str
    corpus: Corpus
    question: Any
    evidence: tuple[str, ...]
    difficulty: str | None = None
    records: tuple | None = None
    sub_questions: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Reach:
    """How much of one question's evidence reaches the final call (units: documents, or records for memagent)."""

    reached: int
    total: int

    @property
    def share(self) -> float:
        return 1.0 if self.total == 0 else self.reached / self.total

    @property
    def complete(self) -> bool:
        return self.reached >= self.total


@dataclass
class Ceiling:
    """A strategy's ceiling over a set of questions.

    Attributes:
        strategy: Registry name.
        config: The effective config (JSON-safe).
        rule: The rule applied, in words.
        unit: What evidence is counted in (``documents`` or ``records``).
        questions: Questions measured.
        complete_share: Share of questions whose complete evidence can reach the final call.
        mean_share: Mean over questions of the share of their evidence that can.
        by_difficulty: ``complete_share`` per difficulty (synthetic corpora).
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
    per_question: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Env:
    """What every rule gets besides its config: where indexes are cached, the tokenizer, options."""

    cache_dir: str | Path | None = None
    encode: Callable[[str], list[int]] = tokens.encode
    decode: Callable[[list[int]], str] = tokens.decode
    gold_sub_questions: bool = False


# -- items -----------------------------------------------------------------------------


def items_from_samples(samples: Iterable[Any]) -> list[Item]:
    """Questions that name their evidence (``evidence_doc_ids`` attribute or metadata), with synth records when known."""
    records_by_path: dict[str, dict] = {}
    out = []
    for s in samples:
        meta = dict(getattr(s, "metadata", {}) or {})
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
        out.append(Item(s.sample_id, s.corpus, s.question, tuple(evidence), difficulty,
                        recs.records if recs else None, recs.sub_questions if recs else None))
    return out


def _reach(evidence: Sequence[str], doc_ids: Iterable[str]) -> Reach:
    wanted = set(evidence)
    return Reach(len(wanted & set(doc_ids)), len(wanted))


def _ctx(cfg: Any, corpus: Corpus, index: Any) -> Runtime[StrategyContext[Any]]:
    """A strategy node's runtime without a model (the retrieval nodes never call it)."""
    context: StrategyContext[Any] = StrategyContext(llm=None, config=cfg, corpus=corpus, index=index)  # type: ignore[arg-type]  # no model: never called
    return Runtime(context=context)


def _index(cfg: Any, corpus: Corpus, env: Env) -> Any:
    return cfg.build_index(corpus, cache_dir=env.cache_dir)


def _queries(item: Item, env: Env, cap: int) -> list[str]:
    """The question itself, or (``gold_sub_questions``) at most ``cap`` gold sub-questions."""
    if env.gold_sub_questions:
        if item.sub_questions is None:
            raise ValueError(f"{item.sample_id}: gold sub-questions need a synthetic corpus's records")
        return list(item.sub_questions[:cap]) or [item.question.text]
    return [item.question.text]


# -- rules, one per strategy ------------------------------------------------------------


def rag_ceiling(cfg: Any, item: Item, env: Env) -> Reach:
    """RAG: evidence documents among the chunks the ``retrieve`` node returns; all of them are packed."""
    index = _index(cfg, item.corpus, env)
    hits = rag.retrieve({"question": item.question}, _ctx(cfg, item.corpus, index))["hits"]
    packed = rag.order_hits(hits, cfg.order)  # the prompt holds every hit: nothing is dropped
    return _reach(item.evidence, (h.chunk.doc_id for h in packed))


def self_route_ceiling(cfg: Any, item: Item, env: Env) -> Reach:
    """Self-Route's RAG leg: :func:`rag_ceiling` with Self-Route's retrieval settings."""
    return rag_ceiling(cfg, item, env)


def self_route_fallback(cfg: Any, item: Item, env: Env) -> tuple[str, Reach | None]:
    """The leg a declined question takes under perfect routing, and its reach (``None``: no rule applies)."""
    fc = cfg.full_context()
    if _full_context_spans(fc, item, env)[1]:  # truncated: the fallback strategy answers
        spec = STRATEGIES.get(cfg.fallback)
        sub = spec.make_config(**dict(cfg.fallback_options))
        rule = RULES.get(cfg.fallback)
        if rule is None:
            return cfg.fallback, None
        try:
            return cfg.fallback, rule(sub, item, env)
        except _Skip:
            return cfg.fallback, None
    return "full_context", full_context_ceiling(fc, item, env)


def self_ask_ceiling(cfg: Any, item: Item, env: Env) -> Reach:
    """Self-Ask: union of the documents ``retrieve_follow_up`` returns for each follow-up (capped at ``max_iterations``)."""
    index = _index(cfg, item.corpus, env)
    runtime = _ctx(cfg, item.corpus, index)
    seen: list = []
    docs: set[str] = set()
    for query in _queries(item, env, max(cfg.max_iterations, 1)):
        out = retrieve_follow_up({"follow_up": query, "hits": seen}, runtime)
        seen = seen + out["hits"]
        docs.update(h.chunk.doc_id for h in out["follow_up_hits"])
    return _reach(item.evidence, docs)


def pai_ceiling(cfg: Any, item: Item, env: Env) -> Reach:
    """PAI / PAI-: perfect judges keep one chunk per evidence document among ``plan_judging``'s candidates, packed per sub-question."""
    mode = pai.choose_mode(cfg, item.corpus.num_tokens)
    index = _index(cfg, item.corpus, env) if mode == "prefilter" else None
    subs = [{"text": q} for q in _queries(item, env, cfg.max_items)]
    plan = plan_judging({"sub_questions": subs}, _ctx(cfg, item.corpus, index))
    wanted = set(item.evidence)
    docs: set[str] = set()
    for candidates in plan["candidates"]:
        kept: dict[str, Any] = {}
        for hit in sorted(candidates, key=lambda h: (h.chunk.doc_index, h.chunk.position)):
            if hit.chunk.doc_id in wanted and hit.chunk.doc_id not in kept:
                kept[hit.chunk.doc_id] = hit.chunk
        packed, _ = pack(list(kept.values()), cfg.sub_answer_context_tokens)
        docs.update(c.doc_id for c in packed)
    return _reach(item.evidence, docs)


class _Skip(Exception):
    """A rule does not apply to this question (e.g. no records)."""


def memagent_ceiling(cfg: Any, item: Item, env: Env) -> Reach:
    """MemAgent: the records (in corpus order) whose minimal rendering fits the ``max_new_tokens`` memory."""
    if item.records is None:
        raise _Skip("needs the records each question reads (synthetic corpora)")
    records = list(item.records)
    budget = cfg.max_new_tokens
    if len(env.encode(render_records(records))) <= budget:
        return Reach(len(records), len(records))
    lo, hi = 0, len(records)  # largest prefix that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(env.encode(render_records(records[:mid]))) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return Reach(lo, len(records))


def _full_context_spans(cfg: Any, item: Item, env: Env) -> tuple[list[tuple[str, int, int]], bool, int, int, int]:
    """Documents' character spans in the prompt the strategy builds (the benchmark's official
    one when the question carries it), whether it is truncated, and the kept head / tail / length.

    Uses the strategy's own functions (``untruncated_prompt``, ``input_budget``,
    ``truncation_cut``), so the ceiling follows every change to the strategy.
    """
    window = cfg.context_window or cfg.default_context_window
    budget = full_context.input_budget(window, item.question, cfg)
    prompt, _ = full_context.untruncated_prompt(item.corpus, item.question, cfg)
    spans, pos = [], 0
    for d in item.corpus.documents:  # documents appear in corpus order, each text verbatim
        body = d.text.strip()
        start = prompt.find(body, pos) if body else -1
        if start < 0:
            continue
        spans.append((d.doc_id, start, start + len(body)))
        pos = start + len(body)
    cut = full_context.truncation_cut(prompt, budget, env.encode, env.decode)
    if cut is None:
        return spans, False, len(prompt), 0, len(prompt)
    return spans, True, cut[0], cut[1], len(prompt)


def full_context_ceiling(cfg: Any, item: Item, env: Env) -> Reach:
    """Full context: evidence documents with any text inside the middle-truncated window."""
    spans, truncated, head, tail, length = _full_context_spans(cfg, item, env)
    if not truncated:
        return _reach(item.evidence, (d for d, _, _ in spans))
    kept = (d for d, s, e in spans if s < head or e > length - tail)
    return _reach(item.evidence, kept)


def structured_ceiling(cfg: Any, item: Item, env: Env) -> Reach:
    """Structured extraction: every document is read, so all evidence reaches it."""
    return Reach(len(set(item.evidence)), len(set(item.evidence)))


#: strategy -> its ceiling rule
RULES: dict[str, Callable[[Any, Item, Env], Reach]] = {
    "rag": rag_ceiling,
    "self_route": self_route_ceiling,
    "self_ask": self_ask_ceiling,
    "pai": pai_ceiling,
    "pai_minus": pai_ceiling,
    "memagent": memagent_ceiling,
    "full_context": full_context_ceiling,
    "structured": structured_ceiling,
}


def describe_rule(name: str, cfg: Any, env: Env, corpus_tokens: int | None = None) -> str:
    """The rule applied to ``name`` under ``cfg``, in one line."""
    gold = env.gold_sub_questions
    if name in ("rag", "self_route"):
        leg = "RAG leg: " if name == "self_route" else ""
        return f"{leg}evidence docs in the top-{cfg.top_k} {cfg.retriever} chunks ({cfg.chunk_size} {cfg.chunk_unit}) for the question"
    if name == "self_ask":
        q = f"<= {cfg.max_iterations} gold sub-questions" if gold else "the question"
        return f"evidence docs in the top-{cfg.top_k} {cfg.retriever} chunks ({cfg.chunk_size} {cfg.chunk_unit}) for {q}"
    if name in ("pai", "pai_minus"):
        mode = pai.choose_mode(cfg, corpus_tokens) if corpus_tokens is not None else cfg.judge_mode
        what = "every chunk judged" if mode == "exhaustive" else f"top-{cfg.top_k} {cfg.retriever} candidates"
        q = f"<= {cfg.max_items} gold sub-questions" if gold else "the question"
        return f"{mode}: {what} for {q}; perfect judges; <= {cfg.sub_answer_context_tokens} tokens packed per sub-question"
    if name == "memagent":
        return f"needed records (entity|field|year|value) fit the {cfg.max_new_tokens}-token memory"
    if name == "full_context":
        window = cfg.context_window or cfg.default_context_window
        return f"evidence docs inside the middle-truncated {window}-token window (- {cfg.max_new_tokens} answer, - {cfg.prompt_reserve_tokens})"
    if name == "structured":
        return "reads every document"
    return ""


def _json_config(cfg: Any) -> dict[str, Any]:
    data = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type) else {}
    return json.loads(json.dumps(data, default=lambda o: dict(o) if isinstance(o, Mapping) else str(o)))


def default_strategies() -> list[str]:
    """Every registered strategy that has a ceiling rule."""
    names = set(STRATEGIES.names())
    return [n for n in RULE_ORDER if n in names]


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
        strategies: Registry names; ``structured`` is skipped unless registered.
        options: Config overrides per strategy, as ``longctx run --option`` (``{"rag": {"top_k": 20}}``).
        gold_sub_questions: Self-Ask's follow-ups and PAI's sub-questions are the gold ones
            (one per entity the records name) instead of the question itself.
        tokenizer: MemAgent's and full context's tokenizer: ``None`` (cl100k), an object with
            ``encode`` / ``decode`` (a Hugging Face tokenizer), or an ``(encode, decode)`` pair.
        cache_dir: Index cache root (default ``$LONGCTX_CACHE_DIR`` or ``~/.cache/longctx``).

    Raises:
        ValueError: no sample names its evidence; an unknown strategy or option.
    """
    items = items_from_samples(samples)
    if not items:
        raise ValueError("No sample names its evidence (evidence_doc_ids): ceilings need evidence, e.g. a 'longctx synth' folder")
    env = Env(cache_dir=cache_dir, gold_sub_questions=gold_sub_questions)
    if tokenizer is not None:
        env.encode, env.decode = _codec(tokenizer)
    options = dict(options or {})
    names = list(strategies) if strategies else default_strategies()
    unknown = [k for k in options if k not in names]
    if unknown:
        raise ValueError(f"--option for strategies not measured: {', '.join(unknown)}")
    out = []
    for name in names:
        if name == "structured" and name not in STRATEGIES.names():
            out.append(Ceiling(name, {}, describe_rule(name, None, env), skipped="not registered in this version"))
            continue
        spec = STRATEGIES.get(name)
        cfg = spec.make_config(**dict(options.get(name, {})))
        if name not in RULES:
            out.append(Ceiling(name, _json_config(cfg), "", skipped="no ceiling rule for this strategy"))
            continue
        out.append(_one(name, cfg, items, env))
    return out


def _one(name: str, cfg: Any, items: list[Item], env: Env) -> Ceiling:
    rule = RULES[name]
    ceiling = Ceiling(name, _json_config(cfg), describe_rule(name, cfg, env, items[0].corpus.num_tokens),
                      unit="records" if name == "memagent" else "documents")
    reaches: list[Reach] = []
    try:
        for item in items:
            reach = rule(cfg, item, env)
            reaches.append(reach)
            ceiling.per_question.append({"sample_id": item.sample_id, "reached": reach.reached, "total": reach.total})
    except _Skip as why:
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
    if name in ("pai", "pai_minus"):
        ceiling.detail["judge_mode"] = sorted({pai.choose_mode(cfg, i.corpus.num_tokens) for i in items})
    if name == "self_route":
        routed: list[bool] = []
        legs: dict[str, int] = {}
        for item, r in zip(items, reaches):
            if r.complete:
                routed.append(True)
                continue
            leg, fallback = self_route_fallback(cfg, item, env)
            legs[leg] = legs.get(leg, 0) + 1
            routed.append(bool(fallback and fallback.complete))
        ceiling.detail["routed_complete_share"] = sum(routed) / len(routed)
        ceiling.detail["declined_to"] = legs
    return ceiling


def _codec(tokenizer: Any) -> tuple[Callable[[str], list[int]], Callable[[list[int]], str]]:
    if isinstance(tokenizer, tuple) and len(tokenizer) == 2:
        return tokenizer
    if isinstance(tokenizer, Tokenizer):
        return tokenizer.encode, tokenizer.decode
    if hasattr(tokenizer, "encode") and hasattr(tokenizer, "decode"):
        try:
            tokenizer.encode("x", add_special_tokens=False)
            return (lambda t: list(tokenizer.encode(t, add_special_tokens=False))), (lambda ids: tokenizer.decode(ids))
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
        raise TokenizerError(f"--tokenizer for ceilings takes cl100k, tiktoken:NAME or a local Hugging Face tokenizer (hf:PATH), got {spec!r}")
    return hf_tokenizer(arg)


# -- output ------------------------------------------------------------------------------


_DIFFICULTY_ORDER = ("easy", "medium", "hard", "needle")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_table(ceilings: Sequence[Ceiling], *, title: str | None = None) -> str:
    """A Markdown table of ceilings, with the upper-bound note."""
    lines = [f"# Evidence ceilings: {title}" if title else "# Evidence ceilings", "", UPPER_BOUND_NOTE, ""]
    lines += ["| strategy | complete evidence | mean evidence share | questions | rule |", "|---|---|---|---|---|"]
    for c in ceilings:
        if c.skipped:
            lines.append(f"| {c.strategy} | - | - | - | skipped: {c.skipped} |")
            continue
        extra = ""
        if "routed_complete_share" in c.detail:
            extra = f"; with perfect routing to its fallback {_pct(c.detail['routed_complete_share'])}"
        unit = " (records)" if c.unit == "records" else ""
        lines.append(f"| {c.strategy} | {_pct(c.complete_share)} | {_pct(c.mean_share)}{unit} | {c.questions} | {c.rule}{extra} |")
    seen = {d for c in ceilings for d in c.by_difficulty}
    diffs = [d for d in _DIFFICULTY_ORDER if d in seen] + sorted(seen - set(_DIFFICULTY_ORDER))
    if diffs:
        lines += ["", "Complete-evidence share by difficulty:", "",
                  "| strategy | " + " | ".join(diffs) + " |", "|---|" + "---|" * len(diffs)]
        for c in ceilings:
            if not c.skipped:
                lines.append(f"| {c.strategy} | " + " | ".join(_pct(c.by_difficulty.get(d)) for d in diffs) + " |")
    return "\n".join(lines) + "\n"


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


def report_ceilings(cfg: Mapping[str, Any], samples: Sequence[Any], summary: list[dict[str, Any]], folder: Path) -> list[Ceiling]:
    """``longctx report``'s hook: when the run's samples name evidence, add each strategy's ceiling.

    Adds ``ceiling`` (complete-evidence share, in percent like the scores) to each summary
    row whose strategy has a rule, and writes ``ceilings.md`` / ``ceilings.json`` into
    ``folder``. Returns the ceilings (empty when no sample names evidence).
    """
    if not any((getattr(s, "evidence_doc_ids", None) or dict(getattr(s, "metadata", {}) or {}).get("evidence_doc_ids")) for s in samples):
        return []
    names = [n for n in cfg.get("strategies", []) if n in RULES and n in STRATEGIES.names()]
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
