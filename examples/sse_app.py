"""A FastAPI app that streams an answer as server-sent events (README, "Streaming into an app").

It needs fastapi, sse-starlette and uvicorn, which the base install leaves out (the ``app`` extra)::

    pip install '.[app]'    # or: pip install fastapi sse-starlette uvicorn
    .venv/bin/uvicorn --factory examples.sse_app:default_app    # examples/corpus, $LONGCTX_LLM
    curl -N 'http://127.0.0.1:8000/answer?q=Where+is+Vantaa+Robotics+based%3F&strategy=memagent'

``GET /answer?q=...&strategy=...`` sends one SSE event per :mod:`longctx.agents.events` event (its
``kind`` as the event name, its ``to_dict()`` as JSON data: ``step``, ``progress``, ``token``,
and a tool-calling strategy's ``tool_call`` and ``tool_result``), ending with ``answer``; a run that
fails ends with an ``error`` event. A client that disconnects cancels the run: no model call
starts after that (``tests/test_streaming.py`` and ``tests/test_tool_events.py`` drive this app).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

try:
    from fastapi import FastAPI
    from sse_starlette import EventSourceResponse
except ImportError as exc:  # said where the example is run, not as a bare ModuleNotFoundError
    raise ImportError(
        "examples/sse_app.py needs fastapi, sse-starlette and uvicorn: pip install "
        f"'.[app]' ({exc})"
    ) from exc

from longctx import Corpus, astream_answer


def make_app(corpus: Corpus, **answer_options: Any) -> FastAPI:
    """The app over ``corpus``; ``answer_options`` go to every :func:`longctx.agents.astream_answer`
    call (``llm=``, ``cache_dir=``, ...)."""
    app = FastAPI(title="longctx streaming answers")

    @app.get("/answer")
    async def answer(q: str, strategy: str = "rag") -> EventSourceResponse:
        async def events() -> AsyncIterator[dict[str, str]]:
            try:
                async for event in astream_answer(corpus, q, strategy=strategy, **answer_options):
                    yield {"event": event.kind, "data": json.dumps(event.to_dict())}
            except Exception as exc:  # noqa: BLE001
                # the client gets the one-line reason instead of a cut stream
                yield {
                    "event": "error",
                    "data": json.dumps({"kind": "error", "error": f"{type(exc).__name__}: {exc}"}),
                }

        return EventSourceResponse(events())

    return app


def default_app() -> FastAPI:
    """The app over ``examples/corpus`` with the default model (``$LONGCTX_LLM``)."""
    return make_app(Corpus.from_path(Path(__file__).parent / "corpus"))
