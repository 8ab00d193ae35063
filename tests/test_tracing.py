"""LangSmith tracing, opt-in by the standard environment variables, against a local stand-in API."""

import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from benchmarks.stub_server import stub_server

LANGSMITH_KEY = "ls-test-secret-7f3a"
OPENAI_KEY = "sk-test-secret-91bc"


class FakeLangSmith:
    """Accepts LangSmith's ingestion requests on loopback and keeps every body."""

    def __init__(self):
        self.bodies: list[tuple[str, dict, bytes]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return

            def do_GET(self):  # /info: 404 makes the client use its defaults
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.bodies.append((self.path, dict(self.headers), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            do_PATCH = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        """Stop serving and close the socket (a listening socket nobody serves hangs clients)."""
        self.server.shutdown()
        self.server.server_close()

    def runs(self) -> dict[str, dict]:
        """Runs by id, merged from multipart parts (``post.<id>``, ``post.<id>.outputs``, ...)."""
        runs: dict[str, dict] = {}
        for _, headers, body in self.bodies:
            boundary = re.search(r"boundary=(\S+)", headers.get("Content-Type", ""))
            if not boundary:
                continue
            for part in body.split(b"--" + boundary.group(1).encode()):
                m = re.search(rb'name="(post|patch)\.([0-9a-f-]+)(?:\.(\w+))?"', part)
                if not m or b"\r\n\r\n" not in part:
                    continue
                payload = json.loads(part.split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n", 1)[0])
                run = runs.setdefault(m.group(2).decode(), {})
                run.update({m.group(3).decode(): payload} if m.group(3) else payload)
        return runs


def reset_langsmith_caches() -> None:
    """langsmith caches env lookups and its client per process; tests switch them."""
    from langsmith import run_trees, utils

    utils.get_env_var.cache_clear()
    utils.get_tracer_project.cache_clear()
    run_trees._CLIENT = None


@pytest.fixture
def langsmith(monkeypatch):
    fake = FakeLangSmith()
    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    monkeypatch.setenv("LANGSMITH_ENDPOINT", fake.url)
    monkeypatch.setenv("LANGSMITH_API_KEY", LANGSMITH_KEY)
    monkeypatch.setenv("LANGSMITH_PROJECT", "longctx-tests")
    reset_langsmith_caches()
    yield fake
    from langchain_core.tracers.langchain import get_client, wait_for_all_tracers

    # Drain every queued run while the server lives: runs left for a dead endpoint make
    # every later flush in this process wait through the client's retries.
    wait_for_all_tracers()
    get_client().flush()
    fake.close()
    monkeypatch.undo()
    reset_langsmith_caches()


def test_one_trace_per_answer_with_nodes_llm_usage_and_tags(langsmith, monkeypatch, planted_corpus):
    from langchain_core.tracers.langchain import wait_for_all_tracers

    from longctx import Question, answer, make_chat_model

    with stub_server(latency=0.0) as url:
        llm = make_chat_model("openai:stub", base_url=url, api_key=OPENAI_KEY, max_retries=0)
        question = Question(
            text="What is the secret code of the museum vault?",
            metadata={"benchmark": "synth", "sample_id": "q-7"},
        )
        answer(planted_corpus, question, llm=llm, top_k=2)
        wait_for_all_tracers()
    runs = langsmith.runs()
    roots = [r for r in runs.values() if r.get("id") == r.get("trace_id")]
    assert len(roots) == 1
    root = roots[0]
    assert root["name"] == "longctx.rag"
    assert {"strategy:rag", "model:stub", "benchmark:synth", "sample:q-7"} <= set(root["tags"])
    assert (
        root["extra"]["metadata"]["model"] == "stub"
    )  # the name only: a server address may carry credentials
    children = {
        r["name"]: r for r in runs.values() if r.get("trace_id") == root["id"] and r is not root
    }
    assert {"retrieve", "build_prompt", "generate"} <= set(children)
    llm_runs = [
        r for r in runs.values() if r.get("run_type") == "llm" and r.get("trace_id") == root["id"]
    ]
    assert len(llm_runs) == 1
    outputs = json.dumps(llm_runs[0].get("outputs", {}))
    assert (
        '"input_tokens"' in outputs and '"output_tokens"' in outputs
    )  # token usage on the LLM run
    everything = b"".join(body for _, _, body in langsmith.bodies)
    assert LANGSMITH_KEY.encode() not in everything and OPENAI_KEY.encode() not in everything


def test_no_tracing_without_the_environment(planted_corpus):
    """Tracing is opt-in: in a fresh process without LANGSMITH_TRACING nothing is sent.

    A subprocess, because langsmith caches the tracing switch once read in a process.
    """
    import subprocess
    import sys

    fake = FakeLangSmith()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGSMITH_", "LANGCHAIN_"))}
    env.update(LANGSMITH_ENDPOINT=fake.url, LANGSMITH_API_KEY=LANGSMITH_KEY)
    script = (
        "from longctx import Corpus, answer; from tests.scripted import ScriptedChatModel;"
        "from langchain_core.tracers.langchain import wait_for_all_tracers;"
        "answer(Corpus.from_texts(['the vault code is 7421']), 'code?', "
        "llm=ScriptedChatModel(replies=['7421']), top_k=1);wait_for_all_tracers(); print('done')"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=os.getcwd(),
    )
    fake.close()
    assert out.stdout.strip() == "done", out.stderr[-2000:]
    assert fake.bodies == []
