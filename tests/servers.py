"""A real OpenAI-compatible server for end-to-end tests: llama_cpp.server on loopback."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from longctx.agents.embedded_chat import embedded_model_path


class QuietHandler(BaseHTTPRequestHandler):
    """A loopback test server's request handler: HTTP/1.1, no request log, JSON in and out."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        return

    def read_body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def send_json(self, status: int, reply: Any) -> None:
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 serving ``handler`` in the background: ``url``
    and ``close``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server(*extra_args: str, startup_timeout: float = 180.0) -> Iterator[str]:
    """Serve the embedded GGUF at ``http://127.0.0.1:PORT/v1``; stopped on exit."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(embedded_model_path()),
        "--host",
        "127.0.0.1",
    ]
    cmd += ["--port", str(port), "--n_ctx", "8192", "--model_alias", "smollm2", *extra_args]
    # llama.cpp logs verbosely: a pipe nobody reads would fill up and block the server.
    log = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(
        cmd, stdout=log, stderr=subprocess.STDOUT, text=True, env={**os.environ}
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(
                    f"llama_cpp.server exited with {proc.returncode}: {log.read()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"llama_cpp.server did not start within {startup_timeout}s"
                    ) from None
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
