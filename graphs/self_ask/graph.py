"""Self-Ask (Press et al. 2023), retrieval-backed, in two variants (``SelfAskConfig.variant``).

``flashrag`` (the default) runs as FlashRAG's ``SelfAskPipeline.run_item``: the question
is retrieved for once and its top-k go into the prompt as ``Context{i}:`` lines. Each
generator call continues the transcript; its stop sequences alternate between
``Intermediate answer:`` (the call writes a follow-up question) and ``Follow up:`` (the
call writes the intermediate answer itself, from the contexts), both with ``Context:``
and ``#``. A follow-up is retrieved for and its top-k replace the contexts of the next
call. The loop ends when a call writes "So the final answer is: ", when the transcript
is still empty after a call, or after ``max_iterations`` generator calls; the answer is
parsed from the transcript's first "So the final answer is: " line, and is empty when
there is none (no forced final call). ``docs/self_ask.md`` lists what we do differently.

Graph (flashrag)::

    START -> retrieve -> generate --follow up--> retrieve_follow_up -> generate
                         generate --neither--> generate
                         generate --final answer / empty / cap--> finish -> END

``reader`` is the project's earlier algorithm: the model stops before every
intermediate answer; each follow-up is retrieved for and a reader call answers it from
those chunks alone; after ``max_iterations`` follow-ups the final-answer cue is appended
and the model completes it; if that is empty, the last intermediate answer stands in.

Graph (reader)::

    START -> ask --follow up--> retrieve_follow_up -> answer_follow_up -> ask
             ask --final answer--> finish -> END
             ask --no follow up / cap reached--> force_final -> finish

In both, ``raw`` and ``answer`` are the parsed final answer (what a benchmark scores);
the transcript is kept in the ``finish`` step.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NamedTuple, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs import costs
from graphs.context import StrategyContext
from graphs.llm import complete
from graphs.prompts import fill, format_chunks
from graphs.rag import RAG_TEMPLATE, order_hits
from graphs.registry import STRATEGIES
from graphs.retrieval_service import RetrievalService
from graphs.self_ask.ceiling import FollowUpCeiling
from graphs.self_ask.config import SelfAskConfig
from graphs.self_ask.presentation import PRESENTATION
from graphs.self_ask.prompts import (
    CONTEXT_STOP,
    EXEMPLAR_SEPARATOR,
    EXEMPLARS,
    FINAL,
    FLASHRAG_HEADER,
    FOLLOW_UP,
    FOLLOW_UP_INSTRUCTION,
    FORMAT_NOTE,
    HEADER,
    INTERMEDIATE,
    MULTI_HOP_EXEMPLARS,
    NEEDED,
    PROMPTS_VERSION,
    SELF_ASK_TEMPLATE,
    SINGLE_HOP_EXEMPLARS,
)
from retrieval import Hit
from retrieval.contract import Question, Step

#: reader: stop before the model writes an intermediate answer or starts a new exemplar.
STOPS = (INTERMEDIATE, "\nQuestion:")
NOT_FOUND = "The text does not say."
#: flashrag: the final-answer marker FlashRAG's ``selfask_pred_parse`` and loop look for (trailing space included).
FINAL_PREFIX = f"{FINAL} "
FinalSource = Literal["model", "forced", "last_intermediate_answer", "raw"]
#: flashrag: why the loop ended (a final answer, an empty transcript after a call, the cap).
Exit = Literal["final_answer", "empty", "cap"]

_FOLLOW_UP_LINE = re.compile(r"^[\s*_>#-]*follow[\s-]*up\s*:\s*(.*)$", re.I)
_FINAL_CUE = re.compile(r"so,?\s+the\s+final\s+answer\s+is\s*:?", re.I)


class SelfAskState(TypedDict, total=False):
    """What evolves during one Self-Ask answer (``flashrag`` and ``reader`` keys)."""

    question: Question
    # flashrag
    contexts: list[Hit]
    transcript: str
    stop_cue: str
    generator_calls: int
    exit: Exit | None
    # both
    follow_up: str | None
    follow_up_hits: list[Hit]
    # reader
    scratchpad: str
    iterations: int
    capped: bool
    final: str | None
    final_source: FinalSource
    hits: Annotated[list[Hit], operator.add]
    raw: str
    answer: str
    steps: Annotated[list[Step], operator.add]


def cut_at_stops(text: str, stops: tuple[str, ...] | list[str] = STOPS) -> str:
    """``text`` up to the first stop sequence (for servers that ignore ``stop``)."""
    cut = min((i for s in stops if (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]


def _retrieval_facts(ctx: StrategyContext[SelfAskConfig], query: str, hits: list[Hit]) -> dict:
    return {
        "query": query,
        "retriever": ctx.require_index().retriever.name,
        "top_k": ctx.config.top_k,
        "chunk_ids": [h.chunk.chunk_id for h in hits],
        "scores": [round(h.score, 6) for h in hits],
    }


def _new_hits(state: SelfAskState, hits: list[Hit]) -> list[Hit]:
    """Hits not yet in the answer's evidence (evidence lists each chunk once)."""
    seen = {h.chunk.chunk_id for h in state.get("hits", [])}
    return [h for h in hits if h.chunk.chunk_id not in seen]


# -- flashrag variant ------------------------------------------------------------------
def format_contexts(hits: list[Hit]) -> str:
    """FlashRAG's ``format_reference``: one ``Context{i}: {text}`` line per hit, rank order, no title."""
    return "".join(f"Context{i}: {h.chunk.text}\n" for i, h in enumerate(hits, 1))


def flashrag_prompt(question: Question, contexts: list[Hit], transcript: str, *, single_hop: bool) -> str:
    """Instruction and ``#``-separated exemplars, the contexts, the question, the needed-line and the transcript.

    FlashRAG's assembly: ``P_INS + "\\n" + contexts + "\\nQuestion: q" +
    "\\nAre follow up questions needed here: " + ("No." | "Yes.") + "\\n" + transcript``,
    where ``P_INS`` ends with a ``#`` line. A benchmark's output-format instruction, when
    the question carries one, is appended to the instruction line (FlashRAG has none).
    """
    note = FORMAT_NOTE.format(instruction=question.instruction) if question.instruction else ""
    exemplars = SINGLE_HOP_EXEMPLARS if single_hop else MULTI_HOP_EXEMPLARS
    sep = f"\n{EXEMPLAR_SEPARATOR}\n"
    instructions = FLASHRAG_HEADER + note + sep + sep.join(exemplars) + f"\n{EXEMPLAR_SEPARATOR}"
    needed = "No." if single_hop else "Yes."
    return f"{instructions}\n{format_contexts(contexts)}\nQuestion: {question.render()}\n{NEEDED} {needed}\n{transcript}"


def first_follow_up(text: str) -> str | None:
    """FlashRAG's follow-up query: the first line holding ``"Follow up: "``, after its last occurrence."""
    line = next((ln for ln in text.split("\n") if f"{FOLLOW_UP} " in ln), None)
    return None if line is None else line.split(f"{FOLLOW_UP} ")[-1]


def parse_final_answer(transcript: str) -> str:
    """FlashRAG's ``selfask_pred_parse``: the text after "So the final answer is: " on the
    first line holding it, stripped; ``""`` when no line does."""
    line = next((ln for ln in transcript.split("\n") if FINAL_PREFIX in ln), None)
    return "" if line is None else line.split(FINAL_PREFIX)[1].strip()


def _follow_up(state: SelfAskState) -> str:
    """The pending follow-up question (the graph routes here only when the generator asked one)."""
    follow_up = state.get("follow_up")
    if follow_up is None:
        raise ValueError("Self-Ask: no follow-up question is pending")
    return follow_up


def retrieve(state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]) -> dict:
    """The initial retrieval: top-k for the question, which become the first prompt's contexts."""
    ctx = runtime.context
    query = state["question"].render()
    hits = RetrievalService.of(ctx).retrieve(ctx.require_index(), query)
    return {"contexts": hits, "hits": hits, "steps": [Step("retrieve", **_retrieval_facts(ctx, query, hits))]}


def generate(state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]) -> dict:
    """One generator call: continue the transcript up to the current stop cue, then alternate the cue."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    cue = state.get("stop_cue", INTERMEDIATE)
    stops = [CONTEXT_STOP, EXEMPLAR_SEPARATOR, cue]
    transcript = state.get("transcript", "")
    prompt = flashrag_prompt(state["question"], state.get("contexts", []), transcript, single_hop=cfg.single_hop)
    text = complete(ctx.llm, prompt, max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, stop=stops)
    kept = cut_at_stops(text, stops)
    if transcript and kept and not kept[0].isspace() and not transcript.endswith("\n"):
        transcript += "\n"  # a chat reply does not start with the newline a completion model writes
    transcript += kept
    calls = state.get("generator_calls", 0) + 1
    follow_up, done = None, None
    if not transcript:
        done = "empty"
    else:
        transcript = transcript[:-1] if transcript.endswith("\n") else transcript
        follow_up = first_follow_up(kept)
        if FINAL_PREFIX in kept:
            done = "final_answer"
        elif calls >= cfg.max_iterations:
            done = "cap"
    step = Step("generate", call=calls, stop=stops, generated=text, follow_up=follow_up, exit=done)
    next_cue = FOLLOW_UP if cue == INTERMEDIATE else INTERMEDIATE
    return {"transcript": transcript, "stop_cue": next_cue, "generator_calls": calls, "follow_up": follow_up, "exit": done, "steps": [step]}


def after_generate(state: SelfAskState) -> Literal["finish", "retrieve_follow_up", "generate"]:
    """Finish when the loop ended; retrieve for a new follow-up; else call the generator again."""
    if state.get("exit"):
        return "finish"
    return "retrieve_follow_up" if state.get("follow_up") else "generate"


def retrieve_follow_up(state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]) -> dict:
    """Top-k chunks with the follow-up question as the query.

    ``flashrag``: they replace the prompt's contexts (or join them, ``contexts="accumulate"``);
    ``reader``: the reader answers the follow-up from them.
    """
    ctx = runtime.context
    query = _follow_up(state)
    hits = RetrievalService.of(ctx).retrieve(ctx.require_index(), query)
    contexts = hits
    if ctx.config.contexts == "accumulate":
        previous = state.get("contexts", [])
        ids = {h.chunk.chunk_id for h in previous}
        contexts = previous + [h for h in hits if h.chunk.chunk_id not in ids]
    step = Step("retrieve_follow_up", **_retrieval_facts(ctx, query, hits))
    if ctx.config.variant == "flashrag":
        step["contexts"] = [h.chunk.chunk_id for h in contexts]
    return {"follow_up_hits": hits, "contexts": contexts, "hits": _new_hits(state, hits), "steps": [step]}


def finish_flashrag(state: SelfAskState) -> dict:
    """The final answer parsed from the transcript (empty when absent); the transcript goes in the step."""
    transcript = state.get("transcript", "")
    final = parse_final_answer(transcript)
    step = Step(
        "finish",
        variant="flashrag",
        generator_calls=state.get("generator_calls", 0),
        exit=state.get("exit") or "cap",
        final_answer_found=FINAL_PREFIX in transcript,
        transcript=transcript,
    )
    return {"answer": final, "raw": final, "steps": [step]}


# -- reader variant --------------------------------------------------------------------
class ParsedStep(NamedTuple):
    """What one Self-Ask generation asked for, and the transcript text it contributes."""

    kind: Literal["follow_up", "final", "none"]
    value: str
    keep: str
    line_start: int


def clean_final(text: str) -> str:
    """A final answer without markup, surrounding quotes or one trailing period."""
    text = text.strip().strip("*_`").strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text[:-1].rstrip() if text.endswith(".") and not text.endswith("..") else text


def parse_step(text: str) -> ParsedStep:
    """The first follow-up or final answer in ``text``, and the text up to the end of its line.

    Tolerant of case, "Follow-up:", list or markdown markers and a final-answer cue
    inside a sentence ("so, the final answer is X").
    """
    offset = 0
    for line in text.splitlines(keepends=True):
        end = offset + len(line)
        if m := _FOLLOW_UP_LINE.match(line.rstrip("\n")):
            if question := m.group(1).strip().strip("*_").strip():
                return ParsedStep("follow_up", question, text[:end], offset)
        if cues := list(_FINAL_CUE.finditer(line)):
            return ParsedStep("final", clean_final(line[cues[-1].end() :]), text[:end], offset)
        offset = end
    return ParsedStep("none", "", text, len(text))


def self_ask_prompt(question: Question, scratchpad: str) -> str:
    """reader: header, exemplars, the question and the transcript so far."""
    note = FORMAT_NOTE.format(instruction=question.instruction) if question.instruction else ""
    return SELF_ASK_TEMPLATE.format(header=HEADER, format_note=note, exemplars=EXEMPLARS, question=question.render(), scratchpad=scratchpad)


def intermediate_answers(scratchpad: str) -> list[str]:
    """The intermediate answers written into the transcript so far."""
    return [line.split(INTERMEDIATE, 1)[1].strip() for line in scratchpad.splitlines() if line.startswith(INTERMEDIATE)]


def ask(state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]) -> dict:
    """Continue the transcript up to the next follow-up question or the final answer."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    pad = state.get("scratchpad", "")
    text = complete(ctx.llm, self_ask_prompt(state["question"], pad), max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, stop=list(STOPS))
    parsed = parse_step(cut_at_stops(text))
    iteration = state.get("iterations", 0)
    capped = parsed.kind == "follow_up" and iteration >= cfg.max_iterations
    step = Step("ask", iteration=iteration, generated=text, parsed=parsed.kind, capped=capped)
    if capped:  # the unanswered follow-up leaves the transcript; force_final appends the cue
        return {"scratchpad": pad + parsed.keep[: parsed.line_start], "follow_up": None, "capped": True, "steps": [step]}
    update = {"scratchpad": pad + parsed.keep, "follow_up": parsed.value if parsed.kind == "follow_up" else None, "steps": [step]}
    if parsed.kind == "final" and parsed.value:
        update |= {"final": parsed.value, "final_source": "model"}
    return update


def after_ask(state: SelfAskState) -> Literal["retrieve_follow_up", "force_final", "finish"]:
    """A final answer ends the loop; a follow-up is retrieved for; anything else forces the answer."""
    if state.get("final"):
        return "finish"
    if state.get("follow_up"):
        return "retrieve_follow_up"
    return "force_final"


def answer_follow_up(state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]) -> dict:
    """Answer the follow-up from its chunks alone and write it into the transcript."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    hits = state.get("follow_up_hits", [])
    reply = ""
    if hits:
        chunks = [h.chunk for h in order_hits(hits, cfg.order)]
        prompt = fill(RAG_TEMPLATE, format_chunks(chunks), Question(text=_follow_up(state), instruction=FOLLOW_UP_INSTRUCTION))
        reply = complete(ctx.llm, prompt, max_tokens=cfg.follow_up_max_new_tokens, temperature=cfg.temperature)
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    sub = lines[0] if lines else NOT_FOUND
    pad = state.get("scratchpad", "").rstrip() + f"\n{INTERMEDIATE} {sub}\n"
    iterations = state.get("iterations", 0) + 1
    step = Step("answer_follow_up", follow_up=state["follow_up"], intermediate_answer=sub, iteration=iterations)
    return {"scratchpad": pad, "iterations": iterations, "follow_up": None, "steps": [step]}


def force_final(state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]) -> dict:
    """Append the final-answer cue and let the model complete one line (original self-ask)."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    pad = state.get("scratchpad", "").rstrip()
    pad = pad if _FINAL_CUE.search(pad.rsplit("\n", 1)[-1]) else f"{pad}\n{FINAL}"  # the model may have written a bare cue
    text = complete(ctx.llm, self_ask_prompt(state["question"], pad), max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, stop=["\n"])
    line = next((s for s in text.splitlines() if s.strip()), "")
    final = clean_final(line)
    source: FinalSource = "forced"
    if not final:
        previous = intermediate_answers(pad)
        final, source = (previous[-1], "last_intermediate_answer") if previous else (clean_final(state.get("scratchpad", "")), "raw")
    step = Step("force_final", generated=text, capped=state.get("capped", False))
    return {"scratchpad": f"{pad} {line.strip()}\n", "final": final, "final_source": source, "steps": [step]}


def finish_reader(state: SelfAskState) -> dict:
    """The parsed (or forced) final answer; the transcript after the question goes in the step."""
    step = Step(
        "finish",
        variant="reader",
        iterations=state.get("iterations", 0),
        final_answer_source=state["final_source"],
        transcript=state.get("scratchpad", "").strip(),
    )
    return {"answer": state["final"], "raw": state["final"], "steps": [step]}


# -- graph -----------------------------------------------------------------------------
def self_ask_costs(cfg: Any, shape: costs.CorpusShape, questions: Sequence[Question], llm: Any = None, window: int | None = None) -> costs.Costs:
    """Up to ``max_iterations`` generator calls (FlashRAG); the reader variant also answers each follow-up.

    Each call carries the few-shot template with the question (counted from the real prompt),
    the top-k chunks (all retrieved so far with ``contexts="accumulate"``), and at most the
    transcript so far. Typically 2 calls per question (a follow-up and the answer), each with the
    template and ``top_k`` chunks.
    """
    def template(q: Question) -> str:
        return flashrag_prompt(q, [], "", single_hop=cfg.single_hop) if cfg.variant == "flashrag" else self_ask_prompt(q, "")

    # each question's template, counted as the budget guard counts (the least and the most over the questions)
    bases = [costs.prompt_tokens("self_ask", f"{cfg.variant}:{cfg.single_hop}", lambda q=q: template(q), llm, q)  # type: ignore[misc]
             for q in questions or [costs.PLACEHOLDER_QUESTION]]  # fmt: skip
    base, base_most = min(bases), max(bases)
    chunk = costs.tokens_of(cfg.chunk_size, "words")
    if cfg.variant == "flashrag":
        least, most = min(1, cfg.max_iterations), cfg.max_iterations
        formula = f"1 to max_iterations ({cfg.max_iterations}) generator calls"
    else:
        least, most = 1, 2 * cfg.max_iterations + 2
        formula = f"1 to 2 x max_iterations + 2 ({most}) calls"
    contexts = min(shape.tokens, cfg.top_k * chunk)
    widest = min(shape.tokens, max(most, 1) * cfg.top_k * chunk) if cfg.contexts == "accumulate" else contexts
    transcript = most * max(cfg.max_new_tokens, cfg.follow_up_max_new_tokens)
    bounds = costs.per_question_plan("self_ask", questions, least, most, least * (base + contexts), most * (base_most + widest + transcript),
                                     least * cfg.max_new_tokens, formula)  # fmt: skip
    calls = min(2, most)
    return costs.Costs(bounds, costs.ExpectedCost(costs.Calls(calls, calls * (base + contexts), calls * costs.reply_tokens(cfg))))


@STRATEGIES.register(
    "self_ask",
    costs=costs.StrategyCosts(self_ask_costs),
    ceiling=FollowUpCeiling(rank=30, retrieve_follow_up=retrieve_follow_up),
    config_cls=SelfAskConfig,
    prompts_version=PROMPTS_VERSION,
    uses_index=True,
    presets={
        "paper": SelfAskConfig(),
        "reader": SelfAskConfig(variant="reader", chunk_size=300, top_k=5, max_new_tokens=128),
    },
    presentation=PRESENTATION,
    description=(
        "Self-Ask as FlashRAG runs it: the question's top-5 in the prompt, the model writes follow-ups and their "
        "answers, each follow-up re-retrieves; at most 5 generator calls (variant='reader': a reader answers each follow-up)."
    ),
)
def build_graph(config: SelfAskConfig | None = None):
    """The loop of ``config.variant`` (module docstring), with a recursion limit that fits the cap."""
    cfg = config or SelfAskConfig()
    graph = StateGraph(SelfAskState, context_schema=StrategyContext)
    if cfg.variant == "flashrag":
        graph.add_node("retrieve", retrieve)
        graph.add_node("generate", generate)
        graph.add_node("retrieve_follow_up", retrieve_follow_up)
        graph.add_node("finish", finish_flashrag)
        graph.add_edge(START, "retrieve")
        graph.add_edge("retrieve", "generate" if cfg.max_iterations else "finish")  # FlashRAG: range(max_iter)
        graph.add_conditional_edges("generate", after_generate)
        graph.add_edge("retrieve_follow_up", "generate")
        limit = 2 * cfg.max_iterations + 10
    else:
        graph.add_node("ask", ask)
        graph.add_node("retrieve_follow_up", retrieve_follow_up)
        graph.add_node("answer_follow_up", answer_follow_up)
        graph.add_node("force_final", force_final)
        graph.add_node("finish", finish_reader)
        graph.add_edge(START, "ask")
        graph.add_conditional_edges("ask", after_ask)
        graph.add_edge("retrieve_follow_up", "answer_follow_up")
        graph.add_edge("answer_follow_up", "ask")
        graph.add_edge("force_final", "finish")
        limit = 3 * cfg.max_iterations + 10
    graph.add_edge("finish", END)
    return graph.compile(name="self_ask").with_config(recursion_limit=limit)
