"""The child's side of the budget channel (:mod:`longctx.graphs.metering.budget_channel`): a model
call made in another process (a sandboxed REPL's sub-call, a Ray worker's) asks the parent's budget
guard for a grant before its request is sent, and settles it at the usage its server reported.

Standard library only (and :class:`~graphs.metering.budget.BudgetReached`), so a sandbox child
starts fast::

    client = BudgetClient.from_env()              # the ticket the parent put in the environment
    with client.call(prompt, max_completion_tokens=256) as grant:
        reply = post(prompt, max_tokens=256)      # the child's own HTTP call
        grant.settle(reply["usage"])              # the server's usage, checked by the parent

A refusal raises :class:`BudgetReached` before anything is sent; a channel that cannot be reached
raises :class:`BudgetChannelError`: without a grant, no call.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client
from typing import Any

from longctx.graphs.metering.budget import BudgetReached

#: The environment variable a parent sets to its channel's
#: :attr:`~graphs.metering.budget_channel.BudgetChannel.ticket`.
TICKET_ENV = "LONGCTX_BUDGET_CHANNEL"
#: The largest message either side reads (a prompt sent to be counted; 128K tokens are ~0.5 MB).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class BudgetChannelError(RuntimeError):
    """The parent's budget channel cannot be reached or answered out of protocol: no call is
    sent."""


def parse_ticket(ticket: str) -> tuple[tuple[str, int], bytes]:
    """``(host, port)`` and the key of a ticket ``HOST:PORT:HEXKEY``."""
    try:
        host, port, key = ticket.rsplit(":", 2)
        return (host, int(port)), bytes.fromhex(key)
    except ValueError:
        raise BudgetChannelError(
            f"{TICKET_ENV} is not a budget channel ticket (HOST:PORT:KEY)"
        ) from None


@dataclass
class Grant:
    """One call the parent's guard allowed: settle it once, with the server's ``usage``."""

    id: int
    prompt_tokens: int  # as the parent counted them
    max_completion_tokens: int
    client: BudgetClient = field(repr=False)
    settled: bool = False

    def settle(self, usage: Mapping[str, Any] | None) -> None:
        """Settle at the server's ``usage`` (a Chat Completions ``usage`` object; ``None``: it
        reported none, the reservation stands)."""
        self.client.settle(self, usage)

    def fail(self, error: str) -> None:
        """The call failed: the reservation stands (its server may have read the prompt)."""
        self.client.settle(self, None, failed=error)


class BudgetClient:
    """A connection to the parent's :class:`~graphs.metering.budget_channel.BudgetChannel`
    (thread-safe: one request at a time on it)."""

    def __init__(self, ticket: str) -> None:
        address, key = parse_ticket(ticket)
        try:
            self._conn = Client(address, authkey=key)
        except (OSError, AuthenticationError) as exc:  # refused, or the key did not authenticate
            raise BudgetChannelError(
                f"budget channel at {address[0]}:{address[1]}: {type(exc).__name__}: {exc}"
            ) from None
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls) -> BudgetClient | None:
        """A client of the ticket in ``$LONGCTX_BUDGET_CHANNEL``, ``None`` where the parent set
        none."""
        ticket = os.environ.get(TICKET_ENV)
        return cls(ticket) if ticket else None

    def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            try:
                self._conn.send_bytes(json.dumps(message).encode())
                reply = json.loads(self._conn.recv_bytes(MAX_MESSAGE_BYTES))
            except (OSError, EOFError, ValueError) as exc:
                raise BudgetChannelError(f"budget channel: {type(exc).__name__}: {exc}") from None
        if not isinstance(reply, dict):
            raise BudgetChannelError(f"budget channel answered {reply!r:.80}")
        return reply

    def reserve(
        self,
        prompt: str | None = None,
        *,
        max_completion_tokens: int,
        prompt_tokens: int | None = None,
    ) -> Grant:
        """Ask for one call of ``prompt`` (counted by the parent with the run's tokenizer; or
        ``prompt_tokens``, the larger of the two is reserved) and an answer budget of
        ``max_completion_tokens``. Raises :class:`BudgetReached` with the guard's reason when it
        would pass the budget (send nothing then)."""
        reply = self._ask(
            {
                "op": "reserve",
                "prompt": prompt,
                "prompt_tokens": prompt_tokens,
                "max_completion_tokens": max_completion_tokens,
            }
        )
        if reply.get("refused"):
            raise BudgetReached(str(reply["refused"]))
        if not reply.get("ok"):
            raise BudgetChannelError(f"budget channel: {reply.get('error', reply)!s:.300}")
        return Grant(int(reply["grant"]), int(reply["prompt_tokens"]), max_completion_tokens, self)

    def settle(
        self, grant: Grant, usage: Mapping[str, Any] | None, *, failed: str | None = None
    ) -> None:
        """Settle ``grant`` at ``usage`` (see :meth:`Grant.settle`); a second settle is ignored."""
        if grant.settled:
            return
        grant.settled = True
        reply = self._ask(
            {
                "op": "settle",
                "grant": grant.id,
                "usage": dict(usage) if isinstance(usage, Mapping) else usage,
                "failed": failed,
            }
        )
        if not reply.get("ok"):
            raise BudgetChannelError(f"budget channel: {reply.get('error', reply)!s:.300}")

    @contextmanager
    def call(
        self,
        prompt: str | None = None,
        *,
        max_completion_tokens: int,
        prompt_tokens: int | None = None,
    ) -> Iterator[Grant]:
        """Reserve a call around the block that sends it: settle the grant inside with the server's
        usage; an error leaves it failed, a block that settles nothing leaves the reservation
        standing."""
        grant = self.reserve(
            prompt, max_completion_tokens=max_completion_tokens, prompt_tokens=prompt_tokens
        )
        try:
            yield grant
        except BaseException as exc:
            if not grant.settled:
                grant.fail(f"{type(exc).__name__}: {exc}"[:500])
            raise
        if not grant.settled:
            grant.settle(None)

    def close(self) -> None:
        """Close the connection (a grant not settled by then stands at its reservation)."""
        self._conn.close()


__all__ = [
    "MAX_MESSAGE_BYTES",
    "TICKET_ENV",
    "BudgetChannelError",
    "BudgetClient",
    "Grant",
    "parse_ticket",
]
