"""A lock for one model instance that keeps its last prompt in context (the embedded llama.cpp
model).

llama.cpp skips the prefill of the start a prompt shares with the tokens its context holds, and
holds one sequence: concurrent answers that take turns in arrival order make it alternate between
prompts and re-read each one whole (a RAG call between two full-context calls over one corpus
evicts the corpus). :class:`PrefixAffinityLock` hands the model, when it is released, to the
waiting call whose prompt shares the longest start with the prompt it holds, so calls sharing a
prefix run back to back; calls that do not touch the context (tokenizing) go first, and a call
passed over :data:`MAX_PASSED` times goes next regardless, so none waits for ever.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass

#: Times a waiting call may be passed over for calls with a longer shared start before it goes next.
MAX_PASSED = 8


def shared_start(a: str, b: str) -> int:
    """Characters ``a`` and ``b`` share at their start (a binary search over slice comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


@dataclass
class _Waiter:
    key: str | None
    shared: int = 0
    passed: int = 0


class PrefixAffinityLock:
    """A mutual-exclusion lock whose next holder is the waiting call with the longest start in
    common with the last prompt run (see the module docstring); ``acquire(key)`` / ``release()``, or
    ``with``.

    ``key`` is the prompt a call will run, or ``None`` for a call that leaves the model's context as
    it is (it goes first and does not change the prompt held).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._held = False
        self._last = ""
        self._tickets = itertools.count()
        self._waiting: dict[int, _Waiter] = {}

    def acquire(self, key: str | None = None) -> bool:
        """Wait for the model, then hold it; returns ``True`` (as
        :meth:`threading.Lock.acquire`)."""
        with self._cond:
            ticket = next(self._tickets)
            self._waiting[ticket] = _Waiter(
                key, shared_start(key, self._last) if key is not None else 0
            )
            try:
                while self._held or self._next() != ticket:
                    self._cond.wait()
            except BaseException:
                del self._waiting[ticket]
                self._cond.notify_all()
                raise
            del self._waiting[ticket]
            self._held = True
            for waiter in self._waiting.values():
                waiter.passed += 1
            if key is not None and key != self._last:
                self._last = key
                for waiter in self._waiting.values():
                    waiter.shared = shared_start(waiter.key, key) if waiter.key is not None else 0
            return True

    def release(self) -> None:
        """Let the next call have the model."""
        with self._cond:
            self._held = False
            self._cond.notify_all()

    def __enter__(self) -> PrefixAffinityLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    @property
    def waiting(self) -> int:
        """Calls waiting for the model now."""
        with self._cond:
            return len(self._waiting)

    def _next(self) -> int:
        """The ticket that goes next: a context-free call, else one passed over too often (the
        oldest), else the longest shared start (the oldest among equals)."""
        for ticket, waiter in self._waiting.items():  # dicts keep arrival order
            if waiter.key is None:
                return ticket
        for ticket, waiter in self._waiting.items():
            if waiter.passed >= MAX_PASSED:
                return ticket
        return max(self._waiting, key=lambda t: (self._waiting[t].shared, -t))
