"""``astream_answer`` / ``stream_answer``: one answer, with events as the strategy's graph runs.

The run is :func:`longctx.agents.aanswer`'s own (same arguments, same ``Answer``, same usage). A
single-question run streams its graph with LangGraph's own stream modes
(:mod:`longctx.graphs.metering.budget_stop`), and the events are its chunks, in the order the
graph produced them: ``updates`` of the graph's nodes give the steps, ``custom`` what a node wrote
in an event's form (a tool loop's calls and results), ``messages`` the tokens and tool-call chunks
when the run's model streams. A batched run (MemAgent) and what happens outside a graph (an index
being built) still come from a callback handler added to ``callbacks`` and from what nodes report
through :mod:`longctx.graphs.runtime.events` (MemAgent's memory per chunk, fan-out progress).
Closing the iterator (a client that went away) cancels the run: no model call starts after it;
calls in flight finish; MemAgent keeps its checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import threading
from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk

from longctx.agents.api import aanswer
from longctx.agents.chat_models import streaming_model
from longctx.agents.events import (
    AnswerEvent,
    Event,
    ProgressEvent,
    StepEvent,
    TokenEvent,
    custom_event,
    plain_step,
    tool_event,
)
from longctx.graphs.runtime.event_loop import private_loop
from longctx.graphs.runtime.events import Report, reporting_to
from longctx.graphs.runtime.run_config import with_handler
from longctx.retrieval.contract import Answer, Corpus, Question


class EventCollector(BaseCallbackHandler):
    """Turns a single run's graph stream, or a batched run's node outputs (callbacks), and its
    nodes' reports (:mod:`longctx.graphs.runtime.events`) into events.

    The graph stream's chunks arrive as ``graph`` reports, after a ``start`` one that turns the
    callbacks' steps, tokens (when the stream has ``messages``) and the sink's tool events off, so
    that none comes twice. Through the callbacks, a node of the run's graph is a chain run whose
    parent is the graph's own run and whose ``langgraph_node`` is its name; nested graphs (a
    strategy run inside a node) are left out. ``put`` is called from whichever thread the node ran
    on.
    """

    run_inline = True

    def __init__(self, put: Callable[[Event], None]) -> None:
        self.put = put
        self._lock = threading.Lock()
        self._root: UUID | None = None
        self._nodes: set[UUID] = set()
        self._progress: dict[str, list[Any]] = {}  # stage -> [done, total]
        self._calls: dict[UUID, str | None] = {}  # model calls in flight -> their graph node
        # the run streams its graph (a single run): its tool events and steps come from the
        # stream's chunks, and its tokens too when it streams "messages" (its model streams); the
        # callbacks below, the batched runs' path, stand aside for them
        self.streamed = False
        self.streamed_tokens = False

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the graph's run and its node runs."""
        if self.streamed:
            return
        node = (metadata or {}).get("langgraph_node")
        with self._lock:
            if self._root is None and node is None:
                self._root = run_id
            elif (
                parent_run_id is not None
                and parent_run_id == self._root
                and node == kwargs.get("name")
            ):
                self._nodes.add(run_id)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A node finished: one event per step it wrote."""
        if self.streamed:
            return
        with self._lock:
            if run_id not in self._nodes:
                return
            self._nodes.discard(run_id)
        if isinstance(outputs, dict):
            for step in outputs.get("steps") or []:
                self.put(StepEvent(plain_step(step)))

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A node failed: forget it."""
        with self._lock:
            self._nodes.discard(run_id)

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember which node makes the call, for its streamed tokens (not a call tagged
        ``nostream``, as LangGraph's messages stream leaves it out)."""
        if self.streamed_tokens or (tags and "nostream" in tags):
            return
        with self._lock:
            self._calls[run_id] = (metadata or {}).get("langgraph_node")

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: Any = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """A streamed piece of a reply (only models that stream send these; a content list is not
        text): its text and the pieces of tool calls its chunk carries."""
        if run_id not in self._calls:
            return
        text = token if isinstance(token, str) else ""
        message = getattr(chunk, "message", None)
        pieces = tuple(dict(c) for c in getattr(message, "tool_call_chunks", None) or ())
        if text or pieces:
            self.put(TokenEvent(text, self._calls[run_id], pieces))

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """A call finished."""
        with self._lock:
            self._calls.pop(run_id, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A call failed."""
        with self._lock:
            self._calls.pop(run_id, None)

    def report(self, report: Report) -> None:
        """A node's report: a step of the (first) question, a tool call or result, or a stage's
        progress added up."""
        if report["type"] == "graph":
            self._graph(report["namespace"], report["mode"], report["data"])
            return
        if report["type"] == "tool":
            if not self.streamed:  # streamed, the loop's events come from the custom stream
                self.put(tool_event(report["event"]))
            return
        if report["type"] == "step":
            if report["question"] == 0:
                self.put(StepEvent(plain_step(report["step"])))
            return
        self._progress_of(report)

    def _progress_of(self, report: Report) -> None:
        """A stage's progress, added up: its count so far."""
        with self._lock:
            state = self._progress.setdefault(report["stage"], [0, None])
            if report["done"] is not None:
                state[0] = report["done"]
            if report["total"] is not None:
                state[1] = report["total"]
            state[0] += report["advance"]
            # under the lock: counts arrive in order
            self.put(ProgressEvent(report["stage"], state[0], state[1]))

    def _graph(self, namespace: tuple[str, ...], mode: str, data: Any) -> None:
        """A chunk of the run's LangGraph stream: ``messages``: a piece of a streamed reply (a
        whole reply, a node's output message, is not a token); ``custom``: what a node wrote, when
        it has an event's form; ``updates`` of the graph itself (not of a subgraph, whose steps
        reach the graph's state as its node finishes): one event per step a node wrote."""
        if mode == "start":
            self.streamed, self.streamed_tokens = True, "messages" in data
        elif mode == "messages":
            message, metadata = data
            if isinstance(message, AIMessageChunk):
                self._token(message, metadata.get("langgraph_node"))
        elif mode == "custom":
            event = custom_event(data)
            if isinstance(event, ProgressEvent):
                advance = {"stage": event.stage, "advance": 0}
                self._progress_of({**advance, "done": event.done, "total": event.total})
            elif event is not None:
                self.put(event)
        elif mode == "updates" and not namespace and isinstance(data, dict):
            for update in data.values():
                for step in _written_steps(update):
                    self.put(StepEvent(plain_step(step)))

    def _token(self, message: AIMessageChunk, node: str | None) -> None:
        """A streamed piece of a reply: its text and its pieces of tool calls."""
        text = message.content if isinstance(message.content, str) else ""
        pieces = tuple(dict(c) for c in message.tool_call_chunks or ())
        if text or pieces:
            self.put(TokenEvent(text, node, pieces))


def _written_steps(update: Any) -> list[Any]:
    """The steps of a node's update (a dict, or a list of them: a node's several writes)."""
    writes = update if isinstance(update, (list, tuple)) else [update]
    return [step for w in writes if isinstance(w, dict) for step in w.get("steps") or []]


async def _live(
    run: asyncio.Future[Any], events: asyncio.Queue[Event]
) -> AsyncGenerator[Event, None]:
    """The events of ``run`` as they arrive, until it is done and every event it handed over
    is out."""
    while not run.done():
        waiting = asyncio.ensure_future(events.get())
        await asyncio.wait({waiting, run}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            yield waiting.result()
        else:
            waiting.cancel()
        while not events.empty():  # a burst (a wide fan-out's progress) without a wait per event
            yield events.get_nowait()
    await asyncio.sleep(0)  # events a worker thread handed over just before it finished
    while not events.empty():
        yield events.get_nowait()


async def astream_answer(
    corpus: Corpus,
    question: str | Question,
    *,
    callbacks: Any = None,
    streaming: bool | None = None,
    **options: Any,
) -> AsyncIterator[Event]:
    """:func:`longctx.agents.aanswer` as an async iterator of events, ending with the
    :class:`AnswerEvent`.

    Yields a :class:`StepEvent` per step as its graph node finishes (MemAgent: each chunk's
    ``update_memory`` with the memory so far), :class:`ProgressEvent` for fan-outs (MemAgent's
    chunks, PAI's judge calls, the structured strategy's documents, RAPTOR's summaries and
    HippoRAG's passages while the index builds, and what they embed), :class:`TokenEvent` for each
    piece of a reply when the model streams (its text and its pieces of tool calls), a tool loop's
    :class:`ToolCallEvent` per call asked and :class:`ToolResultEvent` per result (in the order
    they happen, :mod:`longctx.graphs.calls.tool_events`), the events a node writes to LangGraph's
    custom stream in an event's ``to_dict()`` form (:func:`longctx.agents.events.custom_event`),
    then the answer's steps not seen live (``live=False``) and the :class:`AnswerEvent`. A model
    call tagged ``nostream`` (LangGraph's mark of an internal call) sends no token.
    ``streaming=True`` makes the model stream (also one named by a spec string,
    ``llm="openai:MODEL"``; see
    :func:`longctx.agents.chat_models.streaming_model`), ``False`` makes it not, ``None`` leaves it
    as it is. ``options`` are :func:`longctx.agents.aanswer`'s (``strategy``, ``llm``, ``budget``,
    config fields...), passed as they are; ``callbacks`` still see the whole run. A failed run
    raises here, after the events before the failure. Closing the iterator early cancels the run.
    """
    if streaming is not None:
        options["llm"] = streaming_model(options.get("llm"), streaming)
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Event] = asyncio.Queue()

    def put(event: Event) -> None:
        loop.call_soon_threadsafe(events.put_nowait, event)

    collector = EventCollector(put)
    # the run's task copies this context, and so do its threads
    with reporting_to(collector.report):
        run = asyncio.ensure_future(
            aanswer(corpus, question, callbacks=with_handler(callbacks, collector), **options)
        )
    sent: Counter[str] = Counter()  # steps sent live, to send the answer's others before it

    def tracked(event: Event) -> Event:
        if isinstance(event, StepEvent):
            sent[_key(event.step)] += 1
        return event

    try:
        async with contextlib.aclosing(_live(run, events)) as live:
            async for event in live:
                yield tracked(event)
        result: Answer = run.result()  # the run's error, if it failed
        for step in result.steps:
            if sent[_key(step)] > 0:
                sent[_key(step)] -= 1
            else:
                yield StepEvent(step, live=False)
        yield AnswerEvent(result)
    finally:
        if not run.done():
            run.cancel()
            # the run has stopped issuing calls (a cancelled MemAgent run: its worker returned)
            await asyncio.wait({run})
        if not run.cancelled():
            run.exception()  # retrieved: it was raised above, or the caller left before it


def _key(step: Any) -> str:
    return json.dumps(step, sort_keys=True, default=str)


_DONE = object()


def stream_answer(corpus: Corpus, question: str | Question, **options: Any) -> Iterator[Event]:
    """:func:`astream_answer` for sync code (a script, Streamlit): the same events, as a plain
    iterator (``options`` are :func:`astream_answer`'s: ``streaming`` and
    :func:`longctx.agents.aanswer`'s, ``callbacks`` included).

    The run goes on the library's private event loop while this thread takes its events;
    closing the iterator early (``break`` out of the loop, Ctrl-C) cancels the run.
    """
    handed: queue.Queue[Any] = queue.Queue()
    started, finished = threading.Event(), threading.Event()

    async def pump() -> None:
        started.set()
        try:
            async for event in astream_answer(corpus, question, **options):
                handed.put(event)
        except BaseException as exc:  # handed to the caller's thread, raised there
            handed.put(_Failed(exc))
            raise
        finally:
            handed.put(_DONE)
            finished.set()

    running = asyncio.run_coroutine_threadsafe(pump(), private_loop())
    try:
        while (item := handed.get()) is not _DONE:
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        if not finished.is_set():
            running.cancel()
            if started.is_set():
                finished.wait()  # the run has stopped issuing calls when this returns


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


__all__ = ["EventCollector", "astream_answer", "stream_answer"]
