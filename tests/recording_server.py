"""A recording OpenAI-compatible server on loopback, for tests that check what a run *sends*.

It answers ``/v1/chat/completions`` with ``reply(request)`` after ``latency`` seconds: a
``str`` is the reply's text, a :func:`tool_reply` an assistant turn calling tools (OpenAI's
``tool_calls``, ``finish_reason="tool_calls"``); as server-sent chunks when the request says
``stream`` (one per word, and ``tool_calls`` deltas: each call's id and name, then its
arguments in pieces, as OpenAI streams them). Its usage counts the words of every message's
text, of the assistant turns' tool-call arguments and of the ``tools`` schemas sent
(:func:`counted_words`), as a server counts what it reads;
``/v1/responses`` (OpenAI's Responses API, which BrowseComp-Plus's official agent calls) with the
same ``reply(request)``: text as a ``message`` output item, a :func:`tool_reply` as
``function_call`` items (ids ``fc_<index>``, call ids ``call_<index>`` unless given), its usage
counted as the chat route counts (:func:`responses_words`; output: the reply's words and the
calls' arguments); ``/v1/embeddings`` with deterministic bag-of-words vectors (or
``embed(text)``'s), and records every request body (``requests``, ``embedding_requests``), the
headers of each, and the most requests in flight at once (``max_in_flight``). Other routes (a
tokenizer's probe of ``/tokenize``) get 404; their paths are recorded in ``other_paths``.

With ``prompt_cache`` set it reports cached prompt tokens as a provider with a prompt cache
does: the words a request's prompt shares at its start with the previous chat request's (its
token unit is the word; with ``cache_size=N``, the longest start shared with one of the last N
requests', as a provider's cache holding N prompts), under the name that provider uses
(``"openai"``: ``usage.prompt_tokens_details.cached_tokens``; ``"deepseek"``:
``usage.prompt_cache_hit_tokens``; ``"moonshot"``: ``usage.cached_tokens``; ``"llama.cpp"``:
``timings.cache_n``, in the last chunk of a streamed reply as ``llama-server`` sends it).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

import numpy as np

from tests.loopback_server import LoopbackServer

EMBEDDING_DIM = 64


def bag_of_words_vector(text: str) -> list[float]:
    """A unit vector over hashed lowercase words: texts sharing words are similar; a text without
    words gets the first axis (a real server sends no zero vector, which the embedders refuse)."""
    v = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    for word in text.lower().split():
        v[int(hashlib.md5(word.encode()).hexdigest(), 16) % EMBEDDING_DIM] += 1.0
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        v[0] = norm = 1.0
    return (v / norm).tolist()


def prompt_of(request: dict[str, Any]) -> str:
    """The text of every message of a chat request, joined."""
    return "\n".join(str(m.get("content") or "") for m in request.get("messages", []))


def tool_call(
    name: str, arguments: dict[str, Any] | str, call_id: str | None = None
) -> dict[str, Any]:
    """One scripted call of tool ``name`` for :func:`tool_reply` (``arguments``: a dict, or a string
    sent as it is, e.g. malformed JSON); ``call_id`` defaults to ``call_<index>``."""
    return {"name": name, "arguments": arguments, "id": call_id}


def tool_reply(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    """What ``reply(request)`` returns for an assistant turn that calls tools: ``calls`` made with
    :func:`tool_call`, ``content`` the text sent beside them (empty: ``null``, as OpenAI
    sends it)."""
    return {"content": content, "tool_calls": list(calls)}


def openai_tool_calls(calls: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``calls`` (:func:`tool_call`) as a Chat Completions message's ``tool_calls``."""
    return [
        {
            "id": c.get("id") or f"call_{i}",
            "type": "function",
            "function": {
                "name": c["name"],
                "arguments": c["arguments"]
                if isinstance(c["arguments"], str)
                else json.dumps(c["arguments"]),
            },
        }
        for i, c in enumerate(calls)
    ]


def counted_text(request: dict[str, Any]) -> str:
    """What a chat request's prompt usage counts, as the budget guard counts it
    (:func:`longctx.graphs.calls.prompt_text.counted_prompt`): every message's text
    (:func:`prompt_of`), the name and arguments of each assistant tool call, and the ``tools``
    schemas (as JSON)."""
    parts = [prompt_of(request)]
    for m in request.get("messages", []):
        for c in m.get("tool_calls") or []:
            parts.append(f"{c['function']['name']} {c['function']['arguments']}")
    if request.get("tools"):
        parts.append(json.dumps(request["tools"]))
    return "\n".join(parts)


def counted_words(request: dict[str, Any]) -> list[str]:
    """The words of :func:`counted_text`: the stub's prompt tokens (a word a token)."""
    return counted_text(request).split()


def responses_words(request: dict[str, Any]) -> list[str]:
    """A Responses request's prompt words: each input item's text (a message's content, a
    function call's name and arguments, a function call output), then the ``tools`` as JSON; an
    ``input`` string is one user message's text, as the API reads it."""
    parts = []
    given = request.get("input", [])
    for item in [{"content": given}] if isinstance(given, str) else given:
        content = item.get("content")
        if isinstance(content, list):
            content = " ".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
        if content:
            parts.append(str(content))
        if item.get("type") == "function_call":
            parts.append(f"{item.get('name')} {item.get('arguments')}")
        if item.get("type") == "function_call_output":
            parts.append(str(item.get("output")))
    if request.get("tools"):
        parts.append(json.dumps(request["tools"]))
    return "\n".join(parts).split()


def responses_output(reply: str | dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """``reply`` as a Responses body's ``output`` items, and the text its usage counts."""
    if isinstance(reply, str):
        message = {
            "type": "message",
            "id": "msg_0",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply, "annotations": []}],
        }
        return [message], reply
    calls = openai_tool_calls(reply["tool_calls"])
    items: list[dict[str, Any]] = []
    if reply["content"]:
        items += responses_output(reply["content"])[0]
    items += [
        {
            "type": "function_call",
            # unique per item, as OpenAI's (the official client keys each call's output by it)
            "id": f"fc_{c['id']}",
            "call_id": c["id"],
            "name": c["function"]["name"],
            "arguments": c["function"]["arguments"],
            "status": "completed",
        }
        for c in calls
    ]
    text = " ".join([reply["content"], *(c["function"]["arguments"] for c in calls)])
    return items, text


def shared_words(a: Sequence[str], b: Sequence[str]) -> int:
    """How many words two prompts (as word lists) share at their start: the caching stub's
    cached tokens."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def tool_call_deltas(calls: list[dict[str, Any]], piece: int = 8) -> list[dict[str, Any]]:
    """Streamed ``tool_calls`` deltas of a message's ``calls``, as OpenAI sends them: for each call
    its index, id, type and name with empty arguments, then its arguments ``piece`` characters at
    a time."""
    deltas: list[dict[str, Any]] = []
    for i, c in enumerate(calls):
        head = {"index": i, "id": c["id"], "type": "function"}
        deltas.append(
            {"tool_calls": [head | {"function": {"name": c["function"]["name"], "arguments": ""}}]}
        )
        args = c["function"]["arguments"]
        deltas += [
            {"tool_calls": [{"index": i, "function": {"arguments": args[k : k + piece]}}]}
            for k in range(0, len(args), piece)
        ]
    return deltas


class RecordingServer(LoopbackServer):
    """Serve on ``127.0.0.1`` in a background thread; use as a context manager."""

    def __init__(
        self,
        reply: Callable[[dict[str, Any]], str | dict[str, Any]] | None = None,
        *,
        latency: float = 0.0,
        prompt_cache: str | None = None,
        cache_size: int = 1,
        embed: Callable[[str], Any] | None = None,
        embedding_data: Callable[[list[dict[str, Any]]], Any] | None = None,
        streams: bool = True,
    ):
        self.reply = reply or (lambda request: "Paris")
        #: The vector sent for one input text (default :func:`bag_of_words_vector`; a test may
        #: change it between requests, e.g. to NaN, another dimension or float64 values).
        self.embed = embed or bag_of_words_vector
        #: What becomes of an embeddings reply's ``data`` list before it is sent (a hostile server).
        self.embedding_data = embedding_data or (lambda data: data)
        #: ``False``: a server that does not stream, answering a ``stream`` request with one
        #: JSON body.
        self.streams = streams
        self.latency = latency
        self.prompt_cache = prompt_cache
        self.cache_size = cache_size
        self._recent: list[list[str]] = []
        #: Cached prompt tokens reported for each chat request, in the order received
        #: (with ``prompt_cache``).
        self.cached_tokens: list[int] = []
        self.requests: list[dict[str, Any]] = []
        self.embedding_requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.other_paths: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        super().__init__()

    def _chat(self, request: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.latency)
            reply = self.reply(request)
        finally:
            with self._lock:
                self.in_flight -= 1
        message: dict[str, Any] = {"role": "assistant", "content": reply}
        text = reply
        if isinstance(reply, dict):  # a tool_reply
            calls = openai_tool_calls(reply["tool_calls"])
            message = {"role": "assistant", "content": reply["content"] or None}
            message["tool_calls"] = calls
            text = " ".join([reply["content"], *(f"{c['function']['arguments']}" for c in calls)])
        words = counted_words(request)
        prompt_tokens = len(words)
        body: dict[str, Any] = {
            "id": "rec",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "rec"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if "tool_calls" in message else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(text.split()),
                "total_tokens": prompt_tokens + len(text.split()),
            },
        }
        if self.prompt_cache:
            self._report_cached(body, words)
        return body

    def _responses(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to a ``/responses`` request, as OpenAI's Responses API shapes it."""
        time.sleep(self.latency)
        output, text = responses_output(self.reply(request))
        prompt_tokens, completion = len(responses_words(request)), len(text.split())
        return {
            "id": "resp_rec",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": request.get("model", "rec"),
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": request.get("tool_choice", "auto"),
            "tools": request.get("tools", []),
            "usage": {
                "input_tokens": prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": completion,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": prompt_tokens + completion,
            },
        }

    def _report_cached(self, body: dict[str, Any], words: list[str]) -> None:
        """Put the words this prompt shares at its start with the previous prompt into ``body``, as
        ``prompt_cache`` names them."""
        with self._lock:
            shared = max((shared_words(seen, words) for seen in self._recent), default=0)
            self._recent = [*self._recent, words][-self.cache_size :]
            self.cached_tokens.append(shared)
        if self.prompt_cache == "openai":
            body["usage"]["prompt_tokens_details"] = {"cached_tokens": shared}
        elif self.prompt_cache == "deepseek":
            body["usage"].update(
                prompt_cache_hit_tokens=shared, prompt_cache_miss_tokens=len(words) - shared
            )
        elif self.prompt_cache == "moonshot":
            body["usage"]["cached_tokens"] = shared
        elif self.prompt_cache == "llama.cpp":
            body["timings"] = {"cache_n": shared, "prompt_n": len(words) - shared}
        else:
            raise ValueError(f"unknown prompt_cache {self.prompt_cache!r}")

    def _embeddings(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to an ``/embeddings`` request (kept in :attr:`embedding_requests`)."""
        self.embedding_requests.append(request)
        inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": self.embed(str(t))}
            for i, t in enumerate(inputs)
        ]
        return {
            "object": "list",
            "data": self.embedding_data(data),
            "model": request.get("model"),
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def _send(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send({"object": "list", "data": [{"id": "rec", "object": "model"}]})

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if not self.path.endswith(("/chat/completions", "/embeddings", "/responses")):
                    # like the OpenAI API: no tokenize routes (a tokenizer probe falls back)
                    with server._lock:
                        server.other_paths.append(self.path)
                    self.send_error(404)
                    return
                with server._lock:
                    server.headers.append(dict(self.headers))
                if self.path.endswith("/embeddings"):
                    self._send(server._embeddings(request))
                    return
                with server._lock:
                    server.requests.append(request)
                if self.path.endswith("/responses"):
                    self._send(server._responses(request))
                    return
                if request.get("stream") and server.streams:
                    self._stream(
                        server._chat(request),
                        include_usage=bool(
                            (request.get("stream_options") or {}).get("include_usage")
                        ),
                    )
                    return
                self._send(server._chat(request))

            def _stream(self, reply: dict[str, Any], *, include_usage: bool) -> None:
                data = sse_body(reply, include_usage=include_usage)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def sse_body(reply: dict[str, Any], *, include_usage: bool) -> bytes:
    """The reply as server-sent chunks, one per word (the usage in a last chunk when asked),
    then ``[DONE]``."""
    message = reply["choices"][0]["message"]
    words = [] if message["content"] is None else message["content"].split(" ")
    head = {k: reply[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    deltas = [{"role": "assistant", "content": ""}] + [
        {"content": w if i == 0 else " " + w} for i, w in enumerate(words)
    ]
    deltas += tool_call_deltas(message.get("tool_calls") or [])
    chunks = [head | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    finish = reply["choices"][0]["finish_reason"]
    chunks.append(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if include_usage:
        chunks.append(head | {"choices": [], "usage": reply["usage"]})
    if "timings" in reply:  # llama.cpp's server sends its timings with the last chunk
        chunks[-1] = chunks[-1] | {"timings": reply["timings"]}
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
