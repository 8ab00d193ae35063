"""The contract between a strategy that runs model-written code (RLM) and the REPL that runs it.

Two kinds implement it: the jailed worker process (the default: no files, network, processes,
environment or host modules; CPU, memory and output limited per turn) and an in-process
``exec`` whose name says it is unsafe. Both keep their bindings (the corpus as ``context``)
loaded once for the REPL's life: a 10M-token context is ~40 MB and is never resent per turn.

Host functions (``llm_query``, ``rlm_query``, ``search``, ...) run in the host process, so every
model call the code makes goes through the library's call path (budgets, usage, the reply cache,
tracing, cancellation); the code only ever holds a stub that asks the host.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

#: A function the code may call, run in the host: JSON-able positional and keyword arguments in,
#: a JSON-able value out. An exception it raises reaches the code as ``RuntimeError(message)``,
#: except :class:`HostStop`, which the code never sees.
HostFunction = Callable[..., Any]


class HostStop(BaseException):  # noqa: N818 - a stop, as KeyboardInterrupt
    """Raised by a host function to end the turn now, whatever the code does (a budget stop, a
    cancellation): the REPL stops running the code at once, refuses every later host call, and
    ``execute`` raises it to the strategy. The code cannot catch it: the jail kills its worker,
    the in-process REPL leaves the code's thread (and interrupts it until it ends)."""


@dataclass(frozen=True)
class SandboxLimits:
    """What one turn of model-written code may use before the REPL stops it."""

    cpu_seconds: float = 60.0
    wall_seconds: float = 600.0  # host functions (model calls) count here, not in cpu_seconds
    memory_bytes: int = 4 * 1024**3  # the whole worker, the loaded context included
    output_chars: int = 1_000_000  # stdout + stderr kept per turn; the strategy truncates further


@dataclass(frozen=True)
class ExecutionResult:
    """What one ``execute`` produced, in the shape RLM's feedback message is built from."""

    stdout: str
    stderr: str  # the traceback of an exception the code raised, or the limit it hit
    #: Names of the public globals whose values are str, int, float, bool, list, dict or tuple,
    #: in definition order (what the official RLM code lists as "REPL variables").
    variables: tuple[str, ...]
    seconds: float
    #: The limit or rule the code broke ("cpu", "memory", "wall", "output", "forbidden: ..."),
    #: ``None`` when it ran within them. The REPL survives a violation unless ``alive`` is False.
    violation: str | None = None
    alive: bool = True


@runtime_checkable
class Repl(Protocol):
    """A persistent namespace that runs code turn after turn."""

    def execute(self, code: str) -> ExecutionResult:
        """Run ``code`` in the namespace, capturing stdout and stderr."""
        ...

    def run_silently(self, code: str) -> None:
        """Run scaffold code (helpers, restored reserved names) without capturing or counting it."""
        ...

    def value(self, expression: str) -> str | None:
        """``str()`` of ``expression`` evaluated in the namespace; ``None`` if it raises."""
        ...

    def close(self) -> None:
        """Free the REPL (the worker process ends); later calls raise."""
        ...


class ReplFactory(Protocol):
    """Opens a REPL with ``bindings`` (JSON-able values, loaded once) and host ``functions``."""

    def __call__(
        self,
        *,
        bindings: Mapping[str, Any],
        functions: Mapping[str, HostFunction],
        limits: SandboxLimits,
    ) -> Repl: ...
