"""PAI, property-based agentic inference (seed 002, Fig. 2, App. A.2), and its PAI- ablation.

1. Property extraction from the question alone, by function calling (Fig. 4 top):
   ``{metric, subject}`` items, each turned into "What was the <metric> of the <subject>?".
   PAI- asks for the sub-questions directly instead.
2. Property-based retrieval: the corpus in 1,024-token chunks; one boolean ``keep_context``
   call (Fig. 4 bottom) per (sub-question, chunk) pair, fanned out with one ``Send`` per
   chunk (its pairs) under the run's ``max_concurrency``, at most ``concurrency`` calls in
   flight. Exhaustive (the paper) up to ``exhaustive_max_tokens`` of
   corpus, above it only each sub-question's retriever top-K (``top_k``) is judged. The
   kept chunks, in document order, are packed into one sub-answer call per sub-question.
3. Summarization: question + sub-answers -> the conclusion, in the benchmark's format.

The output is the paper's CoT (Fig. 8): properties, sub-answers, then "Conclusion: ...".
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Sequence
from typing import Annotated, Any, Literal, TypedDict

from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from graphs import costs
from graphs.budget import BudgetReached
from graphs.context import StrategyContext
from graphs.events import report_progress
from graphs.llm import complete
from graphs.pai import prompts as P
from graphs.pai.calls import CallOutcome, KeepContextArgs, acall_structured, call_structured
from graphs.pai.ceiling import JudgedChunksCeiling
from graphs.pai.config import PaiConfig
from graphs.pai.decompose import extract_properties, generate_sub_questions
from graphs.pai.presentation import MINUS_PRESENTATION, PRESENTATION
from graphs.prompt_sharing import PromptSharing
from graphs.prompts import format_chunks
from graphs.registry import STRATEGIES, SingleRun
from graphs.retrieval_service import RetrievalService
from graphs.run import gather_or_cancel
from retrieval import Chunk, Hit, chunk_corpus
from retrieval.contract import Question


class PaiState(TypedDict, total=False):
    """What evolves during one PAI answer (keys written by ``Send`` branches have reducers)."""

    question: Question
    tool_mode: str
    properties: list[dict[str, str]]
    sub_questions: list[dict[str, Any]]
    mode: str
    candidates: list[list[Hit]]
    judgments: Annotated[list[dict[str, Any]], operator.add]
    kept: list[list[Chunk]]
    sub_answers: Annotated[list[dict[str, Any]], operator.add]
    hits: list[Hit]
    raw: str
    answer: str
    steps: Annotated[list[dict], operator.add]


def choose_mode(cfg: PaiConfig, corpus_tokens: int) -> Literal["exhaustive", "prefilter"]:
    """The judge mode that runs: the configured one, or by corpus size under ``"auto"``."""
    if cfg.judge_mode != "auto":
        return cfg.judge_mode
    return "exhaustive" if corpus_tokens <= cfg.exhaustive_max_tokens else "prefilter"


def all_chunks(ctx: StrategyContext[PaiConfig]) -> list[Chunk]:
    """The index's chunks (built by ``answer()`` with the config's chunking), else chunk now."""
    if ctx.index is not None:
        return list(ctx.index.chunks)
    return chunk_corpus(ctx.corpus, ctx.config.chunking())


def plan_judging(state: PaiState, runtime: Runtime[StrategyContext[PaiConfig]]) -> dict:
    """Candidate chunks per sub-question: all of them (exhaustive) or the retriever's top-K."""
    ctx, cfg = runtime.context, runtime.context.config
    mode = choose_mode(cfg, ctx.corpus.num_tokens)
    retriever = None
    if mode == "exhaustive":
        everything = [Hit(c, 1.0, i) for i, c in enumerate(all_chunks(ctx))]
        candidates = [everything for _ in state["sub_questions"]]
    elif ctx.index is None:
        raise ValueError("PAI's prefilter needs a retrieval index: run it through agents.answer(), which builds one.")
    else:
        candidates = [RetrievalService.of(ctx).retrieve(ctx.index, sq["text"]) for sq in state["sub_questions"]]
        retriever = ctx.index.retriever.name
    step = {
        "node": "plan_judging",
        "mode": mode,
        "corpus_tokens": ctx.corpus.num_tokens,
        "exhaustive_max_tokens": cfg.exhaustive_max_tokens,
        "retriever": retriever,
        "top_k": cfg.top_k if mode == "prefilter" else None,
        "pairs": sum(len(c) for c in candidates),
    }
    report_progress("judge", done=0, total=sum(len(c) for c in candidates))
    return {"mode": mode, "candidates": candidates, "steps": [step]}


def route_judges(state: PaiState) -> list[Send] | Literal["gather"]:
    """One ``judge`` task per candidate chunk, carrying its (sub-question, chunk) pairs.

    A task per chunk rather than per pair: LangGraph's own cost per task (~0.3 ms of CPU)
    would otherwise rival the client's per call in a wide fan-out (``bench_pai``).
    """
    by_chunk: dict[int, dict[str, Any]] = {}
    for i, sq in enumerate(state["sub_questions"]):
        for hit in state["candidates"][i]:
            task = by_chunk.setdefault(hit.chunk.chunk_id, {"hit": hit, "pairs": [], "tool_mode": state["tool_mode"]})
            task["pairs"].append({"sq": i, "sub_question": sq["text"]})
    return [Send("judge", task) for task in by_chunk.values()] or "gather"


def judge(task: dict[str, Any], runtime: Runtime[StrategyContext[PaiConfig]]) -> dict:
    """One ``keep_context`` verdict per pair of the chunk; a reply still malformed after the retries is recorded.

    A pair whose call the budget refuses is marked ``stopped`` instead of raising here: the other judges'
    calls already sent then finish and are counted, and :func:`gather` stops the run once all are in.
    """
    ctx = runtime.context

    def one(pair: dict[str, Any]) -> dict:
        try:
            out = call_structured(ctx.llm, _judge_prompt(pair, task, ctx.config), **_judge_call(task, ctx.config))
        except BudgetReached as exc:
            return _stopped_verdict(pair, task, exc)
        report_progress("judge", advance=1)
        return _verdict(pair, task, ctx.config, out)

    return {"judgments": [one(pair) for pair in task["pairs"]]}


async def ajudge(task: dict[str, Any], runtime: Runtime[StrategyContext[PaiConfig]]) -> dict:
    """:func:`judge` through the model's async interface (what ``ainvoke`` / ``astream`` of the graph run):
    the chunk's pairs as coroutines, each holding the run's call gate (``concurrency`` calls in
    flight), with the same retries and the same budget stop. Any other failure cancels the chunk's
    other pairs and waits for them before it propagates (none is left running after the answer returns)."""
    ctx = runtime.context
    gate = ctx.call_gate(ctx.config.concurrency)

    async def one(pair: dict[str, Any]) -> dict:
        try:
            async with gate:
                out = await acall_structured(ctx.llm, _judge_prompt(pair, task, ctx.config), **_judge_call(task, ctx.config))
        except BudgetReached as exc:
            return _stopped_verdict(pair, task, exc)
        report_progress("judge", advance=1)
        return _verdict(pair, task, ctx.config, out)

    return {"judgments": await gather_or_cancel([one(pair) for pair in task["pairs"]])}


def _stopped_verdict(pair: dict[str, Any], task: dict[str, Any], exc: BudgetReached) -> dict:
    """The verdict of a pair whose call the budget refused (no request was sent for it)."""
    return {"sq": pair["sq"], "chunk_id": task["hit"].chunk.chunk_id, "keep": False, "attempts": 0, "stopped": str(exc)}


def stop_if_refused(records: Sequence[dict[str, Any]]) -> None:
    """Raise the budget's stop recorded by a fan-out's tasks, once all of them have finished.

    Raises:
        BudgetReached: Some task's call was refused by the budget.
    """
    for record in records:
        if "stopped" in record:
            raise BudgetReached(record["stopped"])


#: Judge templates by ``(PaiConfig.judge_order, tool mode)``.
JUDGE_TEMPLATES = {
    ("query_first", "tools"): P.JUDGE_PROMPT, ("query_first", "json"): P.JUDGE_JSON_PROMPT,
    ("chunk_first", "tools"): P.JUDGE_CHUNK_FIRST_PROMPT, ("chunk_first", "json"): P.JUDGE_CHUNK_FIRST_JSON_PROMPT,
}  # fmt: skip


def _judge_prompt(pair: dict[str, Any], task: dict[str, Any], cfg: PaiConfig) -> str:
    chunk = task["hit"].chunk
    template = JUDGE_TEMPLATES[cfg.judge_order, "tools" if task["tool_mode"] == "tools" else "json"]
    return template.format(sub_question=pair["sub_question"], title=chunk.title, chunk=chunk.text.strip())


def _judge_call(task: dict[str, Any], cfg: PaiConfig) -> dict[str, Any]:
    return {
        "item_model": KeepContextArgs, "mode": task["tool_mode"], "function": P.KEEP_CONTEXT_FUNCTION, "tool_choice": "Query",
        "retries": cfg.judge_retries, "max_tokens": cfg.judge_max_tokens, "temperature": cfg.temperature,
    }  # fmt: skip


def _verdict(pair: dict[str, Any], task: dict[str, Any], cfg: PaiConfig, out: CallOutcome) -> dict:
    keep = bool(out.items[0]["keep_context"]) if out.ok else cfg.on_malformed_judgment == "keep"
    verdict = {"sq": pair["sq"], "chunk_id": task["hit"].chunk.chunk_id, "keep": keep, "attempts": out.attempts}
    if not out.ok:
        verdict["error"] = out.errors[-1]
    return verdict


def gather(state: PaiState) -> dict:
    """Kept chunks per sub-question in document order (the evidence), and the verdict counts."""
    stop_if_refused(state.get("judgments", []))
    verdicts: dict[tuple[int, int], dict] = {(v["sq"], v["chunk_id"]): v for v in state.get("judgments", [])}
    hits: list[Hit] = []
    per_sq, malformed, kept_chunks = [], [], []
    for i, sq in enumerate(state["sub_questions"]):
        judged = [(h, verdicts[(i, h.chunk.chunk_id)]) for h in state["candidates"][i]]
        kept = sorted((h for h, v in judged if v["keep"]), key=lambda h: (h.chunk.doc_index, h.chunk.position))
        hits.extend(kept)
        kept_chunks.append([h.chunk for h in kept])
        bad = [{"sub_question": i, "chunk_id": h.chunk.chunk_id, "error": v["error"]} for h, v in judged if "error" in v]
        malformed.extend(bad)
        per_sq.append({"sub_question": sq["text"], "judged": len(judged), "kept": len(kept), "malformed": len(bad),
                       "kept_chunk_ids": [h.chunk.chunk_id for h in kept]})
    step = {"node": "judge", "mode": state["mode"], "calls": sum(v["attempts"] for v in verdicts.values()),
            "per_sub_question": per_sq, "malformed": malformed}
    return {"hits": hits, "kept": kept_chunks, "steps": [step]}


def route_sub_answers(state: PaiState) -> list[Send]:
    """One ``sub_answer`` task per sub-question, with its kept chunks (document order)."""
    return [Send("sub_answer", {"sq": i, "sub_question": sq, "chunks": state["kept"][i]}) for i, sq in enumerate(state["sub_questions"])]


def pack(chunks: list[Chunk], budget: int) -> tuple[list[Chunk], int]:
    """The leading chunks (document order) that fit ``budget`` tokens, and how many did not."""
    packed: list[Chunk] = []
    used = 0
    for chunk in chunks:
        if used + chunk.num_tokens > budget and packed:
            break
        packed.append(chunk)
        used += chunk.num_tokens
    return packed, len(chunks) - len(packed)


def sub_answer(task: dict[str, Any], runtime: Runtime[StrategyContext[PaiConfig]]) -> dict:
    """The sub-answer from the packed kept chunks; "not found" without a call when none was kept
    (a call the budget refuses is marked ``stopped``, as a judge's, and :func:`summarize` stops the run)."""
    ctx, cfg, sq = runtime.context, runtime.context.config, task["sub_question"]
    has_property = sq.get("metric") is not None
    if not task["chunks"]:
        template = P.NOT_FOUND_PROPERTY if has_property else P.NOT_FOUND_SUB_QUESTION
        text = template.format(metric=sq.get("metric"), subject=sq.get("subject"), sub_question=sq["text"])
        return {"sub_answers": [{"sq": task["sq"], "text": text, "packed": 0, "over_budget": 0, "called": False}]}
    packed, over = pack(task["chunks"], cfg.sub_answer_context_tokens)
    form = P.PROPERTY_ANSWER_FORM.format(**sq) if has_property else P.SUB_QUESTION_ANSWER_FORM
    prompt = P.SUB_ANSWER_PROMPT.format(context=format_chunks(packed), sub_question=sq["text"], form=form.strip())
    try:
        text = complete(ctx.llm, prompt, max_tokens=cfg.sub_answer_max_tokens, temperature=cfg.temperature).strip()
    except BudgetReached as exc:
        return {"sub_answers": [{"sq": task["sq"], "text": "", "packed": len(packed), "over_budget": over, "called": False, "stopped": str(exc)}]}
    return {"sub_answers": [{"sq": task["sq"], "text": text, "packed": len(packed), "over_budget": over, "called": True}]}


def summarize(state: PaiState, runtime: Runtime[StrategyContext[PaiConfig]]) -> dict:
    """Question + sub-answers -> conclusion (benchmark format), then the CoT output."""
    ctx, cfg, question = runtime.context, runtime.context.config, state["question"]
    stop_if_refused(state.get("sub_answers", []))
    answers = sorted(state.get("sub_answers", []), key=lambda a: a["sq"])
    findings = "\n".join(f"- {a['text']}" for a in answers)
    prompt = P.SUMMARY_PROMPT.format(question=question.render(), findings=findings, instruction=question.instruction or P.DEFAULT_SUMMARY_INSTRUCTION)
    raw = complete(ctx.llm, prompt, max_tokens=question.answer_budget(cfg.summary_max_tokens), temperature=question.answer_temperature(cfg.temperature))
    conclusion = strip_conclusion_label(raw)
    output = render_cot(state.get("properties") or [], state["sub_questions"], [a["text"] for a in answers], conclusion)
    steps = [
        {
            "node": "sub_answer",
            "sub_answers": [{"sub_question": state["sub_questions"][a["sq"]]["text"], **{k: v for k, v in a.items() if k != "sq"}} for a in answers],
        },
        {"node": "summarize", "conclusion": conclusion},
    ]
    return {"raw": raw, "answer": output if cfg.output == "cot" else conclusion, "steps": steps}


def strip_conclusion_label(text: str) -> str:
    """The reply without a leading "Conclusion:" (the CoT adds its own)."""
    text = text.strip()
    return text[len("Conclusion:") :].strip() if text.lower().startswith("conclusion:") else text


def render_cot(properties: list[dict], sub_questions: list[dict], sub_answers: list[str], conclusion: str) -> str:
    """The paper's output (Fig. 8): properties (or PAI- sub-questions), sub-answers, conclusion."""
    if properties:
        items = "\n".join(repr({"metric": p["metric"], "subject": p["subject"]}) for p in properties)
        template = P.COT_TEMPLATE
    else:
        items = "\n".join(sq["text"] for sq in sub_questions)
        template = P.COT_TEMPLATE_MINUS
    return template.format(properties=items, sub_answers="\n".join(sub_answers), conclusion=conclusion)


def _graph(name: str, decompose) -> Any:
    """The PAI wiring with ``decompose`` (properties or direct sub-questions) as the first node."""
    graph = StateGraph(PaiState, context_schema=StrategyContext)
    graph.add_node("decompose", decompose)
    graph.add_node("plan_judging", plan_judging)
    graph.add_node("judge", RunnableCallable(judge, ajudge, name="judge"))  # sync and async twins
    graph.add_node("gather", gather)
    graph.add_node("sub_answer", sub_answer)  # type: ignore[arg-type, call-overload]  # LangGraph types node inputs as state schemas; Send payloads are plain dicts
    graph.add_node("summarize", summarize)
    graph.add_edge(START, "decompose")
    graph.add_edge("decompose", "plan_judging")
    graph.add_conditional_edges("plan_judging", route_judges, ["judge", "gather"])
    graph.add_edge("judge", "gather")
    graph.add_conditional_edges("gather", route_sub_answers, ["sub_answer"])
    graph.add_edge("sub_answer", "summarize")
    graph.add_edge("summarize", END)
    return graph.compile(name=name)


#: Typical properties of a PAI question (its judge calls multiply by this; expected cost only).
TYPICAL_PROPERTIES = 2


def pai_costs(cfg: Any, shape: costs.CorpusShape, questions: Sequence[Question], llm: Any = None, window: int | None = None, *,
              strategy: str = "pai") -> costs.Costs:  # fmt: skip
    """Properties, then N_p x C judge calls (exhaustive) or N_p x min(K, C) (prefilter), N_p sub-answers, 1 summary.

    Typically :data:`TYPICAL_PROPERTIES` properties (at most ``max_items``), each judged over its chunks
    once, with a sub-answer reading half its context budget; one decomposition and one summary.
    """
    t = shape.tokens
    chunk = costs.tokens_of(cfg.chunk_size, cfg.chunk_unit)
    c = max(1, sum(math.ceil(n / chunk) for n in shape.token_counts))  # chunks are cut per document
    mode = choose_mode(cfg, t)
    judged = c if mode == "exhaustive" else min(cfg.top_k, c)
    shortest, longest = costs.titles(shape, llm)
    decompose = P.PROPERTY_PROMPT if strategy == "pai" else P.SUB_QUESTION_PROMPT
    judge = [costs.prompt_tokens(strategy, f"judge:{i}:{title}", lambda tpl=tpl, title=title: tpl.format(sub_question="", title=title, chunk=""), llm)  # type: ignore[misc]
             for title in (shortest, longest) for i, tpl in enumerate(JUDGE_TEMPLATES.values())]  # fmt: skip
    answer = costs.prompt_tokens(strategy, "sub_answer", lambda: P.SUB_ANSWER_PROMPT.format(context="", sub_question="", form=P.PROPERTY_ANSWER_FORM), llm)
    own = []  # per question: its decomposition's and its summary's text (no "how", no findings)
    for x in questions or [costs.PLACEHOLDER_QUESTION]:
        instruction = x.instruction or P.DEFAULT_SUMMARY_INSTRUCTION
        own.append(costs.prompt_tokens(strategy, "decompose", lambda x=x: decompose.format(question=x.render(), how=""), llm, x)  # type: ignore[misc]
                   + costs.prompt_tokens(strategy, "summary", lambda x=x, i=instruction: P.SUMMARY_PROMPT.format(  # type: ignore[misc]
                       question=x.render(), findings="", instruction=i), llm, x))  # fmt: skip
    seam = costs.SEAM_TOKENS
    judged_text = t if mode == "exhaustive" else min(t, judged * chunk)
    # at least (counted from the real templates, every model-written part empty): the decomposition, one property judged
    # over its chunks, the summary; no sub-answer (none is called when no chunk is kept)
    calls = 1 + judged + 1
    prompt = max(0, min(own) - 2 * seam + judged * (min(judge[:2]) - 3 * seam) + judged_text)
    # at most: decomposition retried, max_items properties, every judge retried, sub-answers, summary; each model-written
    # part at its reply budget (a sub-question at most the decomposition's), the "how" and a retry note an allowance
    n_max = cfg.max_items
    written = cfg.extract_max_tokens + costs.TEMPLATE_TOKENS
    judge_tokens = min(t, judged * chunk) + judged * (max(judge) + written + 3 * seam)
    sub_prompt = min(t, cfg.sub_answer_context_tokens) + answer + written + n_max * costs.chunk_headers(1, longest, llm)
    max_calls = (1 + cfg.retries) + n_max * judged * (1 + cfg.judge_retries) + n_max + 1
    max_prompt = ((1 + cfg.retries) * (max(own) + written) + n_max * (1 + cfg.judge_retries) * judge_tokens + n_max * sub_prompt
                  + n_max * cfg.sub_answer_max_tokens)  # fmt: skip
    completion = cfg.extract_max_tokens + judged * cfg.judge_max_tokens + cfg.summary_max_tokens
    formula = f"N_p x {judged:,} judge calls ({mode}: {'C = T/' + str(chunk) if mode == 'exhaustive' else 'min(K, C)'}), N_p 1-{n_max}, + N_p sub-answers + 2"
    bounds = costs.per_question_plan(strategy, questions, calls, max_calls, prompt, max_prompt, completion, formula, judged_chunks=judged, mode=mode)
    p = max(1, min(n_max, TYPICAL_PROPERTIES))
    fixed = max(own) / 2 + costs.ANSWER_TOKENS  # a question's decomposition or summary, with a short "how" or findings
    judge_typical = min(t, judged * chunk) + judged * (max(judge[:2]) + 16)
    typical = costs.Calls(2 + p * (judged + 1), 2 * fixed + p * (judge_typical + answer + min(t, cfg.sub_answer_context_tokens) / 2),
                          2 * costs.ANSWER_TOKENS + p * (judged * 8 + costs.ANSWER_TOKENS))  # fmt: skip
    return costs.Costs(bounds, costs.ExpectedCost(typical))


def pai_minus_costs(cfg: Any, shape: costs.CorpusShape, questions: Sequence[Question], llm: Any = None, window: int | None = None) -> costs.Costs:
    """PAI's costs (sub-questions generated directly instead of properties: the same counts)."""
    return pai_costs(cfg, shape, questions, llm, window, strategy="pai_minus")


#: PAI's ceiling rule (PAI- shares it, one row later).
PAI_CEILING = JudgedChunksCeiling(rank=40, choose_mode=choose_mode, plan_judging=plan_judging, pack=pack)


def chunk_first_share(cfg: PaiConfig) -> float:
    """Every question's judge calls start with a chunk when ``judge_order="chunk_first"``; none otherwise."""
    return 1.0 if cfg.judge_order == "chunk_first" else 0.0


#: With ``judge_order="chunk_first"`` each judge call starts with its chunk, which every sub-question and question re-reads.
JUDGE_SHARING = PromptSharing("each chunk, in its judge calls (judge_order='chunk_first'; the paper's order puts the sub-question first)",
                              share=chunk_first_share, options={"judge_order": "chunk_first"})  # fmt: skip


@STRATEGIES.register(
    "pai",
    costs=costs.StrategyCosts(pai_costs),
    ceiling=PAI_CEILING,
    config_cls=PaiConfig,
    presets={"paper": PaiConfig(judge_mode="exhaustive")},
    prompts_version=P.PROMPTS_VERSION,
    prompt_sharing=JUDGE_SHARING,
    uses_index=True,
    run_mode=SingleRun(async_fan_out=True),
    presentation=PRESENTATION,
    description="Property-based agentic inference: properties -> keep_context per (sub-question, 1,024-token chunk) -> sub-answers -> conclusion.",
)
def build_graph(config: PaiConfig | None = None):
    """START -> decompose (properties) -> plan_judging -> judge x chunks -> gather -> sub_answer x N -> summarize -> END."""
    cfg = config or PaiConfig()
    return _graph("pai", extract_properties).with_config(max_concurrency=cfg.concurrency)


@STRATEGIES.register(
    "pai_minus",
    costs=costs.StrategyCosts(pai_minus_costs),
    ceiling=dataclasses.replace(PAI_CEILING, rank=50),
    config_cls=PaiConfig,
    presets={"paper": PaiConfig(judge_mode="exhaustive")},
    prompts_version=P.PROMPTS_VERSION,
    prompt_sharing=JUDGE_SHARING,
    uses_index=True,
    run_mode=SingleRun(async_fan_out=True),
    presentation=MINUS_PRESENTATION,
    description="PAI- ablation: sub-questions generated directly, no properties, then PAI's judging and summary.",
)
def build_graph_minus(config: PaiConfig | None = None):
    """PAI-: the same graph with sub-questions generated directly (no properties)."""
    cfg = config or PaiConfig()
    return _graph("pai_minus", generate_sub_questions).with_config(max_concurrency=cfg.concurrency)
