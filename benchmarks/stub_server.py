"""A minimal OpenAI-compatible chat server with a fixed latency, for orchestration benchmarks.

    python -m benchmarks.stub_server --port 8099 --latency 0.05 --reply-tokens 200
        [--tools --properties 4]

It answers ``POST /v1/chat/completions`` after sleeping ``latency`` seconds, with a reply
of ``reply-tokens`` words and usage counted with cl100k, so a benchmark can subtract the
known server time and see the client's own overhead. ``--fail-every N`` injects failures
for fault-tolerance tests. Serves loopback only.

With ``--tools``, a request that carries ``tools`` is answered with tool calls (PAI's
functions): ``properties`` parallel ``{metric, subject}`` calls (or one ``{"items": [...]}``
call for a list-valued schema), and a deterministic ``keep_context`` verdict (true for about
one chunk in ten); the structured strategy's ``define_table`` gets a one-column table and its
``record_rows`` gets ``{"records": []}``.
Without the flag, tools are ignored as before.

With ``--content``, RAPTOR's summary requests and HippoRAG's OpenIE requests get replies made of
their own text (``benchmarks.stub_content``: a summary of the budgeted length, the passage's
names and numbers, triples over them), so an index build against the stub has a realistic shape.
``POST /v1/embeddings`` always answers with deterministic hashed bag-of-words vectors (384
dimensions, unit length), so the ``openai`` embedder pointed at the stub embeds at HTTP speed;
``GET /stats`` counts those requests apart (``embedding_requests``, ``embedded_texts``).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from benchmarks.stub_content import content_reply, embeddings_reply
from longctx.retrieval.tokens import count_tokens


def tool_arguments(function: dict, prompt: str, properties: int) -> list[dict]:
    """The arguments of the tool calls answering a request for ``function`` (PAI's schemas)."""
    fields = function.get("parameters", {}).get("properties", {})
    items = [
        {"metric": "revenue", "subject": f"Company {i} annual report"} for i in range(properties)
    ]
    if "keep_context" in fields:
        return [{"keep_context": zlib.crc32(prompt.encode()) % 10 == 0}]
    if "sub_question" in fields:
        return [
            {"sub_question": f"What was the revenue of Company {i}?"} for i in range(properties)
        ]
    if "items" in fields:
        return [{"items": items}]
    if "records" in fields:  # the structured strategy's extraction: a document stating no row
        return [{"records": []}]
    if "attributes" in fields:  # the structured strategy's plan: a one-column table
        return [
            {
                "table": "facts",
                "entity": "entity",
                "entity_description": "what a row is about",
                "time": None,
                "attributes": [
                    {
                        "name": "fact",
                        "type": "text",
                        "unit": "",
                        "description": "a fact",
                        "static": False,
                    }
                ],
            }
        ]
    return items


def tool_message(request: dict, prompt: str, properties: int) -> tuple[dict, str]:
    """An assistant message with tool calls for the request's first tool, and its argument text."""
    calls: list[dict[str, Any]] = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {
                "name": request["tools"][0]["function"]["name"],
                "arguments": json.dumps(args),
            },
        }
        for i, args in enumerate(
            tool_arguments(request["tools"][0]["function"], prompt, properties)
        )
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}, "".join(
        c["function"]["arguments"] for c in calls
    )


FAILURE_MODES = ("500", "429", "timeout", "malformed")
#: Modes of ``--fault``: the failure modes plus a well-formed reply with an empty ``choices`` list.
FAULT_MODES = (*FAILURE_MODES, "empty_choices")


def make_handler(
    latency: float,
    reply_tokens: int,
    *,
    tools: bool = False,
    properties: int = 4,
    fail_every: int = 0,
    hang_seconds: float = 30.0,
    fault: str | None = None,
    fault_first: int = 0,
    usage: str = "cl100k",
    prompt_cache: int = 0,
    hold_after: int = 0,
    content: bool = False,
):
    """A request handler class bound to one latency and reply size.

    With ``tools``, requests carrying tools get tool calls. With ``fail_every=N``, every N-th chat
    request fails, cycling through HTTP 500, 429 with ``Retry-After: 0``, a hang past the client's
    timeout, and malformed JSON. With ``fault=MODE`` (one of :data:`FAULT_MODES`), the first
    ``fault_first`` chat requests fail that way (every request when ``fault_first`` is 0).
    ``GET /stats`` returns ``{"chat_requests": N}``. ``usage="approx"`` reports UTF-8 bytes / 4 as
    token counts instead of cl100k's: exact counting costs the stub ~1 ms of CPU per 4K-token
    prompt, more than a 32-way fan-out against 50 ms leaves per request on a 2-core machine
    (``bench_structured``). ``prompt_cache=N``: report, as OpenAI does
    (``usage.prompt_tokens_details.cached_tokens``), the tokens of the longest start each prompt
    shares with one of the last N chat requests' (1: the previous one), as a provider's prompt
    cache holding N prompts would serve them. ``hold_after=N``: chat requests after the first N
    wait ``hang_seconds`` more before their reply (calls a test knows are still in flight, however
    slow the machine). ``content``: RAPTOR summaries and HippoRAG OpenIE answered from the
    request's own text.
    """
    if usage not in ("cl100k", "approx"):
        raise ValueError(f"usage must be 'cl100k' or 'approx', got {usage!r}")
    if fault is not None and fault not in FAULT_MODES:
        raise ValueError(f"fault must be one of {FAULT_MODES}, got {fault!r}")
    stub = _Stub(
        latency=latency,
        reply=" ".join(f"note{i}" for i in range(reply_tokens)),
        tools=tools,
        properties=properties,
        fail_every=fail_every,
        hang_seconds=hang_seconds,
        fault=fault,
        fault_first=fault_first,
        count=count_tokens if usage == "cl100k" else (lambda text: len(text.encode()) // 4),
        prompt_cache=prompt_cache,
        hold_after=hold_after,
        content=content,
    )
    return _handler_class(stub)


def _handler_class(stub: _Stub) -> type[BaseHTTPRequestHandler]:
    """The request handler class that answers from ``stub``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # keep benchmark output clean
            return

        def setup(self) -> None:
            super().setup()
            # Headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm
            # and the client's delayed ACK add ~40 ms to every response.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _send(self, code: int, body: dict) -> None:
            _send_json(self, code, body)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/stats"):
                self._send(200, {"chat_requests": stub.requests_seen, **stub.embedded})
                return
            self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.endswith("/embeddings"):
                self._send(200, stub.embeddings(json.loads(raw)))
                return
            if not self.path.endswith("/chat/completions"):
                self.send_error(404)  # no tokenize routes: a tokenizer probe falls back to cl100k
                return
            seen, failure = stub.next_chat()
            if failure is not None:
                _send_failure(self, failure, stub.hang_seconds)
                return
            self._send(200, stub.chat_reply(json.loads(raw), seen))

    return Handler


class _Stub:
    """What a stub server's handler shares across requests: its options, counters and recent
    prompts."""

    def __init__(
        self,
        *,
        latency: float,
        reply: str,
        tools: bool,
        properties: int,
        fail_every: int,
        hang_seconds: float,
        fault: str | None,
        fault_first: int,
        count: Any,
        prompt_cache: int,
        hold_after: int,
        content: bool,
    ) -> None:
        self.latency, self.reply, self.tools, self.properties = latency, reply, tools, properties
        self.fail_every, self.hang_seconds = fail_every, hang_seconds
        self.fault, self.fault_first, self.count = fault, fault_first, count
        self.prompt_cache, self.hold_after, self.content = prompt_cache, hold_after, content
        self.counter = itertools.count(1)
        self.lock = threading.Lock()
        self.requests_seen = 0
        self.embedded = {"embedding_requests": 0, "embedded_texts": 0}
        self.recent: list[str] = []
        # imported only here: importing graphs costs the stub's start ~1 s, which every test using
        # it paid
        if prompt_cache:
            from longctx.graphs.calls.prefix_lock import shared_start

            self.shared_start = shared_start

    def embeddings(self, request: dict) -> dict:
        """The reply to an ``/embeddings`` request, counted in :attr:`embedded`."""
        body = embeddings_reply(request)
        with self.lock:
            self.embedded["embedding_requests"] += 1
            self.embedded["embedded_texts"] += len(body["data"])
        return body

    def next_chat(self) -> tuple[int, str | None]:
        """Count a chat request: its number, and the failure mode it gets (``None``: a reply)."""
        with self.lock:
            self.requests_seen += 1
            seen = self.requests_seen
        if self.fault is not None and (self.fault_first == 0 or seen <= self.fault_first):
            return seen, self.fault
        if self.fail_every:
            with self.lock:
                n = next(self.counter)
            if n % self.fail_every == 0:
                return seen, FAILURE_MODES[(n // self.fail_every - 1) % len(FAILURE_MODES)]
        return seen, None

    def chat_reply(self, request: dict, seen: int) -> dict:
        """The reply to the ``seen``-th chat request, after the latency (and the hold, past
        ``hold_after``)."""
        prompt = "\n".join(m.get("content", "") for m in request.get("messages", []))
        held = self.hang_seconds if self.hold_after and seen > self.hold_after else 0.0
        time.sleep(self.latency + held)
        text = (
            "Therefore, the answer is stub."
            if prompt.rstrip().endswith("Your answer:")
            else self.reply
        )
        if self.content:
            text = content_reply(request) or text
        message, finish = {"role": "assistant", "content": text}, "stop"
        if self.tools and request.get("tools"):
            (message, text), finish = tool_message(request, prompt, self.properties), "tool_calls"
        usage: dict = {"prompt_tokens": self.count(prompt), "completion_tokens": self.count(text)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if self.prompt_cache:
            usage["prompt_tokens_details"] = {"cached_tokens": self._cached_tokens(prompt, usage)}
        return {
            "id": "stub",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }

    def _cached_tokens(self, prompt: str, usage: dict) -> int:
        """The tokens of the longest start ``prompt`` shares with one of the last prompts."""
        with self.lock:
            shared = max((self.shared_start(seen, prompt) for seen in self.recent), default=0)
            self.recent[:] = [*self.recent, prompt][-self.prompt_cache :]
        return min(self.count(prompt[:shared]), usage["prompt_tokens"]) if shared else 0


def _send_json(handler: BaseHTTPRequestHandler, code: int, body: dict) -> None:
    data = json.dumps(body).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _send_failure(handler: BaseHTTPRequestHandler, mode: str, hang_seconds: float) -> None:
    """Answer with the failure ``mode`` (one of :data:`FAULT_MODES`)."""
    if mode == "500":
        _send_json(
            handler, 500, {"error": {"message": "injected server error", "type": "server_error"}}
        )
    elif mode == "429":
        handler.send_response(429)
        body = b'{"error": {"message": "injected rate limit", "type": "rate_limit"}}'
        handler.send_header("Retry-After", "0")
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    elif mode == "empty_choices":
        empty = {"id": "stub", "object": "chat.completion", "created": 0, "model": "stub"}
        _send_json(handler, 200, {**empty, "choices": []})
    elif mode == "timeout":
        time.sleep(hang_seconds)
        _send_json(handler, 200, {})
    else:
        data = b'{"id": "stub", "choices": [{"message": '
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


class _Server(ThreadingHTTPServer):
    """Loopback server with a deep accept backlog: the default 5 drops bursts of 32 connections."""

    request_queue_size = 256
    daemon_threads = True


@contextlib.contextmanager
def stub_server(
    latency: float = 0.05,
    reply_tokens: int = 200,
    startup_timeout: float = 30.0,
    *,
    tools: bool = False,
    properties: int = 4,
    fail_every: int = 0,
    hang_seconds: float = 30.0,
    fault: str | None = None,
    fault_first: int = 0,
    usage: str = "cl100k",
    prompt_cache: int = 0,
    hold_after: int = 0,
    content: bool = False,
) -> Iterator[str]:
    """Run the stub in its own process (so it shares no GIL with the client); yields its base URL.

    ``usage``: how the replies count tokens (``"cl100k"``, exact; ``"approx"``, bytes / 4, cheap).
    ``content``: replies made of the request's text for RAPTOR's and HippoRAG's index calls.
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "benchmarks.stub_server", "--port", str(port)]
    cmd += [
        "--latency",
        str(latency),
        "--reply-tokens",
        str(reply_tokens),
        "--fail-every",
        str(fail_every),
    ]
    cmd += ["--hang-seconds", str(hang_seconds), "--usage", usage]
    if tools:
        cmd += ["--tools", "--properties", str(properties)]
    if prompt_cache:
        cmd += ["--prompt-cache", str(prompt_cache)]
    if hold_after:
        cmd += ["--hold-after", str(hold_after)]
    if content:
        cmd += ["--content"]
    if fault:
        cmd += ["--fault", fault, "--fault-first", str(fault_first)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the stub server did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> None:
    """Serve until interrupted."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--latency", type=float, default=0.05, help="seconds per call")
    p.add_argument("--reply-tokens", type=int, default=200, help="words in each memory reply")
    p.add_argument(
        "--fail-every", type=int, default=0, help="fail every N-th chat request (0: never)"
    )
    p.add_argument(
        "--hang-seconds", type=float, default=30.0, help="how long an injected timeout hangs"
    )
    p.add_argument(
        "--fault", choices=FAULT_MODES, help="fail chat requests this way (see --fault-first)"
    )
    p.add_argument(
        "--fault-first",
        type=int,
        default=0,
        help="with --fault: fail only the first N chat requests (0: all)",
    )
    p.add_argument(
        "--tools", action="store_true", help="answer requests that carry tools with tool calls"
    )
    p.add_argument(
        "--properties",
        type=int,
        default=4,
        help="property calls per extraction request (with --tools)",
    )
    p.add_argument(
        "--usage",
        choices=("cl100k", "approx"),
        default="cl100k",
        help="token counts of the usage: exact cl100k, or UTF-8 bytes / 4 (cheap)",
    )
    p.add_argument(
        "--prompt-cache",
        type=int,
        default=0,
        help="report as cached the start a prompt shares with one of the last N (0: off)",
    )
    p.add_argument(
        "--hold-after",
        type=int,
        default=0,
        help="chat requests after the first N wait --hang-seconds more (0: none)",
    )
    p.add_argument(
        "--content",
        action="store_true",
        help="answer RAPTOR summaries and HippoRAG OpenIE from the request's own text",
    )
    args = p.parse_args()
    handler = make_handler(
        args.latency,
        args.reply_tokens,
        tools=args.tools,
        properties=args.properties,
        fail_every=args.fail_every,
        hang_seconds=args.hang_seconds,
        fault=args.fault,
        fault_first=args.fault_first,
        usage=args.usage,
        prompt_cache=args.prompt_cache,
        hold_after=args.hold_after,
        content=args.content,
    )
    server = _Server(("127.0.0.1", args.port), handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
