"""Self-Ask (Press et al. 2023), retrieval-backed: follow-up questions answered from the corpus.

The model continues the Self-Ask transcript until it writes a follow-up question; the
stop sequence ``Intermediate answer:`` ends the call there, so the model never writes
its own intermediate answers (any text past a stop is cut client-side too, for servers
that ignore stops). Each follow-up becomes the query of a retrieval over the corpus
index, a reader call answers it from those chunks alone, and the answer is written into
the transcript as ``Intermediate answer: ...``. The loop ends when the model writes
"So the final answer is:", or after ``max_iterations`` follow-ups (FlashRAG's
``max_iter=5``), when the cue is appended and the model completes it, as the original
self-ask code does. If even that yields nothing, the last intermediate answer stands in,
and ``Answer.steps`` records which source the final answer came from.

Graph::

    START -> ask --follow up--> retrieve_follow_up -> answer_follow_up -> ask
             ask --final answer--> finish -> END
             ask --no follow up / cap reached--> force_final -> finish
"""

from __future__ import annotations

import operator
import re
from typing import Annotated, Literal, NamedTuple, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs.context import StrategyContext
from graphs.llm import complete
from graphs.prompts import fill, format_chunks
from graphs.rag import RAG_TEMPLATE, order_hits
from graphs.registry import STRATEGIES
from graphs.self_ask.config import SelfAskConfig
from graphs.self_ask.prompts import (
    EXEMPLARS,
    FINAL,
    FOLLOW_UP_INSTRUCTION,
    FORMAT_NOTE,
    HEADER,
    INTERMEDIATE,
    PROMPTS_VERSION,
    SELF_ASK_TEMPLATE,
)
from retrieval import Hit
from retrieval.contract import Question

#: Stop before the model writes an intermediate answer or starts a new exemplar.
STOPS = (INTERMEDIATE, "\nQuestion:")
NOT_FOUND = "The text does not say."
FinalSource = Literal["model", "forced", "last_intermediate_answer", "raw"]

_FOLLOW_UP_LINE = re.compile(r"^[\s*_>#-]*follow[\s-]*up\s*:\s*(.*)$", re.I)
_FINAL_CUE = re.compile(r"so,?\s+the\s+final\s+answer\s+is\s*:?", re.I)


class SelfAskState(TypedDict, total=False):
    """What evolves during one Self-Ask answer."""

    question: Question
    scratchpad: str
    follow_up: str | None
    follow_up_hits: list[Hit]
    iterations: int
    capped: bool
    final: str | None
    final_source: FinalSource
    hits: Annotated[list[Hit], operator.add]
    raw: str
    answer: str
    steps: Annotated[list[dict], operator.add]


class ParsedStep(NamedTuple):
    """What one Self-Ask generation asked for, and the transcript text it contributes."""

    kind: Literal["follow_up", "final", "none"]
    value: str
    keep: str
    line_start: int


def cut_at_stops(text: str, stops: tuple[str, ...] = STOPS) -> str:
    """``text`` up to the first stop sequence (for servers that ignore ``stop``)."""
    cut = min((i for s in stops if (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]


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
    """Header, exemplars, the question and the transcript so far."""
    note = FORMAT_NOTE.format(instruction=question.instruction) if question.instruction else ""
    return SELF_ASK_TEMPLATE.format(header=HEADER, format_note=note, exemplars=EXEMPLARS, question=question.render(), scratchpad=scratchpad)


def intermediate_answers(scratchpad: str) -> list[str]:
    """The intermediate answers written into the transcript so far."""
    return [line.split(INTERMEDIATE, 1)[1].strip() for line in scratchpad.splitlines() if line.startswith(INTERMEDIATE)]


def ask(state: SelfAskState, runtime: Runtime[StrategyContext]) -> dict:
    """Continue the transcript up to the next follow-up question or the final answer."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    pad = state.get("scratchpad", "")
    text = complete(ctx.llm, self_ask_prompt(state["question"], pad), max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, stop=list(STOPS))
    parsed = parse_step(cut_at_stops(text))
    iteration = state.get("iterations", 0)
    capped = parsed.kind == "follow_up" and iteration >= cfg.max_iterations
    step = {"node": "ask", "iteration": iteration, "generated": text, "parsed": parsed.kind, "capped": capped}
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


def retrieve_follow_up(state: SelfAskState, runtime: Runtime[StrategyContext]) -> dict:
    """Top-k chunks with the follow-up question as the query."""
    ctx = runtime.context
    query = state["follow_up"]
    hits = ctx.index.search(query, ctx.config.top_k)
    step = {"node": "retrieve_follow_up", "query": query, "retriever": ctx.index.retriever.name, "chunk_ids": [h.chunk.chunk_id for h in hits]}
    seen = {h.chunk.chunk_id for h in state.get("hits", [])}
    new = [h for h in hits if h.chunk.chunk_id not in seen]  # evidence lists each chunk once
    return {"follow_up_hits": hits, "hits": new, "steps": [step | {"scores": [round(h.score, 6) for h in hits]}]}


def answer_follow_up(state: SelfAskState, runtime: Runtime[StrategyContext]) -> dict:
    """Answer the follow-up from its chunks alone and write it into the transcript."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    hits = state.get("follow_up_hits", [])
    reply = ""
    if hits:
        chunks = [h.chunk for h in order_hits(hits, cfg.order)]
        prompt = fill(RAG_TEMPLATE, format_chunks(chunks), Question(text=state["follow_up"], instruction=FOLLOW_UP_INSTRUCTION))
        reply = complete(ctx.llm, prompt, max_tokens=cfg.follow_up_max_new_tokens, temperature=cfg.temperature)
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    sub = lines[0] if lines else NOT_FOUND
    pad = state.get("scratchpad", "").rstrip() + f"\n{INTERMEDIATE} {sub}\n"
    iterations = state.get("iterations", 0) + 1
    step = {"node": "answer_follow_up", "follow_up": state["follow_up"], "intermediate_answer": sub, "iteration": iterations}
    return {"scratchpad": pad, "iterations": iterations, "follow_up": None, "steps": [step]}


def force_final(state: SelfAskState, runtime: Runtime[StrategyContext]) -> dict:
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
    step = {"node": "force_final", "generated": text, "capped": state.get("capped", False)}
    return {"scratchpad": f"{pad} {line.strip()}\n", "final": final, "final_source": source, "steps": [step]}


def finish(state: SelfAskState) -> dict:
    """The parsed final answer; ``raw`` is the whole transcript after the question."""
    step = {"node": "finish", "iterations": state.get("iterations", 0), "final_answer_source": state["final_source"]}
    return {"answer": state["final"], "raw": state.get("scratchpad", "").strip(), "steps": [step]}


@STRATEGIES.register(
    "self_ask",
    config_cls=SelfAskConfig,
    prompts_version=PROMPTS_VERSION,
    uses_index=True,
    description="Self-Ask: follow-up questions, each answered from chunks retrieved for it, then a final answer (at most 5 rounds).",
)
def build_graph(config: SelfAskConfig | None = None):
    """The Self-Ask loop (module docstring), with a recursion limit that fits the iteration cap."""
    cfg = config or SelfAskConfig()
    graph = StateGraph(SelfAskState, context_schema=StrategyContext)
    graph.add_node("ask", ask)
    graph.add_node("retrieve_follow_up", retrieve_follow_up)
    graph.add_node("answer_follow_up", answer_follow_up)
    graph.add_node("force_final", force_final)
    graph.add_node("finish", finish)
    graph.add_edge(START, "ask")
    graph.add_conditional_edges("ask", after_ask)
    graph.add_edge("retrieve_follow_up", "answer_follow_up")
    graph.add_edge("answer_follow_up", "ask")
    graph.add_edge("force_final", "finish")
    graph.add_edge("finish", END)
    return graph.compile(name="self_ask").with_config(recursion_limit=3 * cfg.max_iterations + 10)
