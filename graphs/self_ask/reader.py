"""Self-Ask's ``reader`` variant: the model stops before every intermediate answer, a reader answers
each follow-up from its chunks alone, and the final answer is forced after the cap
(:mod:`longctx.graphs.self_ask.graph`)."""

from __future__ import annotations

import re
from typing import Any, Literal, NamedTuple

from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    RAG_TEMPLATE,
    StrategyContext,
    complete,
    fill,
    format_chunks,
    order_hits,
)
from longctx.graphs.self_ask.config import SelfAskConfig
from longctx.graphs.self_ask.prompts import (
    EXEMPLARS,
    FINAL,
    FOLLOW_UP_INSTRUCTION,
    FORMAT_NOTE,
    HEADER,
    INTERMEDIATE,
    SELF_ASK_TEMPLATE,
)
from longctx.graphs.self_ask.retrieve import pending_follow_up
from longctx.graphs.self_ask.state import STOPS, FinalSource, SelfAskState, cut_at_stops
from longctx.retrieval.contract import Question, Step

NOT_FOUND = "The text does not say."
_FOLLOW_UP_LINE = re.compile(r"^[\s*_>#-]*follow[\s-]*up\s*:\s*(.*)$", re.I)
_FINAL_CUE = re.compile(r"so,?\s+the\s+final\s+answer\s+is\s*:?", re.I)


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
    return SELF_ASK_TEMPLATE.format(
        header=HEADER,
        format_note=note,
        exemplars=EXEMPLARS,
        question=question.render(),
        scratchpad=scratchpad,
    )


def intermediate_answers(scratchpad: str) -> list[str]:
    """The intermediate answers written into the transcript so far."""
    return [
        line.split(INTERMEDIATE, 1)[1].strip()
        for line in scratchpad.splitlines()
        if line.startswith(INTERMEDIATE)
    ]


def ask(state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]) -> dict[str, Any]:
    """Continue the transcript up to the next follow-up question or the final answer."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    pad = state.get("scratchpad", "")
    text = complete(
        ctx.llm,
        self_ask_prompt(state["question"], pad),
        max_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        stop=list(STOPS),
    )
    parsed = parse_step(cut_at_stops(text))
    iteration = state.get("iterations", 0)
    capped = parsed.kind == "follow_up" and iteration >= cfg.max_iterations
    step = Step("ask", iteration=iteration, generated=text, parsed=parsed.kind, capped=capped)
    if capped:  # the unanswered follow-up leaves the transcript; force_final appends the cue
        return {
            "scratchpad": pad + parsed.keep[: parsed.line_start],
            "follow_up": None,
            "capped": True,
            "steps": [step],
        }
    update = {
        "scratchpad": pad + parsed.keep,
        "follow_up": parsed.value if parsed.kind == "follow_up" else None,
        "steps": [step],
    }
    if parsed.kind == "final" and parsed.value:
        update |= {"final": parsed.value, "final_source": "model"}
    return update


def after_ask(state: SelfAskState) -> Literal["retrieve_follow_up", "force_final", "finish"]:
    """A final answer ends the loop; a follow-up is retrieved for; anything else forces the
    answer."""
    if state.get("final"):
        return "finish"
    if state.get("follow_up"):
        return "retrieve_follow_up"
    return "force_final"


def answer_follow_up(
    state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]
) -> dict[str, Any]:
    """Answer the follow-up from its chunks alone and write it into the transcript."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    hits = state.get("follow_up_hits", [])
    reply = ""
    if hits:
        chunks = [h.chunk for h in order_hits(hits, cfg.order)]
        prompt = fill(
            RAG_TEMPLATE,
            format_chunks(chunks),
            Question(text=pending_follow_up(state), instruction=FOLLOW_UP_INSTRUCTION),
        )
        reply = complete(
            ctx.llm, prompt, max_tokens=cfg.follow_up_max_new_tokens, temperature=cfg.temperature
        )
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    sub = lines[0] if lines else NOT_FOUND
    pad = state.get("scratchpad", "").rstrip() + f"\n{INTERMEDIATE} {sub}\n"
    iterations = state.get("iterations", 0) + 1
    step = Step(
        "answer_follow_up",
        follow_up=state["follow_up"],
        intermediate_answer=sub,
        iteration=iterations,
    )
    return {"scratchpad": pad, "iterations": iterations, "follow_up": None, "steps": [step]}


def force_final(
    state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]
) -> dict[str, Any]:
    """Append the final-answer cue and let the model complete one line (original self-ask)."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    pad = state.get("scratchpad", "").rstrip()
    # the model may have written a bare cue
    pad = pad if _FINAL_CUE.search(pad.rsplit("\n", 1)[-1]) else f"{pad}\n{FINAL}"
    text = complete(
        ctx.llm,
        self_ask_prompt(state["question"], pad),
        max_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        stop=["\n"],
    )
    line = next((s for s in text.splitlines() if s.strip()), "")
    final = clean_final(line)
    source: FinalSource = "forced"
    if not final:
        previous = intermediate_answers(pad)
        final, source = (
            (previous[-1], "last_intermediate_answer")
            if previous
            else (clean_final(state.get("scratchpad", "")), "raw")
        )
    step = Step("force_final", generated=text, capped=state.get("capped", False))
    return {
        "scratchpad": f"{pad} {line.strip()}\n",
        "final": final,
        "final_source": source,
        "steps": [step],
    }


def finish_reader(state: SelfAskState) -> dict[str, Any]:
    """The parsed (or forced) final answer; the transcript after the question goes in the step."""
    step = Step(
        "finish",
        variant="reader",
        iterations=state.get("iterations", 0),
        final_answer_source=state["final_source"],
        transcript=state.get("scratchpad", "").strip(),
    )
    return {"answer": state["final"], "raw": state["final"], "steps": [step]}
