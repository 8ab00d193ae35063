"""The events ``astream_answer`` / ``stream_answer`` yield while a strategy runs.

Each is a small frozen dataclass with a ``kind`` (``"step"``, ``"progress"``, ``"token"``,
``"tool_call"``, ``"tool_result"``, ``"answer"``) and ``to_dict()`` giving JSON data, e.g. for
server-sent events::

    {"kind": "step", "step": {"node": "retrieve", "chunk_ids": [...], ...}, "live": true}
    {"kind": "progress", "stage": "judge", "done": 3000, "total": 48830}
    {"kind": "token", "text": " Bergen", "node": "generate", "tool_call_chunks": []}
    {"kind": "tool_call", "name": "search", "arguments": {"query": "x"}, "call_id": "call_0",
     "node": "agent"}
    {"kind": "tool_result", "call_id": "call_0", "name": "search", "result": "...", "status": "ok",
     "chars": 812, "node": "tools"}
    {"kind": "answer", "answer": {... Answer.to_dict() ...}}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from longctx.agents.jsonsafe import is_plain, json_safe
from longctx.retrieval.contract import Answer, Step


def plain_step(step: Any) -> Step:
    """``step`` as a :class:`Step` of JSON data (what ``Answer.steps`` holds, see
    ``longctx.agents.api.json_ready``)."""
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
        """The graph node that wrote the step (``step["node"]``), named as :attr:`TokenEvent.node`
        is."""
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
        text: The new text (``""`` for a chunk that carries only a piece of a tool call).
        node: The graph node making the call; the answer's tokens are those of the strategy's
            last node (``generate``, ``final_answer``, ``summarize``, ``format_answer``, ...).
        tool_call_chunks: The pieces of tool calls the chunk carries, as LangChain's
            ``AIMessageChunk.tool_call_chunks`` (``name``, ``args`` (a piece of the JSON
            arguments), ``id``, ``index``): the name and id come first, then the arguments in
            pieces; join the pieces of one ``index`` to get the call.
    """

    text: str
    node: str | None = None
    tool_call_chunks: tuple[dict[str, Any], ...] = ()
    kind: str = field(default="token", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "kind": self.kind,
            "text": self.text,
            "node": self.node,
            "tool_call_chunks": [dict(c) for c in self.tool_call_chunks],
        }


@dataclass(frozen=True)
class ToolCallEvent:
    """A model turn asked for a tool call (:class:`longctx.graphs.calls.tool_loop.ToolLoop`), sent
    before it runs.

    Attributes:
        name: The tool called (``None`` for a call that could not be read).
        arguments: Its arguments (the raw text for a call that could not be read).
        call_id: The call's id, which its :class:`ToolResultEvent` repeats.
        node: The graph node that made the model call (``agent`` in a tool loop).
    """

    name: str | None
    arguments: dict[str, Any] | str
    call_id: str
    node: str | None = None
    kind: str = field(default="tool_call", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "kind": self.kind,
            "name": self.name,
            "arguments": json_safe(self.arguments),
            "call_id": self.call_id,
            "node": self.node,
        }


@dataclass(frozen=True)
class ToolResultEvent:
    """A tool call's result, sent as it is ready (in the order of the calls of a turn).

    Attributes:
        call_id: The id of the :class:`ToolCallEvent` it answers.
        name: The tool that ran.
        result: The text the model reads, cut in the middle beyond
            :data:`longctx.graphs.calls.tool_events.EVENT_RESULT_CHARS` characters (a marker says
            how many).
        status: ``"ok"``, or ``"error"`` (the tool raised, is unknown, got invalid arguments...).
        chars: The length of the whole result the model reads.
        node: The graph node that ran the tool (``tools`` in a tool loop).
    """

    call_id: str
    name: str | None
    result: str
    status: str = "ok"
    chars: int = 0
    node: str | None = None
    kind: str = field(default="tool_result", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "kind": self.kind,
            "call_id": self.call_id,
            "name": self.name,
            "result": self.result,
            "status": self.status,
            "chars": self.chars,
            "node": self.node,
        }


@dataclass(frozen=True)
class AnswerEvent:
    """The run finished: ``answer`` is what ``aanswer`` returns for the same call (usage
    included)."""

    answer: Answer
    kind: str = field(default="answer", init=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"kind": self.kind, "answer": self.answer.to_dict()}


Event = StepEvent | ProgressEvent | TokenEvent | ToolCallEvent | ToolResultEvent | AnswerEvent


def tool_event(payload: dict[str, Any]) -> ToolCallEvent | ToolResultEvent:
    """The event of a tool loop's report (``to_dict()``'s form,
    :mod:`longctx.graphs.calls.tool_events`)."""
    fields = {k: v for k, v in payload.items() if k != "kind"}
    return ToolCallEvent(**fields) if payload["kind"] == "tool_call" else ToolResultEvent(**fields)


_CUSTOM: dict[str, type[Any]] = {
    "tool_call": ToolCallEvent,
    "tool_result": ToolResultEvent,
    "progress": ProgressEvent,
}


def custom_event(payload: Any) -> Event | None:
    """The event a node wrote to LangGraph's custom stream (``get_stream_writer()(payload)``) in an
    event's ``to_dict()`` form: ``tool_call``, ``tool_result``, ``progress`` (its absolute ``done``
    and ``total``) or ``step`` (``{"kind": "step", "step": {...}}``); ``None`` for any other
    payload, or one whose fields do not fit (a node's own use of the custom stream)."""
    if not isinstance(payload, dict):
        return None
    kind = payload.get("kind")
    try:
        if kind == "step":
            return StepEvent(plain_step(payload["step"]))
        cls = _CUSTOM.get(kind) if isinstance(kind, str) else None
        return None if cls is None else cls(**{k: v for k, v in payload.items() if k != "kind"})
    except (KeyError, TypeError, ValueError):
        return None


__all__ = [
    "AnswerEvent",
    "Event",
    "ProgressEvent",
    "StepEvent",
    "TokenEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "custom_event",
    "plain_step",
    "tool_event",
]
