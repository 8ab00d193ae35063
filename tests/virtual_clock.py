"""A virtual ``time`` for tests that check durations: its ``perf_counter`` reads seconds that pass
only when the test says so, so a figure a test asserts is exact however loaded the machine is."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest


class VirtualClock:
    """``time`` as a module under test sees it (patched in as that module's ``time``):
    ``perf_counter`` reads seconds that pass only by :meth:`advance`; every other name is the
    real module's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0.0

    def perf_counter(self) -> float:
        """The virtual seconds so far."""
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass (a model call's own time, say)."""
        with self._lock:
            self.now += seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def virtual_clock(monkeypatch: pytest.MonkeyPatch, *modules: Any) -> VirtualClock:
    """A :class:`VirtualClock` patched in as ``time`` of each of ``modules`` for the test."""
    clock = VirtualClock()
    for module in modules:
        monkeypatch.setattr(module, "time", clock)
    return clock
