"""The events ``astream_answer`` / ``stream_answer`` yield while a strategy runs.

Each is a small frozen dataclass with a ``kind`` (``"step"``, ``"progress"``, ``"token"``, ``"answer"``)
and ``to_dict()`` giving JSON data, e.g. for server-sent events::

    {"kind": "step", "step": {"node": "retrieve", "chunk_ids": [...], ...}, "live": true}
    {"kind": "progress", "stage": "judge", "done": 3000, "total": 48830}
    {"kind": "token", "text": " Bergen", "node": "generate"}
    {"kind": "answer", "answer": {... Answer.to_dict() ...}}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.jsonsafe import is_plain, json_safe
from retrieval.contract import Answer, Step


def plain_step(step: Any) -> Step:
    """``step`` as a :class:`Step` of JSON data (what ``Answer.steps`` holds, see ``agents.api.json_ready``)."""
    step = Step.coerce(step)
    return (
        step
        if is_plain(step)
        else Step.coerce(json_safe(dict(step), max_chars=None, max_total=None))
    )


@dataclass(frozen=True)
class StepEvent:
    """A graph node finished and wrote ``step`` (one of the answer's ``steps``).

    Attributes:
        step: The step, as the answer will carry it.
        node: The graph node that wrote it (``step.node``), as :attr:`TokenEvent.node` names it.
        live: ``True`` when sent as the node finished; ``False`` for a step of the answer that
            was not seen live, sent just before the answer (MemAgent's chunks read before a
            resume or replayed from a finished run's checkpoint, its ``final_answer`` step,
            which the run adds when it collects the answer).
    """

    step: Step
    live: bool = True
    kind: str = field(default="step", init=False)

    @property
    def node(self) -> str | None:
        """The graph node that wrote the step (``step["node"]``), named as :attr:`TokenEvent.node` is."""
        node = self.step.get("node")
        return None if node is None else str(node)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "step": dict(self.step), "live": self.live}


@dataclass(frozen=True)
class ProgressEvent:
    """``done`` of ``total`` units of a stage (``total`` is ``None`` until known).

    Stages: ``read`` (MemAgent: chunks every question has read), ``judge`` (PAI: judged
    (sub-question, chunk) pairs), ``extract`` (structured: documents extracted this run), and
    while a tree or graph builds, before the answer's first step: ``summarize`` (RAPTOR: cluster
    summaries, the total growing layer by layer), ``openie`` (HippoRAG: passages extracted) and
    ``embed`` (texts the tree or graph embedded or read from its embedding store, the total
    growing as it learns them).
    """

    stage: str
    done: int
    total: int | None = None
    kind: str = field(default="progress", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "stage": self.stage, "done": self.done, "total": self.total}


@dataclass(frozen=True)
class TokenEvent:
    """A piece of a model reply as it streams (only from a model that streams: ``streaming=True``).

    Attributes:
        text: The new text.
        node: The graph node making the call; the answer's tokens are those of the strategy's
            last node (``generate``, ``final_answer``, ``summarize``, ``format_answer``, ...).
    """

    text: str
    node: str | None = None
    kind: str = field(default="token", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "text": self.text, "node": self.node}


@dataclass(frozen=True)
class AnswerEvent:
    """The run finished: ``answer`` is what ``aanswer`` returns for the same call (usage included)."""

    answer: Answer
    kind: str = field(default="answer", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "answer": self.answer.to_dict()}


Event = StepEvent | ProgressEvent | TokenEvent | AnswerEvent

__all__ = ["AnswerEvent", "Event", "ProgressEvent", "StepEvent", "TokenEvent", "plain_step"]
