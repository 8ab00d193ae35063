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
from collections.abc import Callable
from typing import Any, cast

from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from longctx.graphs.pai import prompts as P
from longctx.graphs.pai.ceiling import JudgedChunksCeiling
from longctx.graphs.pai.config import PaiConfig
from longctx.graphs.pai.cost_model import pai_costs, pai_minus_costs
from longctx.graphs.pai.decompose import extract_properties, generate_sub_questions
from longctx.graphs.pai.judging import (
    ajudge,
    choose_mode,
    gather,
    judge,
    plan_judging,
    reask_refused,
    route_judges,
    stop_if_refused,
)
from longctx.graphs.pai.presentation import MINUS_PRESENTATION, PRESENTATION
from longctx.graphs.pai.state import PaiState, SubAnswerTask, SubQuestion
from longctx.graphs.plugin.api import (
    STRATEGIES,
    BudgetReached,
    Chunk,
    CompiledGraph,
    PromptSharing,
    SingleRun,
    StrategyContext,
    StrategyCosts,
    complete,
    format_chunks,
)
from longctx.retrieval.contract import Step


def route_sub_answers(state: PaiState) -> list[Send]:
    """One ``sub_answer`` task per sub-question, with its kept chunks (document order); first, in a
    resumed run, the judges an earlier call's budget refused (:func:`reask_refused`)."""
    return reask_refused(state) or [
        Send("sub_answer", SubAnswerTask(sq=i, sub_question=sq, chunks=state["kept"][i]))
        for i, sq in enumerate(state["sub_questions"])
    ]


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


def sub_answer(task: SubAnswerTask, runtime: Runtime[StrategyContext[PaiConfig]]) -> dict[str, Any]:
    """The sub-answer from the packed kept chunks; "not found" without a call when none was kept
    (a call the budget refuses is marked ``stopped``, as a judge's, and :func:`summarize` stops the
    run)."""
    ctx, cfg, sq = runtime.context, runtime.context.config, task["sub_question"]
    has_property = sq.get("metric") is not None
    if not task["chunks"]:
        template = P.NOT_FOUND_PROPERTY if has_property else P.NOT_FOUND_SUB_QUESTION
        text = template.format(
            metric=sq.get("metric"), subject=sq.get("subject"), sub_question=sq["text"]
        )
        return {
            "sub_answers": [
                {"sq": task["sq"], "text": text, "packed": 0, "over_budget": 0, "called": False}
            ]
        }
    packed, over = pack(task["chunks"], cfg.sub_answer_context_tokens)
    form = P.PROPERTY_ANSWER_FORM.format(**sq) if has_property else P.SUB_QUESTION_ANSWER_FORM
    prompt = P.SUB_ANSWER_PROMPT.format(
        context=format_chunks(packed), sub_question=sq["text"], form=form.strip()
    )
    try:
        text = complete(
            ctx.llm, prompt, max_tokens=cfg.sub_answer_max_tokens, temperature=cfg.temperature
        ).strip()
    except BudgetReached as exc:
        return {
            "sub_answers": [
                {
                    "sq": task["sq"],
                    "text": "",
                    "packed": len(packed),
                    "over_budget": over,
                    "called": False,
                    "stopped": str(exc),
                }
            ]
        }
    return {
        "sub_answers": [
            {
                "sq": task["sq"],
                "text": text,
                "packed": len(packed),
                "over_budget": over,
                "called": True,
            }
        ]
    }


def latest_sub_answers(state: PaiState) -> dict[int, dict[str, Any]]:
    """Each sub-question's last sub-answer: one re-asked after a refusal has its answer recorded
    after the refusal."""
    return {a["sq"]: a for a in state.get("sub_answers", [])}


def reask_sub_answers(state: PaiState) -> list[Send] | str:
    """The ``sub_answer`` tasks an earlier call's budget refused (a checkpointed run resumed), then
    :func:`summarize` again; the end once the conclusion is written."""
    refused = [i for i, a in latest_sub_answers(state).items() if "stopped" in a]
    sub_questions = state["sub_questions"]
    sends = [
        Send(
            "sub_answer",
            SubAnswerTask(sq=i, sub_question=sub_questions[i], chunks=state["kept"][i]),
        )
        for i in sorted(refused)
    ]
    return sends or END


def summarize(state: PaiState, runtime: Runtime[StrategyContext[PaiConfig]]) -> dict[str, Any]:
    """Question + sub-answers -> conclusion (benchmark format), then the CoT output.

    A sub-answer the budget refused stops the run when this call's budget refused it; one refused
    by an earlier call (a checkpointed run resumed) is re-asked first (:func:`reask_sub_answers`).

    Raises:
        BudgetReached: This call's budget refused a sub-answer's call.
    """
    ctx, cfg, question = runtime.context, runtime.context.config, state["question"]
    answers = sorted(latest_sub_answers(state).values(), key=lambda a: a["sq"])
    if any("stopped" in a for a in answers):
        if ctx.budget.reached is not None:  # this call's budget refused it: the run stops
            stop_if_refused(answers)
        return {}  # refused by an earlier call: re-asked first (reask_sub_answers)
    findings = "\n".join(f"- {a['text']}" for a in answers)
    prompt = P.SUMMARY_PROMPT.format(
        question=question.render(),
        findings=findings,
        instruction=question.instruction or P.DEFAULT_SUMMARY_INSTRUCTION,
    )
    raw = complete(
        ctx.llm,
        prompt,
        max_tokens=question.answer_budget(cfg.summary_max_tokens),
        temperature=question.answer_temperature(cfg.temperature),
    )
    conclusion = strip_conclusion_label(raw)
    output = render_cot(
        state.get("properties") or [],
        state["sub_questions"],
        [a["text"] for a in answers],
        conclusion,
    )
    steps = [
        Step(
            "sub_answer",
            sub_answers=[
                {
                    "sub_question": state["sub_questions"][a["sq"]]["text"],
                    **{k: v for k, v in a.items() if k != "sq"},
                }
                for a in answers
            ],
        ),
        Step("summarize", conclusion=conclusion),
    ]
    return {"raw": raw, "answer": output if cfg.output == "cot" else conclusion, "steps": steps}


def strip_conclusion_label(text: str) -> str:
    """The reply without a leading "Conclusion:" (the CoT adds its own)."""
    text = text.strip()
    return text[len("Conclusion:") :].strip() if text.lower().startswith("conclusion:") else text


def render_cot(
    properties: list[dict[str, str]],
    sub_questions: list[SubQuestion],
    sub_answers: list[str],
    conclusion: str,
) -> str:
    """The paper's output (Fig. 8): properties (or PAI- sub-questions), sub-answers, conclusion."""
    if properties:
        items = "\n".join(
            repr({"metric": p["metric"], "subject": p["subject"]}) for p in properties
        )
        template = P.COT_TEMPLATE
    else:
        items = "\n".join(sq["text"] for sq in sub_questions)
        template = P.COT_TEMPLATE_MINUS
    return template.format(
        properties=items, sub_answers="\n".join(sub_answers), conclusion=conclusion
    )


def _graph(name: str, decompose: Callable[..., dict[str, Any]]) -> CompiledGraph:
    """The PAI wiring with ``decompose`` (properties or direct sub-questions) as the first node."""
    graph = StateGraph(PaiState, context_schema=StrategyContext)
    graph.add_node("decompose", decompose)
    graph.add_node("plan_judging", plan_judging)
    graph.add_node("judge", RunnableCallable(judge, ajudge, name="judge"))  # sync and async twins
    graph.add_node("gather", gather)
    # LangGraph types node inputs as state schemas; Send payloads are plain dicts: the node is
    # given untyped (cast), its own signature checked where it is defined.
    graph.add_node("sub_answer", cast(Any, sub_answer))
    graph.add_node("summarize", summarize)
    graph.add_edge(START, "decompose")
    graph.add_edge("decompose", "plan_judging")
    graph.add_conditional_edges("plan_judging", route_judges, ["judge", "gather"])
    graph.add_edge("judge", "gather")
    graph.add_conditional_edges("gather", route_sub_answers, ["sub_answer", "judge"])
    graph.add_edge("sub_answer", "summarize")
    graph.add_conditional_edges("summarize", reask_sub_answers, ["sub_answer", END])
    return graph.compile(name=name)


#: PAI's ceiling rule (PAI- shares it, one row later).
PAI_CEILING = JudgedChunksCeiling(
    rank=40, choose_mode=choose_mode, plan_judging=plan_judging, pack=pack
)


def chunk_first_share(cfg: PaiConfig) -> float:
    """Every question's judge calls start with a chunk when ``judge_order="chunk_first"``; none
    otherwise."""
    return 1.0 if cfg.judge_order == "chunk_first" else 0.0


#: With ``judge_order="chunk_first"`` each judge call starts with its chunk, which every
#: sub-question and question re-reads.
JUDGE_SHARING = PromptSharing(
    "each chunk, in its judge calls (judge_order='chunk_first'; the paper's order puts the "
    "sub-question first)",
    share=chunk_first_share,
    options={"judge_order": "chunk_first"},
)


@STRATEGIES.register(
    "pai",
    costs=StrategyCosts(pai_costs, always_bounded=True),
    ceiling=PAI_CEILING,
    config_cls=PaiConfig,
    presets={"paper": PaiConfig(judge_mode="exhaustive")},
    prompts_version=P.PROMPTS_VERSION,
    prompt_sharing=JUDGE_SHARING,
    uses_index=True,
    run_mode=SingleRun(async_fan_out=True),
    presentation=PRESENTATION,
    description=(
        "Property-based agentic inference: properties -> keep_context per (sub-question, "
        "1,024-token chunk) -> sub-answers -> conclusion."
    ),
)
def build_graph(config: PaiConfig | None = None) -> CompiledGraph:
    """START -> decompose (properties) -> plan_judging -> judge x chunks -> gather -> sub_answer x N
    -> summarize -> END."""
    cfg = config or PaiConfig()
    return _graph("pai", extract_properties).with_config(max_concurrency=cfg.concurrency)


@STRATEGIES.register(
    "pai_minus",
    costs=StrategyCosts(pai_minus_costs, always_bounded=True),
    ceiling=dataclasses.replace(PAI_CEILING, rank=50),
    config_cls=PaiConfig,
    presets={"paper": PaiConfig(judge_mode="exhaustive")},
    prompts_version=P.PROMPTS_VERSION,
    prompt_sharing=JUDGE_SHARING,
    uses_index=True,
    run_mode=SingleRun(async_fan_out=True),
    presentation=MINUS_PRESENTATION,
    description=(
        "PAI- ablation: sub-questions generated directly, no properties, then PAI's judging and "
        "summary."
    ),
)
def build_graph_minus(config: PaiConfig | None = None) -> CompiledGraph:
    """PAI-: the same graph with sub-questions generated directly (no properties)."""
    cfg = config or PaiConfig()
    return _graph("pai_minus", generate_sub_questions).with_config(max_concurrency=cfg.concurrency)
