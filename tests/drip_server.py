"""A loopback server that drips its reply: one byte every ``interval`` seconds (issue 46, item 7).

Every POST is answered 200 with ``body`` (a JSON reply of the route's API, so that only its pace
is wrong), status line and headers included, one byte at a time (``body_only``: the headers at
once, then the body dripped). A whole reply takes minutes at the default pace; a client whose
timeout is a deadline cuts it. ``received`` is set when a request arrives (``requests`` holds
its body); ``cut`` when a write fails because the client closed the connection, the server's
own sign that the request was cut.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback_server import LoopbackServer


class DripServer(LoopbackServer):
    """Serve on ``127.0.0.1`` in a background thread; use as a context manager."""

    def __init__(self, body: Any, *, interval: float = 0.5, body_only: bool = False):
        self.data = json.dumps(body).encode()
        self.interval = interval
        self.body_only = body_only
        self.requests: list[dict[str, Any]] = []
        self.received = threading.Event()
        self.cut = threading.Event()
        self._closing = threading.Event()
        super().__init__()

    def __exit__(self, *exc: Any) -> None:
        self._closing.set()  # a dripping handler stops, so shutdown does not wait for it
        super().__exit__(*exc)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                outer.requests.append(json.loads(self.rfile.read(length) or b"{}"))
                outer.received.set()
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(outer.data)}\r\n\r\n"
                ).encode()
                if outer.body_only:
                    self._write(head)
                reply = outer.data if outer.body_only else head + outer.data
                for i in range(len(reply)):
                    if outer._closing.wait(outer.interval) or not self._write(reply[i : i + 1]):
                        return

            def _write(self, data: bytes) -> bool:
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                    return True
                except OSError:  # the client closed the connection: the request was cut
                    outer.cut.set()
                    self.close_connection = True
                    return False

        return Handler
