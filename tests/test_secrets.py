"""No API key or URL credential reaches a file or the terminal (issue 27, item 4).

Keys are planted in the environment (``OPENAI_API_KEY``, another ``*_API_KEY``), in strategy
options (``retriever_options.api_key``) and in the base URL (userinfo and ``?api_key=``); a
stub server on 127.0.0.1 echoes every request header and the request line in its 400/500
bodies (as some providers do); ``longctx run`` and ``longctx report`` go through ``main()``,
and every byte of every file they leave (run folder and cache) plus stdout and stderr is
searched for each key.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from longctx.experiments.cli.app import main
from longctx.retrieval import redaction
from longctx.retrieval.redaction import redact, redact_value, register_options
from tests.recording_server import bag_of_words_vector
from tests.servers import LoopbackServer, QuietHandler

ENV_KEY = "sk-envKEY0123456789abcdefPLANTED"
OTHER_ENV_KEY = "otherSERVICEkey0123456789"
URL_USER_KEY = "urlUSERINFOkey0123456789"
URL_QUERY_KEY = "urlQUERYkey0123456789abc"
OPTION_KEY = "optionEMBEDkey0123456789"
KEYS = (ENV_KEY, OTHER_ENV_KEY, URL_USER_KEY, URL_QUERY_KEY, OPTION_KEY)


class EchoServer(LoopbackServer):
    """An OpenAI-compatible stub on loopback: chat and embeddings answer ``status`` with a body
    echoing the request line and every header (``status`` 200: a valid reply)."""

    def __init__(self, chat_status: int = 200, embeddings_status: int = 200):
        self.chat_status, self.embeddings_status = chat_status, embeddings_status
        self.seen_headers: list[dict[str, str]] = []
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = json.loads(self.read_body() or b"{}")
                headers = dict(self.headers.items())
                outer.seen_headers.append({k.lower(): v for k, v in headers.items()})
                embeddings = (
                    "embeddings" in self.path
                )  # a base URL with a query makes it /v1/?api_key=...embeddings
                status = outer.embeddings_status if embeddings else outer.chat_status
                if status != 200:
                    echo = (
                        f"bad request {self.requestline}; headers: {json.dumps(headers)}; "
                        f"Authorization: {headers.get('Authorization')}"
                    )
                    reply = {
                        "error": {
                            "message": echo,
                            "type": "invalid_request_error",
                            "headers": headers,
                        }
                    }
                elif embeddings:
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    data = [
                        {"object": "embedding", "index": i, "embedding": bag_of_words_vector(t)}
                        for i, t in enumerate(texts)
                    ]
                    reply = {"object": "list", "model": "e", "data": data}
                else:
                    reply = {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "m"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": "The answer is: Paris"},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
                    }
                self.send_json(status, reply)

        super().__init__(Handler)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """Keys in the environment; the corpus, questions and cache under ``tmp_path``."""
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("SOME_SERVICE_API_KEY", OTHER_ENV_KEY)
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LONGCTX_MAX_RETRIES", "0")
    monkeypatch.setenv("LONGCTX_TOKENIZER", "cl100k")  # no tokenize probe of the stub
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "france.txt").write_text("Paris is the capital of France. " * 20)
    (corpus / "germany.txt").write_text("Berlin is the capital of Germany. " * 20)
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"id": "q1", "question": "What is the capital of France?", "answer": "Paris"})
        + "\n"
    )
    return tmp_path


def base_url(port: int, userinfo: bool = True) -> str:
    """The stub's URL with a key in its query and (``userinfo``) user credentials, which the
    client then sends as Basic auth instead of the Bearer key."""
    user = f"user:{URL_USER_KEY}@" if userinfo else ""
    return f"http://{user}127.0.0.1:{port}/v1?api_key={URL_QUERY_KEY}"


def leaks(folders, *outputs: str) -> list[str]:
    """``"key in place"`` for every planted key (as is, and as the userinfo's Basic credentials)
    found in any file under ``folders`` or in ``outputs``."""
    shapes = {k: [k.encode()] for k in KEYS}
    shapes[URL_USER_KEY].append(base64.b64encode(f"user:{URL_USER_KEY}".encode()))
    found = []
    files = [
        p
        for folder in folders
        if Path(folder).exists()
        for p in Path(folder).rglob("*")
        if p.is_file()
    ]
    assert files, "nothing was written"
    for place, data in [
        *((str(p), p.read_bytes()) for p in files),
        *((f"output {i}", o.encode()) for i, o in enumerate(outputs)),
    ]:
        found += [
            f"{key} in {place}" for key, forms in shapes.items() if any(f in data for f in forms)
        ]
    return found


def run_cli(planted, out, strategies, *extra):
    return main(
        [
            "run",
            "--corpus",
            str(planted / "corpus"),
            "--questions",
            str(planted / "questions.jsonl"),
            "--strategies",
            strategies,
            "--llm",
            "openai:m",
            "--out",
            str(out),
            "--concurrency",
            "1",
            *extra,
        ]
    )


@pytest.mark.parametrize(("status", "userinfo"), [(400, False), (500, True)])
def test_a_provider_error_echoing_the_headers_reaches_no_file_and_no_output(
    planted, monkeypatch, capsys, status, userinfo
):
    with EchoServer(chat_status=status) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url(server.port, userinfo))
        out = planted / "run"
        rc = run_cli(planted, out, "rag,memagent")
        assert main(["report", str(out), "--no-plots"]) == 0
    captured = capsys.readouterr()
    assert rc == 1  # both answers failed
    auth = [h.get("authorization", "") for h in server.seen_headers]
    sent = base64.b64encode(f"user:{URL_USER_KEY}".encode()).decode() if userinfo else ENV_KEY
    assert auth and all(sent in a for a in auth)  # the credentials were really sent, and so echoed
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {r["status"] for r in rows} == {"failed"} and all(
        f"HTTP {status}" in r["error"] for r in rows
    )
    assert (
        planted / "cache" / "memagent"
    ).exists()  # MemAgent's checkpoints were written and are searched
    assert leaks([out, planted / "cache"], captured.out, captured.err) == []


def test_an_embeddings_error_with_an_option_key_reaches_no_file_and_no_output(
    planted, monkeypatch, capsys
):
    with EchoServer(embeddings_status=400) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.port}/v1")
        options = json.dumps(
            {"api_key": OPTION_KEY, "base_url": f"http://127.0.0.1:{server.port}/v1"}
        )
        out = planted / "run"
        rc = run_cli(
            planted,
            out,
            "rag",
            "--option",
            "rag.retriever=openai",
            "--option",
            f"rag.retriever_options={options}",
        )
    captured = capsys.readouterr()
    assert rc == 1
    assert any(
        OPTION_KEY in h.get("authorization", "") for h in server.seen_headers
    )  # sent, and so echoed
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["status"] == "failed" and "HTTP 400" in row["error"]
    assert leaks([out, planted / "cache"], captured.out, captured.err) == []


def test_credentials_in_the_base_url_of_a_successful_run_reach_no_file(
    planted, monkeypatch, capsys
):
    """Chat and embeddings both answer; the embedder's key and URL come from the options."""
    with EchoServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url(server.port))
        options = json.dumps(
            {"api_key": OPTION_KEY, "base_url": base_url(server.port, userinfo=False)}
        )
        out = planted / "run"
        assert (
            run_cli(
                planted,
                out,
                "rag",
                "--option",
                "rag.retriever=openai",
                "--option",
                f"rag.retriever_options={options}",
            )
            == 0
        )
        assert main(["report", str(out), "--no-plots"]) == 0
    captured = capsys.readouterr()
    assert any(
        OPTION_KEY in h.get("authorization", "") for h in server.seen_headers
    )  # the embedder sent its key
    assert list(
        (planted / "cache").rglob("meta.json")
    )  # the dense index was built, and is searched too
    assert (out / "report" / "report.html").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert "127.0.0.1" in manifest["model"]  # the server is still named, without its credentials
    assert leaks([out, planted / "cache"], captured.out, captured.err) == []


# -- the redaction itself -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "gone", "kept"),
    [
        (
            "calling http://bob:hunter2pass@host:8000/v1 now",
            "hunter2pass",
            "http://***@host:8000/v1",
        ),
        ("GET /v1?model=m&api_key=abcdef123456&x=1", "abcdef123456", "model=m&api_key=***&x=1"),
        ("url https://h/v1?token=tok123456789#frag", "tok123456789", "token=***#frag"),
        (
            '{"Authorization": "Bearer zzzzzzzzzzzz"}',
            "zzzzzzzzzzzz",
            '"Authorization": "Bearer ***"',
        ),
        (
            "authorization: Basic dXNlcjpwYXNzd29yZA==",
            "dXNlcjpwYXNzd29yZA",
            "authorization: Basic ***",
        ),
        ("sent Bearer abc.def-ghi_jkl", "abc.def-ghi_jkl", "Bearer ***"),
        ("key sk-proj-AAAAAAAAAAAAAAAA leaked", "AAAAAAAAAAAAAAAA", "sk-*** leaked"),
        (
            "the basic token budget is 512 tokens per chunk",
            None,
            "the basic token budget is 512 tokens per chunk",
        ),
        (
            "https://github.com/org/repo@v1 and desk-assessment",
            None,
            "https://github.com/org/repo@v1 and desk-assessment",
        ),
    ],
)
def test_redact_strips_credential_shapes_and_leaves_prose(text, gone, kept):
    out = redact(text)
    assert kept in out
    if gone:
        assert gone not in out


def test_known_secrets_come_from_the_environment_options_and_urls(monkeypatch):
    monkeypatch.setenv("ACME_API_KEY", "acmeSECRET42")
    monkeypatch.setenv("SOME_DATABASE_URL", "postgres://u:dbPASS9876@db/x")
    monkeypatch.setenv("SHORT_API_KEY", "ab")  # too short to be a key: never blanks ordinary text
    register_options(
        {"retriever_options": {"api_key": "optSECRET77", "base_url": "http://h/v1?key=qSECRET555"}}
    )
    text = "acmeSECRET42 optSECRET77 qSECRET555 dbPASS9876 about"
    assert redact(text) == "*** *** *** *** about"
    assert redact_value({"a": [text, ("optSECRET77",)], "api_key": "x"}) == {
        "a": ["*** *** *** *** about", ("***",)],
        "api_key": "x",
    }
    assert redact_value({"api_key": "x", "n": 1}, by_name=True) == {"api_key": "***", "n": 1}
    assert "optSECRET77" in redaction.known_secrets()
