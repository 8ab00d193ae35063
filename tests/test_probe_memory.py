"""A server's tokenize probe is made once and remembered in the cache folder (#35 item 20).

Each ``select_tokenizer`` call below is what a fresh process does (the in-process choice of
``longctx.graphs.calls.llm.tokenizer_for`` is not involved); the last test runs two real processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longctx.graphs.tokenizers.probe_memory import (
    NO_ROUTE_SECONDS,
    ProbeResult,
    probe_file,
    probe_key,
    remember,
)
from longctx.graphs.tokenizers.tokenize_routes import server_root
from longctx.graphs.tokenizers.tokenizer_choice import ModelFacts, select_tokenizer
from longctx.retrieval.tokenizers import FALLBACK_ID, SERVER_DIALECTS, TokenizerError
from tests.recording_server import RecordingServer
from tests.servers import LoopbackServer, QuietHandler
from tests.test_tokenizers import FakeTokenizeServer

ROOT = Path(__file__).resolve().parent.parent
PROBES = ["/extras/tokenize", "/tokenize", "/tokenize"]  # one per dialect, each answered 404


def facts(url: str, model: str = "my-llama", api_key: str | None = None) -> ModelFacts:
    return ModelFacts(model_id=f"{model} @ {url}", model_name=model, base_url=url, api_key=api_key)


def remembered() -> dict:
    return json.loads(probe_file().read_text()) if probe_file().exists() else {}


def test_a_server_without_tokenize_routes_is_probed_once_until_the_answer_expires():
    with RecordingServer() as server:
        assert select_tokenizer("auto", facts(server.url)).id == FALLBACK_ID
        assert server.other_paths == PROBES
        again = select_tokenizer("auto", facts(server.url))
        assert again.id == FALLBACK_ID and "has no tokenize endpoint" in again.note
        assert server.other_paths == PROBES  # remembered: no request
        entries = remembered()
        (entry,) = entries.values()
        entry["probed_at"] -= NO_ROUTE_SECONDS + 1  # a day later
        probe_file().write_text(json.dumps(entries))
        select_tokenizer("auto", facts(server.url))
        assert server.other_paths == PROBES * 2  # expired: probed again


def test_the_answer_is_kept_per_model_name_and_api_key_never_the_key_itself():
    with RecordingServer() as server:
        for model, key in [
            ("a", None),
            ("b", None),
            ("a", "sk-one"),
            ("a", "sk-two"),
            ("a", "sk-two"),
        ]:
            select_tokenizer("auto", facts(server.url, model, key))
        assert server.other_paths == PROBES * 4  # the last repeats the fourth
    assert len(remembered()) == 4 and "sk-" not in probe_file().read_text()


def test_an_explicit_server_tokenizer_probes_a_server_remembered_without_routes():
    with RecordingServer() as server:
        select_tokenizer("auto", facts(server.url))
        with pytest.raises(TokenizerError, match="no tokenize endpoint"):
            select_tokenizer("server", facts(server.url))
        assert server.other_paths == PROBES * 2


class FlakyServer(LoopbackServer):
    """Answers every tokenize route with ``status`` (503: overloaded), counting the requests."""

    def __init__(self, status: int):
        self.paths: list[str] = []
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):
                self.read_body()
                outer.paths.append(self.path)
                self.send_json(status, {"error": "busy"})

        super().__init__(Handler)


def test_a_transient_failure_is_not_remembered_as_no_route():
    server = FlakyServer(503)
    try:
        select_tokenizer("auto", facts(server.url))
        select_tokenizer("auto", facts(server.url))
        assert server.paths == PROBES * 2 and remembered() == {}
    finally:
        server.close()
    select_tokenizer(
        "auto", facts("http://127.0.0.1:9/v1")
    )  # nothing answers: not remembered either
    assert remembered() == {}


class ShiftingServer(FakeTokenizeServer):
    """A llama.cpp-style server whose vocabulary can change (ids shifted by ``shift``)."""

    shift = 0

    def route(self, path: str, body: dict):
        reply = super().route(path, body)
        if reply is not None and path == "/tokenize":
            return {"tokens": [i + self.shift for i in reply["tokens"]]}
        if reply is not None and path == "/detokenize":
            key = "prompt" if self.dialect == "vllm" else "content"
            return {key: "".join(chr(i - self.shift) for i in body["tokens"])}
        return reply


def test_a_remembered_route_costs_one_request_and_a_changed_server_is_probed_again():
    server = ShiftingServer("llama.cpp")
    try:
        first = select_tokenizer("auto", facts(server.url))
        probe_calls = len(server.calls)
        assert first.id.startswith("server:llama.cpp:") and probe_calls >= 4

        second = select_tokenizer("auto", facts(server.url))
        assert (
            second.id == first.id and len(server.calls) == probe_calls + 1
        )  # the check: one tokenize request
        assert second.encode("héllo") == [ord(c) for c in "héllo"]

        server.shift = (
            1000  # another model behind the same URL and name: other ids for the probe text
        )
        before = len(server.calls)
        third = select_tokenizer("auto", facts(server.url))
        assert len(server.calls) - before > 1 and third.encode("a") == [ord("a") + 1000]
        (entry,) = remembered().values()
        assert (
            entry["probe_ids"][0] == ord("T") + 1000
        )  # what the new probe found is what is remembered

        server.dialect = (
            "vllm"  # the llama.cpp routes are gone: a vLLM server answers on that port now
        )
        fourth = select_tokenizer("auto", facts(server.url))
        assert (
            fourth.id.startswith("server:vllm:")
            and remembered()[next(iter(remembered()))]["dialect"] == "vllm"
        )
    finally:
        server.close()


@pytest.mark.slow
def test_a_second_process_makes_no_probe(tmp_path):
    """Two real processes answer one question each through ``openai:`` on a stub without tokenize
    routes: the first probes the three dialects (four requests for one answer), the second none."""
    script = (
        "from longctx import Corpus, answer; "
        "answer(Corpus.from_texts(['Paris is the capital of France.']), 'Capital?', "
        "strategy='full_context', llm='openai:rec')"
    )
    with RecordingServer() as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "x",
            "LONGCTX_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": str(ROOT),
        }
        seen = []
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-c", script],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr
            seen.append((len(server.other_paths), len(server.requests)))
    assert seen == [(3, 1), (3, 2)]  # the second process: its chat request only


def test_an_entry_naming_a_dialect_this_version_lacks_is_probed_again():
    server = FakeTokenizeServer("vllm")
    try:
        key = probe_key(server_root(server.url), "my-llama", list(SERVER_DIALECTS), None)
        remember(
            key, ProbeResult(dialect="ollama", probe_ids=[1, 2], probed_at=time.time())
        )  # written by another version
        assert select_tokenizer("auto", facts(server.url)).id.startswith("server:vllm:")
        assert remembered()[key]["dialect"] == "vllm"
    finally:
        server.close()
