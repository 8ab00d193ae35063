"""Self-Ask's state (both variants' keys) and the stop-sequence cut both variants apply to a
reply."""

from __future__ import annotations

from typing import Literal

from longctx.graphs.plugin.api import AnswerState, Hit
from longctx.graphs.self_ask.prompts import INTERMEDIATE

#: reader: stop before the model writes an intermediate answer or starts a new exemplar.
STOPS = (INTERMEDIATE, "\nQuestion:")
FinalSource = Literal["model", "forced", "last_intermediate_answer", "raw"]


#: flashrag: why the loop ended (a final answer, an empty transcript after a call, the cap).
Exit = Literal["final_answer", "empty", "cap"]


class SelfAskState(AnswerState, total=False):
    """What evolves during one Self-Ask answer (``flashrag`` and ``reader`` keys)."""

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


def cut_at_stops(text: str, stops: tuple[str, ...] | list[str] = STOPS) -> str:
    """``text`` up to the first stop sequence (for servers that ignore ``stop``)."""
    cut = min((i for s in stops if (i := text.find(s)) >= 0), default=len(text))
    return text[:cut]
