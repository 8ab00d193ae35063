"""Each sync/async twin runs the same scenario to the same outcome.

The twins (PAI's ``call_structured``/``acall_structured``, the validated call's
``call_validated``/``acall_validated``, structured's ``document_lock``/``adocument_lock``, the
OpenAI model's ``_generate``/``_agenerate``) share one body (:mod:`longctx.graphs.runtime.twins`)
and differ only in how they wait. Every scenario below runs through each twin and is held to one
expectation, so a fix made to one twin and not the other fails here.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from pydantic import BaseModel, ConfigDict

import longctx.graphs.structured.flight as flight
from longctx import ChatModelError, make_chat_model
from longctx.graphs.calls.llm import run_client
from longctx.graphs.calls.validated_call import acall_validated, bind_function, call_validated
from longctx.graphs.pai import prompts as P
from longctx.graphs.pai.calls import KeepContextArgs, acall_structured, call_structured
from longctx.graphs.prompts import RETRY_NOTE
from longctx.graphs.runtime.twins import blocking, run_blocking
from longctx.graphs.structured.flight import adocument_lock, document_lock
from tests.scripted_tools import (
    AsyncToolScriptedChatModel,
    ToolScriptedChatModel,
    malformed_tool_call,
)
from tests.servers import LoopbackServer, QuietHandler

PROMPT = "Is this chunk relevant to the revenue of Halvorsen Maritime?"


def scripted(
    replies: list[Any], *, native_async: bool, supports_tools: bool = True
) -> ToolScriptedChatModel:
    """A model answering its n-th call with ``replies[n]`` (the sync-only kind, or one with its
    own ``_agenerate``)."""
    cls = AsyncToolScriptedChatModel if native_async else ToolScriptedChatModel
    llm = cls(
        reply_fn=lambda prompt, tools: replies[len(llm.calls) - 1], supports_tools=supports_tools
    )
    return llm


def retried(error: str) -> str:
    return PROMPT + RETRY_NOTE.format(error=error)


# -- graphs.runtime.twins --------------------------------------------------------------------------
def test_run_blocking_refuses_a_coroutine_that_suspends():
    assert run_blocking(blocking(len)("abc")) == 3
    with pytest.raises(RuntimeError, match="suspended"):
        run_blocking(asyncio.sleep(0))


# -- PAI's structured calls --------------------------------------------------------------------
PAI_CASES = {
    "valid at once": (
        dict(mode="tools", retries=2),
        [[{"keep_context": True}]],
        dict(items=[{"keep_context": True}], attempts=1, errors=[]),
    ),
    "malformed, then valid": (
        dict(mode="tools", retries=2),
        [malformed_tool_call('{"keep'), [{"keep_context": "false"}]],
        dict(
            items=[{"keep_context": False}],
            attempts=2,
            errors=["tool call arguments are not valid JSON: '{\"keep'"],
        ),
    ),
    "invalid past the retries": (
        dict(mode="tools", retries=1),
        [[{"keep": 1}], "no verdict"],
        dict(
            items=[],
            attempts=2,
            errors=[
                (
                    'invalid arguments {"keep": 1}: keep_context: Field required; keep: Extra '
                    "inputs are not permitted"
                ),
                "no JSON object in the reply: 'no verdict'",
            ],
        ),
    ),
    "json mode": (
        dict(mode="json", retries=2),
        ['Verdict: ```json\n{"keep_context": true}\n```'],
        dict(items=[{"keep_context": True}], attempts=1, errors=[]),
    ),
}
PAI_TWINS = {
    "sync": lambda llm, **kw: call_structured(llm, PROMPT, **kw),
    "async": lambda llm, **kw: asyncio.run(acall_structured(llm, PROMPT, **kw)),
}


@pytest.mark.parametrize("native_async", [False, True], ids=["sync-only model", "async model"])
@pytest.mark.parametrize("twin", list(PAI_TWINS))
@pytest.mark.parametrize("case", list(PAI_CASES))
def test_pai_structured_call_twins_agree(case, twin, native_async):
    options, replies, expected = PAI_CASES[case]
    llm = scripted(replies, native_async=native_async, supports_tools=options["mode"] == "tools")
    out = PAI_TWINS[twin](
        llm,
        item_model=KeepContextArgs,
        function=P.KEEP_CONTEXT_FUNCTION,
        tool_choice="Query",
        max_tokens=64,
        **options,
    )
    assert (out.items, out.attempts, out.errors, out.mode) == (
        expected["items"],
        expected["attempts"],
        expected["errors"],
        options["mode"],
    )
    assert [c["prompt"] for c in llm.calls] == [PROMPT] + [
        retried(e) for e in expected["errors"][: expected["attempts"] - 1]
    ]
    assert all((c["max_tokens"], c["temperature"]) == (64, 0.0) for c in llm.calls)
    tools = [(c.get("tool_choice"), len(c.get("tools") or [])) for c in llm.calls]
    assert tools == [("Query", 1) if options["mode"] == "tools" else (None, 0)] * len(llm.calls)


# -- structured's validated calls --------------------------------------------------------------
class Rows(BaseModel):
    model_config = ConfigDict(extra="forbid")
    records: list[dict]


def parse_rows(arguments: list[Any]) -> list[dict]:
    return [row for args in arguments for row in Rows.model_validate(args).records]


VALIDATED_CASES = {
    "no rows is a valid reply": (
        2,
        [[{"records": []}]],
        dict(ok=True, value=[], attempts=1, errors=[]),
    ),
    "invalid, then valid": (
        2,
        [[{"rows": 1}], [{"records": [{"entity": "A"}]}]],
        dict(
            ok=True,
            value=[{"entity": "A"}],
            attempts=2,
            errors=[
                "invalid arguments: records: Field required; rows: Extra inputs are not permitted"
            ],
        ),
    ),
    "malformed past the retries": (
        1,
        [malformed_tool_call('{"records": ['), AIMessage(content="none")],
        dict(
            ok=False,
            value=None,
            attempts=2,
            errors=[
                "tool call arguments are not valid JSON: '{\"records\": ['",
                "no JSON object in the reply: 'none'",
            ],
        ),
    ),
}


def _gated_acall(llm, model, **kw):
    async def run():
        gate = asyncio.Semaphore(1)
        out = await acall_validated(llm, model, PROMPT, parse_rows, gate=gate, **kw)
        assert not gate.locked()  # released after every call
        return out

    return asyncio.run(run())


VALIDATED_TWINS = {
    "sync": lambda llm, model, **kw: call_validated(llm, model, PROMPT, parse_rows, **kw),
    "async": lambda llm, model, **kw: asyncio.run(
        acall_validated(llm, model, PROMPT, parse_rows, **kw)
    ),
    "async, gated": _gated_acall,
}


@pytest.mark.parametrize("twin", list(VALIDATED_TWINS))
@pytest.mark.parametrize("case", list(VALIDATED_CASES))
def test_structured_validated_call_twins_agree(case, twin):
    retries, replies, expected = VALIDATED_CASES[case]
    llm = scripted(replies, native_async=True)
    function = {
        "type": "function",
        "function": {"name": "Query", "parameters": Rows.model_json_schema()},
    }
    model = bind_function(llm, "tools", function, "Query")
    out = VALIDATED_TWINS[twin](llm, model, retries=retries, max_tokens=32, temperature=0.2)
    assert (out.ok, out.value, out.attempts, out.errors) == (
        expected["ok"],
        expected["value"],
        expected["attempts"],
        expected["errors"],
    )
    assert [c["prompt"] for c in llm.calls] == [PROMPT] + [
        retried(e) for e in expected["errors"][: expected["attempts"] - 1]
    ]
    assert all(
        (c["max_tokens"], c["temperature"], c["tool_choice"]) == (32, 0.2, "Query")
        for c in llm.calls
    )
    assert (
        out.usage["prompt_tokens"] == sum(len(c["prompt"].split()) for c in llm.calls) > 0
    )  # every reply counted once


# -- the cross-process document lock -----------------------------------------------------------
FINGERPRINT = "ab12" * 16
_HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.lockf(fd, fcntl.LOCK_EX, 1, int(sys.argv[2]))
print("held", flush=True)
sys.stdin.readline()
"""
_PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(sys.argv[2]))
    print("free")
except OSError:
    print("held")
"""


def _lock_args(folder: Path) -> list[str]:
    return [str(folder / ".flights.lock"), str(int(FINGERPRINT[:15], 16))]


def free_for_others(folder: Path) -> bool:
    """Whether another process can take the document's lock now."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *_lock_args(folder)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout.strip() == "free"


class Holder:
    """Another process holding the document's lock until this one has found it busy once."""

    def __init__(self, folder: Path, monkeypatch):
        folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLD, *_lock_args(folder)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "held"
        self.busy_tries = 0
        try_lock = flight._try_lock

        def counting(fd: int, offset: int) -> bool:
            got = try_lock(fd, offset)
            if not got:
                self.busy_tries += 1
                if self.busy_tries == 1:  # found busy: let the holder go
                    assert self.proc.stdin is not None
                    self.proc.stdin.write("go\n")
                    self.proc.stdin.flush()
            return got

        monkeypatch.setattr(flight, "_try_lock", counting)


def _enter_sync(folder, body):
    with document_lock(folder, FINGERPRINT) as waited:
        return waited, body()


def _enter_async(folder, body):
    async def run():
        async with adocument_lock(folder, FINGERPRINT) as waited:
            return waited, body()

    return asyncio.run(run())


LOCK_TWINS = {"sync": _enter_sync, "async": _enter_async}


@pytest.mark.parametrize("twin", list(LOCK_TWINS))
@pytest.mark.parametrize("case", ["no folder", "free", "held by another process", "body raises"])
def test_document_lock_twins_agree(case, twin, tmp_path, monkeypatch):
    folder = None if case == "no folder" else tmp_path / "cache"
    holder = Holder(tmp_path / "cache", monkeypatch) if case == "held by another process" else None

    def body() -> bool:
        held_here = folder is not None and not free_for_others(folder)
        if case == "body raises":
            raise KeyError("boom")
        return held_here

    if case == "body raises":
        with pytest.raises(KeyError, match="boom"):
            LOCK_TWINS[twin](folder, body)
    else:
        waited, held_here = LOCK_TWINS[twin](folder, body)
        assert waited is (case == "held by another process")
        assert held_here is (case != "no folder")
    if holder is not None:
        assert holder.busy_tries >= 1 and holder.proc.wait(timeout=60) == 0
    if folder is None:
        assert not (tmp_path / "cache").exists()
    else:
        assert free_for_others(folder)  # released on the way out, however the body ended


# -- the OpenAI chat model's _generate / _agenerate -------------------------------------------
def completion(text: str) -> bytes:
    return json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
        }
    ).encode()


NOT_JSON = (200, b'{"id": "c", "choices": [{"message": ')
NO_CHOICES = (
    200,
    json.dumps(
        {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": []}
    ).encode(),
)
NOT_FOUND = (
    404,
    json.dumps({"error": {"message": "no such model", "type": "invalid_request_error"}}).encode(),
)
OK = (200, completion("Paris"))

#: name -> (the model's max_retries, the server's replies in order, the outcome: the reply's text or
#: (error, status, retries), the retries paused for)
CHAT_CASES = {
    "answers at once": (2, [OK], "Paris", []),
    "malformed twice, then answers": (2, [NOT_JSON, NO_CHOICES, OK], "Paris", [1, 2]),
    "malformed past the retries": (
        2,
        [NOT_JSON, NO_CHOICES, NOT_JSON],
        ("ChatModelError", 200, 2),
        [1, 2],
    ),
    "max_retries unset: $LONGCTX_MAX_RETRIES": (
        None,
        [NO_CHOICES, NO_CHOICES],
        ("ChatModelError", 200, 1),
        [1],
    ),
    "an error status is not ours to retry": (0, [NOT_FOUND], ("ChatModelError", 404, 0), []),
}


class ScriptedServer:
    """A loopback Chat Completions server: each script (a URL of its own, so no client pool is
    shared between tests) answers its n-th request with ``replies[n]`` and records the bodies."""

    def __init__(self) -> None:
        self.scripts: dict[str, tuple[list[tuple[int, bytes]], list[dict]]] = {}
        lock = threading.Lock()
        scripts = self.scripts

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.read_body())
                with lock:
                    replies, bodies = scripts[self.path.split("/")[2]]
                    bodies.append(body)
                    status, data = replies[len(bodies) - 1]
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = LoopbackServer(Handler)

    def script(self, replies: list[tuple[int, bytes]]) -> tuple[str, list[dict]]:
        """A base URL answered by ``replies``, and the list its request bodies are recorded in."""
        name = f"s{len(self.scripts)}"
        self.scripts[name] = (replies, [])
        return f"{self.server.url}/{name}", self.scripts[name][1]


@pytest.fixture(scope="module")
def chat_server():
    stub = ScriptedServer()
    yield stub
    stub.server.close()


async def _in_run_session(llm, prompt, **kw):
    async with run_client(llm) as run_llm:
        return await run_llm.ainvoke(prompt, **kw)


CHAT_TWINS = {
    "sync": lambda llm, prompt, **kw: llm.invoke(prompt, **kw),
    "async": lambda llm, prompt, **kw: asyncio.run(llm.ainvoke(prompt, **kw)),
    "async, a run's own session": lambda llm, prompt, **kw: asyncio.run(
        _in_run_session(llm, prompt, **kw)
    ),
}


@pytest.mark.parametrize("twin", list(CHAT_TWINS))
@pytest.mark.parametrize("case", list(CHAT_CASES))
def test_openai_model_generate_twins_agree(case, twin, chat_server, monkeypatch):
    from longctx.agents import openai_chat

    max_retries, replies, expected, paused = CHAT_CASES[case]
    monkeypatch.setenv("LONGCTX_MAX_RETRIES", "1")
    pauses: list[int] = []
    monkeypatch.setattr(openai_chat, "retry_delay", lambda retry: pauses.append(retry) or 0.0)
    url, bodies = chat_server.script(replies)
    llm = make_chat_model("openai:m", base_url=url, max_retries=max_retries)
    try:
        outcome: Any = CHAT_TWINS[twin](llm, PROMPT, max_tokens=7).content
    except ChatModelError as exc:
        outcome = (type(exc).__name__, exc.status, exc.retries)
        assert url in str(exc)
    assert outcome == expected
    assert (
        len(bodies) == len(replies) and pauses == paused
    )  # every scripted reply asked for, none more
    assert all(
        b
        == {
            "messages": [{"content": PROMPT, "role": "user"}],
            "model": "m",
            "stream": False,
            "max_tokens": 7,
        }
        for b in bodies
    )
