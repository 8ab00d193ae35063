"""Self-Ask's ``flashrag`` variant, as FlashRAG's ``SelfAskPipeline.run_item`` runs it: the
generator continues the transcript, its stop cue alternating, until a final answer, an empty
transcript or the cap (:mod:`longctx.graphs.self_ask.graph`)."""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import Hit, StrategyContext, complete
from longctx.graphs.self_ask.config import SelfAskConfig
from longctx.graphs.self_ask.prompts import (
    CONTEXT_STOP,
    EXEMPLAR_SEPARATOR,
    FINAL,
    FLASHRAG_HEADER,
    FOLLOW_UP,
    FORMAT_NOTE,
    INTERMEDIATE,
    MULTI_HOP_EXEMPLARS,
    NEEDED,
    SINGLE_HOP_EXEMPLARS,
)
from longctx.graphs.self_ask.state import SelfAskState, cut_at_stops
from longctx.retrieval.contract import Question, Step

#: flashrag: the final-answer marker FlashRAG's ``selfask_pred_parse`` and loop look for (trailing
#: space included).
FINAL_PREFIX = f"{FINAL} "


def format_contexts(hits: list[Hit]) -> str:
    """FlashRAG's ``format_reference``: one ``Context{i}: {text}`` line per hit, rank order, no
    title."""
    return "".join(f"Context{i}: {h.chunk.text}\n" for i, h in enumerate(hits, 1))


def flashrag_prompt(
    question: Question, contexts: list[Hit], transcript: str, *, single_hop: bool
) -> str:
    """Instruction and ``#``-separated exemplars, the contexts, the question, the needed-line and
    the transcript.

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
    return (
        f"{instructions}\n{format_contexts(contexts)}\nQuestion: {question.render()}\n"
        f"{NEEDED} {needed}\n{transcript}"
    )


def first_follow_up(text: str) -> str | None:
    """FlashRAG's follow-up query: the first line holding ``"Follow up: "``, after its last
    occurrence."""
    line = next((ln for ln in text.split("\n") if f"{FOLLOW_UP} " in ln), None)
    return None if line is None else line.split(f"{FOLLOW_UP} ")[-1]


def parse_final_answer(transcript: str) -> str:
    """FlashRAG's ``selfask_pred_parse``: the text after "So the final answer is: " on the
    first line holding it, stripped; ``""`` when no line does."""
    line = next((ln for ln in transcript.split("\n") if FINAL_PREFIX in ln), None)
    return "" if line is None else line.split(FINAL_PREFIX)[1].strip()


def generate(
    state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]
) -> dict[str, Any]:
    """One generator call: continue the transcript up to the current stop cue, then alternate the
    cue."""
    ctx = runtime.context
    cfg: SelfAskConfig = ctx.config
    cue = state.get("stop_cue", INTERMEDIATE)
    stops = [CONTEXT_STOP, EXEMPLAR_SEPARATOR, cue]
    transcript = state.get("transcript", "")
    prompt = flashrag_prompt(
        state["question"], state.get("contexts", []), transcript, single_hop=cfg.single_hop
    )
    text = complete(
        ctx.llm, prompt, max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, stop=stops
    )
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
    return {
        "transcript": transcript,
        "stop_cue": next_cue,
        "generator_calls": calls,
        "follow_up": follow_up,
        "exit": done,
        "steps": [step],
    }


def after_generate(state: SelfAskState) -> Literal["finish", "retrieve_follow_up", "generate"]:
    """Finish when the loop ended; retrieve for a new follow-up; else call the generator again."""
    if state.get("exit"):
        return "finish"
    return "retrieve_follow_up" if state.get("follow_up") else "generate"


def finish_flashrag(state: SelfAskState) -> dict[str, Any]:
    """The final answer parsed from the transcript (empty when absent); the transcript goes in the
    step."""
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
