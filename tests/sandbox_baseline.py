"""Plain, unsandboxed ``exec`` runners: what the hostile battery would do without the jail.

``InProcessExec`` runs the code in this very process (the host), as an unsafe REPL would.
``ChildExec`` runs the same plain ``exec`` in a throwaway interpreter, for the programs that would
take the test process down with them (a CPU spin, a 10 GB allocation, a fork, a crash): it has
a timeout and a 1 GB address-space cap only so the test machine survives, and reports no limit
(a plain exec knows none), which is exactly what the hostile tests then fail on.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any

from longctx.graphs.sandbox.protocol import ExecutionResult

_CHILD = """
import resource, sys, traceback
resource.setrlimit(resource.RLIMIT_AS, (1024**3, 1024**3))
code = sys.stdin.read()
try:
    exec(compile(code, "<plain>", "exec"), {"__name__": "__main__"})
except BaseException:
    traceback.print_exc()
"""


class InProcessExec:
    """``exec`` in the host's own process, with the host functions as they are."""

    def __init__(self, bindings: Mapping[str, Any], functions: Mapping[str, Any]) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__main__", **bindings, **functions}

    def execute(self, code: str) -> ExecutionResult:
        out, err = io.StringIO(), io.StringIO()
        started = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                exec(compile(code, "<plain>", "exec"), self.namespace)
            except Exception:  # noqa: BLE001 - the plain exec reports what the code raised
                traceback.print_exc(file=err)
        return ExecutionResult(out.getvalue(), err.getvalue(), (), time.perf_counter() - started)


class ChildExec:
    """``exec`` in a fresh interpreter with the host's environment (API keys included)."""

    def __init__(self, timeout: float = 1.5) -> None:
        self.timeout = timeout

    def execute(self, code: str) -> ExecutionResult:
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-c", _CHILD],
                input=code,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=dict(os.environ),
            )
            out, err = done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            out = (exc.stdout or b"").decode(errors="replace") if exc.stdout else ""
            err = "timed out"
        return ExecutionResult(out, err, (), time.perf_counter() - started)
