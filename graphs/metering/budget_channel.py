"""The parent's side of the budget channel: model calls made outside this process (a sandbox's
sub-calls, a Ray worker's) are reserved with the run's
:class:`~graphs.metering.budget_guard.BudgetGuard` before they are sent and settled at their
server's usage once answered.

The protocol (JSON messages over a ``multiprocessing.connection`` socket whose key the child
holds; no pickle crosses it, so a sandboxed child cannot run code in the parent):

- ``{"op": "reserve", "prompt": text | null, "prompt_tokens": n | null,``
  ``"max_completion_tokens": m}`` -> ``{"ok": true, "grant": id, "prompt_tokens": counted}`` or
  ``{"refused": "budget reached: ..."}``. The parent counts ``prompt`` with the run's tokenizer (the
  larger of that and ``prompt_tokens`` is reserved, so a child cannot shrink its prompt), and
  reserves the prompt and the whole answer budget ``m`` at the budget's prices: a call granted can
  never take the run past its limits.
- ``{"op": "settle", "grant": id, "usage": {...} | null, "failed": text | null}`` ->
  ``{"ok": true}``: the cost is settled at the server's ``usage`` checked as every server's is
  (:func:`~retrieval.reported_usage.checked_chat_usage`); no usable usage, a failure, or a child
  that dies or disconnects holding a grant: the reservation stands, never lost.

The child's side is :mod:`longctx.graphs.metering.budget_client` (and, for a LangChain model,
:class:`longctx.graphs.metering.budget_callback.ChannelGuard`).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection, Listener
from typing import Any

from langchain_core.callbacks import dispatch_custom_event
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from longctx.graphs.metering.budget import BudgetReached
from longctx.graphs.metering.budget_client import MAX_MESSAGE_BYTES
from longctx.graphs.metering.budget_guard import BudgetGuard
from longctx.graphs.metering.usage import USAGE_EVENT
from longctx.retrieval.contract import Usage
from longctx.retrieval.reported_usage import as_count, checked_chat_usage

BAD_RESERVE = "max_completion_tokens and prompt_tokens must be token counts, prompt a string"


def guard_of(config: RunnableConfig | None = None) -> BudgetGuard | None:
    """The :class:`BudgetGuard` among ``config``'s callbacks (``None``: the running node's), if
    any."""
    cfg = config if config is not None else var_child_runnable_config.get()
    callbacks = (cfg or {}).get("callbacks")
    handlers = (
        list(callbacks)
        if isinstance(callbacks, list)
        else [*getattr(callbacks, "handlers", []), *getattr(callbacks, "inheritable_handlers", [])]
    )
    return next((h for h in handlers if isinstance(h, BudgetGuard)), None)


@dataclass
class _Grant:
    tokens: int
    completion: int
    usd: float


class BudgetChannel:
    """A reservation channel on ``host`` (loopback unless a Ray cluster's workers must reach it) for
    the calls of child processes, against ``guard`` (``None``: no limit, the calls are only
    counted).

    Use as a context manager; give the children :attr:`ticket` (an environment variable,
    :data:`~graphs.metering.budget_client.TICKET_ENV`, or a task argument). :attr:`usage` holds the
    calls settled through it, as the server reported them (a call whose grant was never settled: at
    its reservation, ``estimated``); :attr:`abandoned` counts those.
    """

    def __init__(
        self,
        guard: BudgetGuard | None,
        *,
        host: str = "127.0.0.1",
        count: Callable[[str], int] | None = None,
        server: str = "an out-of-process call",
    ) -> None:
        self.guard = guard
        self.count = count or (guard.count if guard is not None else None)
        self.server = server
        self._key = secrets.token_bytes(32)
        self._listener = Listener((host, 0), authkey=self._key)
        self._address: tuple[str, int] = self._listener.address
        self._ticket = f"{self._address[0]}:{self._address[1]}:{self._key.hex()}"
        self._lock = threading.Lock()
        self._open: dict[int, _Grant] = {}
        self._conns: list[Connection] = []
        self._next = 0
        self._closed = False
        self.usage = Usage()
        self.abandoned = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def ticket(self) -> str:
        """``HOST:PORT:KEY``: what a child needs to connect
        (:class:`~graphs.metering.budget_client.BudgetClient`)."""
        return self._ticket

    def __enter__(self) -> BudgetChannel:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving; every grant still open stands at its reservation."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conns = list(self._conns)
        if self._thread.is_alive():
            try:  # wake the accept loop: a connection that fails its handshake
                socket.create_connection(self._address, timeout=5).close()
            except OSError:
                pass
            self._thread.join(timeout=5)
        self._listener.close()
        for conn in conns:  # wake the readers: their socket shut down through a duplicate
            try:
                with socket.socket(fileno=os.dup(conn.fileno())) as dup:
                    dup.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        with self._lock:
            for gid in list(self._open):
                self._abandon(gid)

    def report_usage(self, config: RunnableConfig | None = None) -> None:
        """Add the calls settled through this channel to the running answer's usage (a
        :data:`~graphs.metering.usage.USAGE_EVENT` to ``config``'s callbacks, ``None``: the node's):
        the calls of a child process, which no callback here saw. A Ray map reports its tasks' own
        usage instead."""
        if self.usage != Usage() and (config or var_child_runnable_config.get()) is not None:
            dispatch_custom_event(USAGE_EVENT, asdict(self.usage), config=config)

    def _accept(self) -> None:
        while True:
            try:
                conn = self._listener.accept()
            except Exception:  # noqa: BLE001 - a stranger that failed the handshake, or the end
                if self._closed:
                    return
                continue
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: Connection) -> None:
        mine: set[int] = set()
        try:
            while True:
                try:
                    raw = conn.recv_bytes(MAX_MESSAGE_BYTES)
                except (EOFError, OSError):
                    return
                try:
                    message = json.loads(raw)
                    reply = self._answer(message, mine) if isinstance(message, dict) else None
                except ValueError as exc:
                    reply = {"ok": False, "error": f"unreadable message: {exc}"}
                try:
                    conn.send_bytes(
                        json.dumps(reply or {"ok": False, "error": "not a message"}).encode()
                    )
                except OSError:
                    return
        finally:
            with self._lock:  # a child that died or left holding a grant: it stands
                for gid in mine & set(self._open):
                    self._abandon(gid)
            conn.close()

    def _answer(self, message: dict[str, Any], mine: set[int]) -> dict[str, Any]:
        if message.get("op") == "reserve":
            return self._reserve(message, mine)
        if message.get("op") == "settle":
            gid = message.get("grant")
            with self._lock:
                grant = self._open.pop(gid, None) if gid in mine else None
            if grant is None:
                return {"ok": False, "error": f"no open grant {gid!r}"}
            mine.discard(gid)
            self._settle(grant, message.get("usage"), message.get("failed"))
            return {"ok": True}
        return {"ok": False, "error": f"unknown op {message.get('op')!r:.40}"}

    def _reserve(self, message: dict[str, Any], mine: set[int]) -> dict[str, Any]:
        completion = as_count(message.get("max_completion_tokens"))
        claimed = message.get("prompt_tokens")
        tokens = as_count(claimed) if claimed is not None else 0
        prompt = message.get("prompt")
        if completion is None or tokens is None or not isinstance(prompt, (str, type(None))):
            return {"ok": False, "error": BAD_RESERVE}
        if prompt and self.count is not None:
            tokens = max(tokens, self.count(prompt))
        guard = self.guard
        usd = guard.budget.cost(tokens, completion) if guard is not None else 0.0
        with self._lock:
            if self._closed:
                return {"refused": "budget reached: the run that granted calls has ended"}
        if guard is not None:
            try:
                guard.reserve_outside(tokens, usd)
            except BudgetReached as exc:
                return {"refused": str(exc)}
        with self._lock:
            self._next += 1
            self._open[self._next] = _Grant(tokens, completion, usd)
            mine.add(self._next)
            return {"ok": True, "grant": self._next, "prompt_tokens": tokens}

    def _settle(self, grant: _Grant, usage: Any, failed: Any) -> None:
        if failed:
            with self._lock:
                self.usage.failed_calls += 1
            return
        checked = checked_chat_usage(usage, self.server)
        if checked is None:
            with self._lock:
                self._abandon_counts(grant)
            return
        prompt, completion = checked["prompt_tokens"], checked["completion_tokens"]
        details = checked.get("prompt_tokens_details") or {}
        cached = min(details.get("cached_tokens") or 0, prompt)
        if self.guard is not None:
            cost = self.guard.budget.cost(prompt, completion, cached)
            self.guard.settle_outside(grant.usd, cost, completion, cached)
        with self._lock:
            self.usage.llm_calls += 1
            self.usage.prompt_tokens += prompt
            self.usage.cached_prompt_tokens += cached
            self.usage.completion_tokens += completion

    def _abandon(self, gid: int) -> None:
        """(Under the lock.) A grant never settled: counted at its reservation, which stands."""
        grant = self._open.pop(gid)
        self.abandoned += 1
        self._abandon_counts(grant)

    def _abandon_counts(self, grant: _Grant) -> None:
        self.usage.llm_calls += 1
        self.usage.prompt_tokens += grant.tokens
        self.usage.completion_tokens += grant.completion
        self.usage.estimated = True


__all__ = ["BudgetChannel", "guard_of"]
