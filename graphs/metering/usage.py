"""Usage accounting: a LangChain callback that counts every chat-model call of one answer, and
a meter of the time an answer waits for a model it shares with other answers (queued, not its
own)."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, dispatch_custom_event
from langchain_core.outputs import LLMResult
from langchain_core.runnables.config import var_child_runnable_config

from longctx.graphs.calls.llm import reply_usage
from longctx.graphs.calls.prompt_text import counted_prompt
from longctx.retrieval.contract import Usage

#: Custom callback event carrying the usage of calls made outside this process (a Ray worker's
#: extraction calls): ``dispatch_custom_event(USAGE_EVENT, usage_dict, config=config)``.
USAGE_EVENT = "longctx.usage"
#: The ``Usage`` counts such an event adds: every whole-number field (calls and tokens), read from
#: the dataclass so a new counter needs no edit here; not the times (the answer measures its own)
#: nor the ``earlier_*`` of a resumed run (never sent by this answer).
EVENT_COUNTERS = tuple(
    f.name for f in fields(Usage) if type(f.default) is int and not f.name.startswith("earlier_")
)


#: Custom callback event carrying the wall seconds of an index-time build done inside an answer
#: (RAPTOR's tree, HippoRAG's graph): ``{"seconds": s}``, added to that answer's
#: ``Usage.index_seconds``.
INDEX_SECONDS_EVENT = "longctx.index_seconds"


_INDEX_TIME: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "longctx_index_time", default=False
)


@contextlib.contextmanager
def index_time() -> Iterator[None]:
    """Count the chat calls made inside (this context, and the threads and tasks that copy it) as
    index-time work: built once and reused by later questions (``Usage.index_*``)."""
    token = _INDEX_TIME.set(True)
    try:
        yield
    finally:
        _INDEX_TIME.reset(token)


def at_index_time() -> bool:
    """Whether a chat call made now is index-time work (inside :func:`index_time`)."""
    return _INDEX_TIME.get()


def report_index_seconds(seconds: float) -> None:
    """Add ``seconds`` of index-time build to the running answer's ``Usage.index_seconds`` (a build
    outside a run, such as a ceiling's or a benchmark's, has no answer to add them to)."""
    if var_child_runnable_config.get() is not None:
        dispatch_custom_event(INDEX_SECONDS_EVENT, {"seconds": seconds})


#: Characters of one sent message kept for the record (its head and tail; a 128K-token prompt is
#: ~500 KB).
MAX_MESSAGE_CHARS = 24_000


def sent_messages(messages: list[Any], limit: int = MAX_MESSAGE_CHARS) -> list[dict[str, Any]]:
    """``[{"role", "content"}]`` of one call's messages, each content cut in the middle beyond
    ``limit`` characters with a marker saying how many were left out (the drill-down's "messages
    sent").

    An assistant turn that called tools also has ``tool_calls`` (``[{"id", "name", "args"}]``,
    its content often empty) and a tool result ``tool_call_id``, ``name`` and ``status``, so the
    record shows what an agent asked for and what it read."""
    out: list[dict[str, Any]] = []
    for m in messages:
        content = m.content if isinstance(m.content, str) else str(m.content)
        if len(content) > limit:
            half = limit // 2
            content = (
                f"{content[:half]}\n[... {len(content) - 2 * half:,} characters not kept in this "
                f"record ...]\n{content[-half:]}"
            )
        record: dict[str, Any] = {"role": getattr(m, "type", "user"), "content": content}
        calls = getattr(m, "tool_calls", None)
        if calls:
            record["tool_calls"] = [
                {"id": c.get("id"), "name": c.get("name"), "args": c.get("args")} for c in calls
            ]
        if getattr(m, "type", None) == "tool":
            record |= {"tool_call_id": m.tool_call_id, "name": m.name, "status": m.status}
        out.append(record)
    return out


class UsageTracker(BaseCallbackHandler):
    """Counts calls, failures and tokens across all chat-model calls of a run (thread-safe).

    Token counts come from the model's ``usage_metadata`` (OpenAI-compatible servers and
    the embedded model report it). A model that reports none is counted with its tokenizer and
    the usage is flagged ``estimated``.
    """

    def __init__(self, count: Callable[[str], int] | None = None) -> None:
        self.count = count  # the model's tokenizer, for replies that report no usage
        self._lock = threading.Lock()
        self._prompts: dict[UUID, str] = {}
        self._messages: dict[UUID, list[dict[str, Any]]] = {}
        self._index_runs: set[UUID] = set()  # calls started inside index_time()
        self.usage = Usage()
        self.errors: list[str] = []
        #: The messages of the last call that finished: what produced the answer (capped, see
        #: :func:`sent_messages`).
        self.last_messages: list[dict[str, Any]] = []

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Remember the prompt text in case the reply carries no usage (with its tool-call arguments
        and tool schemas: :func:`~graphs.calls.prompt_text.counted_prompt`), and the messages
        sent."""
        flat = [m for batch in messages for m in batch]
        text = counted_prompt(flat, kwargs.get("invocation_params"))
        with self._lock:
            self._prompts[run_id] = text
            self._messages[run_id] = sent_messages(messages[0] if messages else [])
            if at_index_time():
                self._index_runs.add(run_id)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add one call and its tokens (a cache hit counts as a free cached call)."""
        with self._lock:
            prompt = self._prompts.pop(run_id, "")
            self.last_messages = self._messages.pop(run_id, self.last_messages)
            at_index = run_id in self._index_runs
            self._index_runs.discard(run_id)
        generations = [gen for batch in response.generations for gen in batch]
        # the prompt is sent once per call, however many generations come back
        parts = [
            reply_usage(
                getattr(g, "message", None), prompt if i == 0 else "", g.text, count=self.count
            )
            for i, g in enumerate(generations)
        ]
        with self._lock:
            if any(p.get("cached_calls") for p in parts):
                self.usage.cached_calls += 1
                return
            self.usage.llm_calls += 1
            self.usage.prompt_tokens += sum(p["prompt_tokens"] for p in parts)
            self.usage.cached_prompt_tokens += sum(p.get("cached_prompt_tokens", 0) for p in parts)
            self.usage.completion_tokens += sum(p["completion_tokens"] for p in parts)
            self.usage.estimated = self.usage.estimated or any(p["estimated"] for p in parts)
            if at_index:
                self.usage.index_llm_calls += 1
                self.usage.index_prompt_tokens += sum(p["prompt_tokens"] for p in parts)
                self.usage.index_completion_tokens += sum(p["completion_tokens"] for p in parts)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a failed call; failures are never dropped silently."""
        with self._lock:
            self._prompts.pop(run_id, None)
            self._messages.pop(run_id, None)
            self._index_runs.discard(run_id)
            self.usage.failed_calls += 1
            self.errors.append(f"{type(error).__name__}: {error}")

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Add the usage of calls made elsewhere and reported as a :data:`USAGE_EVENT`, or the
        seconds of an index-time build reported as an :data:`INDEX_SECONDS_EVENT`."""
        if name == INDEX_SECONDS_EVENT:
            with self._lock:
                self.usage.index_seconds += float(data["seconds"])
            return
        if name != USAGE_EVENT:
            return
        other = Usage.from_dict(data)
        with self._lock:
            for name in EVENT_COUNTERS:
                setattr(self.usage, name, getattr(self.usage, name) + getattr(other, name))
            self.usage.estimated = self.usage.estimated or other.estimated


class QueueMeter:
    """Seconds one answer spent queued for a shared model: while at least one of its calls waits
    for the model's lock and none of its calls holds it (thread-safe; parallel calls of one answer
    waiting on each other are its own time, not queueing)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting = 0
        self._holding = 0
        self._since: float | None = None
        self._seconds = 0.0

    @property
    def seconds(self) -> float:
        """Queued seconds so far (an interval still open counts up to now)."""
        with self._lock:
            return self._seconds + (
                time.perf_counter() - self._since if self._since is not None else 0.0
            )

    def _change(self, waiting: int, holding: int) -> None:
        with self._lock:
            now = time.perf_counter()
            self._waiting += waiting
            self._holding += holding
            queued = self._waiting > 0 and self._holding == 0
            if queued and self._since is None:
                self._since = now
            elif not queued and self._since is not None:
                self._seconds += now - self._since
                self._since = None


_METER: contextvars.ContextVar[QueueMeter | None] = contextvars.ContextVar(
    "longctx_queue_meter", default=None
)


@contextlib.contextmanager
def metering_queue() -> Iterator[QueueMeter]:
    """Meter the queueing of the code run inside (this context, and the threads and tasks that copy
    it)."""
    meter = QueueMeter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


@contextlib.contextmanager
def shared_model_lock(lock: Any, key: str | None = None) -> Iterator[None]:
    """Hold ``lock`` (one model instance shared by concurrent answers); the wait for it is
    metered as the current answer's queued time, not its own. ``key`` goes to a lock that takes
    one (a :class:`~graphs.calls.prefix_lock.PrefixAffinityLock`: the prompt the call will run)."""
    acquire = functools.partial(lock.acquire, key) if key is not None else lock.acquire
    meter = _METER.get()
    if meter is None:
        acquire()
        try:
            yield
        finally:
            lock.release()
        return
    meter._change(+1, 0)
    try:
        acquire()
    except BaseException:
        meter._change(-1, 0)
        raise
    meter._change(-1, +1)
    try:
        yield
    finally:
        lock.release()
        meter._change(0, -1)
