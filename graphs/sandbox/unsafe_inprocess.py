"""An in-process ``exec`` REPL: UNSAFE, for tests and trusted code only.

The model's code runs in this process with its privileges: it can read and write the user's
files, reach the network, read the environment (API keys) and call the model around the budget.
It exists because it is fast and has no dependencies; the default REPL is the jailed worker
(``graphs/sandbox/kinds.py``, ``repl="sandbox"``). It keeps to :mod:`.protocol` so a strategy
runs the same in both: bindings loaded once, host functions bound as they are (they already run
in the host), stdout and stderr captured per thread (several REPLs may run at once, RLM's
``rlm_query_batched`` children), output cut at ``limits.output_chars``. CPU, memory and wall
limits are not enforced here.

Each turn's code runs in a thread of its own (in a copy of the caller's context), so a
:class:`~.protocol.HostStop` a host function raises ends the turn at once whatever the code does
(``try: llm_query(...) except BaseException: pass`` in a loop included): the caller stops waiting
and raises it, and the host call never returns to the code: the code's thread is parked there for
good, as is any later host call (a parked daemon thread; :meth:`UnsafeInProcessRepl.close` empties
the namespace it holds). No exception is raised in the code, so nothing it catches can resume it.
"""

from __future__ import annotations

import contextvars
import functools
import io
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from typing import Any, TextIO

from longctx.graphs.sandbox.protocol import (
    ExecutionResult,
    HostFunction,
    HostStop,
    SandboxLimits,
)

#: Never set: what a stopped turn's host call waits on.
_NEVER = threading.Event()
#: ``on`` in a thread that runs a turn's code (a host call there may park it).
_IN_TURN = threading.local()

#: Value types whose names are listed as the REPL's variables (``ExecutionResult.variables``).
LISTED_TYPES = (str, int, float, bool, list, dict, tuple)


class _ThreadStream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` while a REPL runs: each thread writes to its own buffer
    when it has one (a REPL's turn), else to the stream it replaced."""

    def __init__(self, name: str, original: TextIO) -> None:
        self.name = name
        self.original = original
        self.local = threading.local()

    def write(self, s: str) -> int:
        stack: list[io.StringIO] | None = getattr(self.local, "stack", None)
        if stack:
            return stack[-1].write(s)
        return self.original.write(s)

    def flush(self) -> None:
        stack = getattr(self.local, "stack", None)
        if not stack:
            self.original.flush()


_INSTALL = threading.Lock()


def _streams() -> tuple[_ThreadStream, _ThreadStream]:
    """The per-thread stdout and stderr, installed once (re-installed if someone replaced them)."""
    with _INSTALL:
        out, err = sys.stdout, sys.stderr
        if not isinstance(out, _ThreadStream):
            out = sys.stdout = _ThreadStream("stdout", out)
        if not isinstance(err, _ThreadStream):
            err = sys.stderr = _ThreadStream("stderr", err)
        return out, err


class UnsafeInProcessRepl:
    """One persistent namespace run with ``exec`` in this process (see the module's warning)."""

    def __init__(
        self,
        *,
        bindings: Mapping[str, Any],
        functions: Mapping[str, HostFunction],
        limits: SandboxLimits,
    ) -> None:
        self.limits = limits
        self.namespace: dict[str, Any] | None = {"__name__": "__main__"}
        self.namespace.update(bindings)
        self.namespace.update({name: self._guarded(fn) for name, fn in functions.items()})
        #: The stop a host function raised: every later host call raises it.
        self.stopped: HostStop | None = None
        self._turn_done: threading.Event | None = None

    def _guarded(self, function: HostFunction) -> HostFunction:
        """``function`` as the code calls it: a stop it raises ends the turn (the waiting caller
        is woken and raises it), and neither that call nor a later one returns to the code (a call
        outside a turn's thread, the host's own, raises the stop instead)."""

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            if self.stopped is None:
                try:
                    return function(*args, **kwargs)
                except HostStop as stop:
                    self.stopped = stop
                    if self._turn_done is not None:
                        self._turn_done.set()
            if getattr(_IN_TURN, "on", False):
                _NEVER.wait()  # the code is not run again
            raise self.stopped

        return call

    def _space(self) -> dict[str, Any]:
        if self.namespace is None:
            raise RuntimeError("this REPL is closed")
        return self.namespace

    def execute(self, code: str) -> ExecutionResult:
        """Run ``code`` in the namespace, capturing stdout and stderr (a raised exception's
        traceback goes to stderr); raise the :class:`~.protocol.HostStop` a host function raised,
        as soon as it is raised."""
        space = self._space()
        if self.stopped is not None:
            raise self.stopped
        start = time.perf_counter()
        turn = _Turn(code, space)
        self._turn_done = turn.done
        turn.start()
        turn.done.wait()
        self._turn_done = None
        if self.stopped is not None:
            raise self.stopped
        turn.thread.join()
        buffers = turn.buffers
        seconds = time.perf_counter() - start
        stdout, stderr = buffers[0].getvalue(), buffers[1].getvalue()
        limit = self.limits.output_chars
        violation = "output" if len(stdout) + len(stderr) > limit else None
        return ExecutionResult(
            stdout=stdout[:limit],
            stderr=stderr[: max(0, limit - len(stdout[:limit]))],
            variables=tuple(
                k for k, v in space.items() if not k.startswith("_") and isinstance(v, LISTED_TYPES)
            ),
            seconds=seconds,
            violation=violation,
        )

    def run_silently(self, code: str) -> None:
        """Run scaffold code in the namespace, uncaptured; its exceptions reach the caller."""
        exec(compile(code, "<scaffold>", "exec"), self._space())  # noqa: S102

    def value(self, expression: str) -> str | None:
        """``str()`` of ``expression`` in the namespace, ``None`` if it raises."""
        try:
            return str(eval(expression, self._space()))  # noqa: S307
        except Exception:  # noqa: BLE001 - the protocol: None when it raises
            return None

    def close(self) -> None:
        """Drop the namespace (emptied: a stopped turn's parked thread holds it); later calls
        raise."""
        if self.namespace is not None and self.stopped is not None:
            self.namespace.clear()
        self.namespace = None


class _Turn:
    """One ``execute``'s code in a thread of its own: the caller waits for it to end or for a host
    function to stop the turn."""

    def __init__(self, code: str, space: dict[str, Any]) -> None:
        self.code, self.space = code, space
        self.buffers = io.StringIO(), io.StringIO()
        self.done = threading.Event()
        self.thread = threading.Thread(
            target=contextvars.copy_context().run, args=(self._run,), name="repl-turn", daemon=True
        )

    def start(self) -> None:
        """Start the code."""
        self.thread.start()

    def _run(self) -> None:
        _IN_TURN.on = True
        out, err = _streams()
        for stream, buffer in zip((out, err), self.buffers, strict=True):
            stream.local.__dict__.setdefault("stack", []).append(buffer)
        try:
            exec(compile(self.code, "<repl>", "exec"), self.space)  # noqa: S102 - unsafe REPL
        except Exception:  # noqa: BLE001 - any error of the code goes to its stderr
            self.buffers[1].write(traceback.format_exc())
        except BaseException:  # noqa: BLE001 - an exit the code raised
            self.buffers[1].write(traceback.format_exc())
        finally:
            for stream in (out, err):
                stream.local.stack.pop()
            self.done.set()


def open_unsafe_inprocess_repl(
    *,
    bindings: Mapping[str, Any],
    functions: Mapping[str, HostFunction],
    limits: SandboxLimits,
) -> UnsafeInProcessRepl:
    """A :class:`~.protocol.ReplFactory` for the in-process REPL (UNSAFE: no isolation)."""
    return UnsafeInProcessRepl(bindings=bindings, functions=functions, limits=limits)
