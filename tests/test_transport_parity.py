"""A run's lean transport (agents/lean_transport.py) sends what the OpenAI SDK sends and fails as
it fails.

Every test drives the same chat model twice against one scripted loopback server: inside
``longctx.graphs.calls.llm.run_client`` (the run's aiohttp session, our transport) and outside it
(the SDK's own ``post``). The server records each request's headers and raw body bytes and
answers from a script of (status, headers, body), so retries, server-requested waits,
``x-should-retry``, timeouts and the errors after the retries are compared request by
request with the SDK, not with our reading of it.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import longctx.agents.lean_transport as lean
from longctx.agents.chat_models import ChatModelError, make_chat_model
from longctx.graphs.calls.llm import run_client

OK = (
    200,
    {},
    {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Paris"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    },
)

#: The transport's retry schedule, before the fixture below replaces it with no wait.
SCHEDULE = lean.retry_delay

#: Headers set by the HTTP client library itself, not by the SDK: they differ between httpx
#: and aiohttp (and neither value changes what an OpenAI-compatible server does).
TRANSPORT_HEADERS = {"accept-encoding", "connection", "host", "content-length"}


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A client that gave up (the timeout tests) leaves a broken pipe: expected, not printed."""


class ScriptedServer:
    """Loopback server answering chat requests from ``script`` in order (the last entry repeats)."""

    def __init__(self, script, *, hang: float = 0.0):
        self.script, self.hang = list(script), hang
        self.requests: list[tuple[dict[str, str], bytes, float]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                return

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests.append(
                    ({k.lower(): v for k, v in self.headers.items()}, raw, time.monotonic())
                )
                if server.hang:
                    time.sleep(server.hang)
                status, headers, body = server.script[
                    min(len(server.requests), len(server.script)) - 1
                ]
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch):
    """The schedule's waits (0.5 s and up) are the same function on both paths; tests skip them."""
    import openai._base_client as sdk

    monkeypatch.setattr(lean, "retry_delay", lambda retry: 0.0)
    monkeypatch.setattr(sdk, "INITIAL_RETRY_DELAY", 0.0, raising=False)


def model(url: str, **options):
    options.setdefault("max_retries", 2)
    return make_chat_model(
        "openai:m", base_url=url, default_headers={"X-Team": "longctx"}, **options
    )


async def ask(
    url: str, *, lean_path: bool, prompt: str = "Capital of France? Zürich – 東京", **options
):
    llm = model(url, **options)
    if not lean_path:
        return await llm.ainvoke(prompt, max_tokens=16)
    async with run_client(llm) as run_llm:
        assert run_llm._transport is not None
        return await run_llm.ainvoke(prompt, max_tokens=16)


def both(script, *, hang: float = 0.0, **options):
    """Per path: the reply or the raised error, and the requests the server saw."""
    out = {}
    for lean_path in (True, False):
        with ScriptedServer(script, hang=hang) as server:
            try:
                result = asyncio.run(ask(server.url, lean_path=lean_path, **options))
            except Exception as exc:  # noqa: BLE001 - compared between the paths below
                exc.args = tuple(str(a).replace(server.url, "URL") for a in exc.args)
                result = exc
            out["lean" if lean_path else "sdk"] = (result, server.requests)
    return out


def test_the_same_bytes_and_headers_go_out():
    seen = both([OK])
    (lean_reply, lean_requests), (sdk_reply, sdk_requests) = seen["lean"], seen["sdk"]
    assert (
        lean_reply.content == sdk_reply.content == "Paris"
        and lean_reply.usage_metadata == sdk_reply.usage_metadata
    )
    (lean_headers, lean_body, _), (sdk_headers, sdk_body, _) = lean_requests[0], sdk_requests[0]
    assert lean_body == sdk_body and "Zürich – 東京".encode() in lean_body
    mine = {k: v for k, v in lean_headers.items() if k not in TRANSPORT_HEADERS}
    theirs = {k: v for k, v in sdk_headers.items() if k not in TRANSPORT_HEADERS}
    assert mine == theirs
    assert (
        mine["x-team"] == "longctx"
        and mine["authorization"] == "Bearer not-needed"
        and mine["x-stainless-retry-count"] == "0"
    )


@pytest.mark.parametrize(
    "script,requests",
    [
        ([(500, {}, {"error": {"message": "boom"}}), OK], 2),
        ([(429, {"retry-after": "0"}, {"error": {"message": "slow down"}}), (503, {}, {}), OK], 3),
        ([(409, {}, {}), OK], 2),
        ([(400, {"x-should-retry": "true"}, {"error": {"message": "try again"}}), OK], 2),
    ],
)
def test_retried_failures_are_retried_as_the_sdk_does(script, requests):
    seen = both(script)
    for path in ("lean", "sdk"):
        reply, sent = seen[path]
        assert getattr(reply, "content", reply) == "Paris", path
        assert [h["x-stainless-retry-count"] for h, _, _ in sent] == [
            str(i) for i in range(requests)
        ], path


@pytest.mark.parametrize(
    "script,status,requests",
    [
        ([(500, {"x-should-retry": "false"}, {"error": {"message": "do not retry"}})], 500, 1),
        ([(400, {}, {"error": {"message": "bad request"}})], 400, 1),
        ([(429, {"retry-after": "999"}, {"error": {"message": "come back later"}})], 429, 1),
        ([(503, {}, {"error": {"message": "down"}})], 503, 3),
        ([(401, {}, {"error": {"message": "bad key"}})], 401, 1),
    ],
)
def test_failures_raise_what_the_sdk_raises(script, status, requests):
    seen = both(script)
    (mine, lean_sent), (theirs, sdk_sent) = seen["lean"], seen["sdk"]
    assert isinstance(mine, ChatModelError) and isinstance(theirs, ChatModelError)
    assert mine.status == theirs.status == status and len(lean_sent) == len(sdk_sent) == requests
    # the retries made: counted on the lean path, read from the SDK's rule and the response on
    # its own
    assert mine.retries == theirs.retries == requests - 1 and (
        status == 401 or f"after {requests - 1} retries" in str(mine)
    )
    assert str(mine) == str(theirs)
    assert type(mine.__cause__) is type(theirs.__cause__)
    assert str(mine.__cause__) == str(theirs.__cause__)


def test_a_server_requested_wait_is_honoured():
    with ScriptedServer([(429, {"retry-after-ms": "300"}, {}), OK]) as server:
        reply = asyncio.run(ask(server.url, lean_path=True))
    assert reply.content == "Paris"
    (_, _, first), (_, _, second) = server.requests
    assert 0.25 <= second - first < 5


def test_a_hung_server_times_out_as_with_the_sdk():
    seen = both([OK], hang=2.0, timeout=0.3, max_retries=1)
    (mine, lean_sent), (theirs, sdk_sent) = seen["lean"], seen["sdk"]
    assert (
        isinstance(mine, ChatModelError)
        and mine.status is None
        and mine.retries == theirs.retries == 1
    )
    assert (
        type(mine.__cause__) is type(theirs.__cause__)
        and type(mine.__cause__).__name__ == "APITimeoutError"
    )
    assert len(lean_sent) == len(sdk_sent) == 2


def test_a_refused_connection_is_a_connection_error_as_with_the_sdk():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # bound, never listening: refused
        errors = []
        for lean_path in (True, False):
            with pytest.raises(ChatModelError) as info:
                asyncio.run(ask(url, lean_path=lean_path, max_retries=1))
            errors.append(info.value)
    mine, theirs = errors
    assert mine.status is None and mine.retries == theirs.retries == 1
    assert (
        type(mine.__cause__) is type(theirs.__cause__)
        and type(mine.__cause__).__name__ == "APIConnectionError"
    )


def test_clients_it_cannot_reproduce_keep_the_sdk_path():
    import openai

    azure = openai.AsyncAzureOpenAI(
        api_key="k", api_version="2024-06-01", azure_endpoint="http://127.0.0.1:1"
    )
    assert not lean.LeanTransport.serves(azure)
    assert not lean.LeanTransport.serves(
        openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:1/v1", default_query={"a": "1"})
    )
    assert lean.LeanTransport.serves(
        openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:1/v1")
    )
    with ScriptedServer([OK]) as server:
        llm = model(server.url, default_query={"api-version": "1"})

        async def run():
            async with run_client(llm) as run_llm:
                assert run_llm._transport is None
                return await run_llm.ainvoke("Hi")

        assert asyncio.run(run()).content == "Paris"
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        {
            "messages": [{"role": "user", "content": 'Zürich – 東京 "quoted"\n\ttab \u2028'}],
            "model": "m",
            "temperature": 0.1,
        },
        {
            "model": "m",
            "max_completion_tokens": 2**40,
            "stop": ["\n\n"],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        },
        {"model": "m", "metadata": {"at": datetime.datetime(2024, 5, 6, 7, 8, 9, 123456)}},
        {"model": "m", "logit_bias": {"50256": -100}, "top_p": 1.0, "seed": -3},
    ],
)
def test_bodies_are_the_sdks_bytes(body):
    from openai._utils._json import openapi_dumps

    assert lean.encode_body(body) == openapi_dumps(body)


def test_a_non_finite_number_is_refused_as_by_the_sdk():
    with pytest.raises(ValueError):
        lean.encode_body({"model": "m", "temperature": float("nan")})


@pytest.mark.parametrize(
    "headers,retried",
    [
        ({}, False),
        ({"x-should-retry": "true"}, True),
        ({"retry-after": "121"}, False),
        ({"retry-after": "120"}, False),
    ],
)
def test_should_retry_a_400(headers, retried):
    assert lean.should_retry(400, headers) is retried


@pytest.mark.parametrize(
    "status,headers,retried",
    [
        (408, {}, True),
        (409, {}, True),
        (429, {}, True),
        (500, {}, True),
        (599, {}, True),
        (404, {}, False),
        (500, {"x-should-retry": "false"}, False),
        (503, {"retry-after-ms": "999999"}, False),
    ],
)
def test_should_retry(status, headers, retried):
    assert lean.should_retry(status, headers) is retried


@pytest.mark.parametrize(
    "headers,wait",
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "1.5", "retry-after-ms": "100"}, 0.1),
        ({"retry-after": "0"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "500"}, None),
        ({}, None),
    ],
)
def test_wait_before_a_retry(headers, wait, monkeypatch):
    monkeypatch.setattr(
        lean, "retry_delay", lambda retry: -1.0
    )  # marks "the schedule" (the fixture made it 0)
    assert lean.wait_before(1, headers) == (-1.0 if wait is None else wait)


def test_the_schedule_doubles_to_eight_seconds_with_jitter():
    for retry, full in ((1, 0.5), (2, 1.0), (3, 2.0), (5, 8.0), (9, 8.0)):
        assert all(0.75 * full <= SCHEDULE(retry) <= full for _ in range(20))


def test_the_environments_proxy_is_looked_up_once(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.local:3128")
    monkeypatch.setenv("NO_PROXY", "internal.example")
    assert lean.env_proxy("http://api.example/v1/chat/completions") == "http://proxy.local:3128"
    assert lean.env_proxy("http://internal.example/v1") is None
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.delenv("NO_PROXY")
    for name in ("http_proxy", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert lean.env_proxy("http://api.example/v1") is None
