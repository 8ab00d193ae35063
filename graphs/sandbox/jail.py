"""The default REPL: model-written code in a jailed worker process (see docs/sandbox.md).

One worker per REPL (``_worker.py``, started as ``python -I -S -B`` with an empty environment),
persistent across turns. Its bindings arrive once, in the start message (one pipe transfer: a
10M-token context is ~40 MB and is never resent), then the worker locks itself down before any
model code runs. The host enforces what the worker cannot be trusted with: the turn's wall time,
its CPU time (a soft ``RLIMIT_CPU`` set per turn from outside, then a kill), the size of every
message, and which host function a ``call`` may name. Host functions run here, in the host
process, and are counted here (``JailedRepl.host_calls``): whatever the code does to its own
namespace, a model call it makes is one the host executed.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import struct
import subprocess
import sys
import time
import weakref
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from longctx.graphs.sandbox.protocol import ExecutionResult, HostFunction, SandboxLimits

_WORKER = Path(__file__).with_name("_worker.py")
_HEADER = struct.Struct(">Q")
_CPU_GRACE_SECONDS = 2.0  # past the soft limit, a turn that did not stop itself is killed
_POLL_SECONDS = 0.25
_START_SECONDS = 60.0
_MAX_CALL_BYTES = 256 * 1024**2  # one host call's arguments (a sub-call over a big slice)


class SandboxUnavailable(RuntimeError):
    """The jail cannot be built here (no seccomp on this kernel or architecture): fail closed."""


class SandboxError(RuntimeError):
    """A REPL call that cannot be answered: the worker is dead, closed or broke the protocol."""


class _Stop(Exception):  # noqa: N818 - internal: why a turn ended without the worker's answer
    def __init__(self, violation: str, message: str) -> None:
        super().__init__(message)
        self.violation = violation


def _worker_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a live process, from /proc (the host's view, not the worker's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


class JailedRepl:
    """A REPL whose code runs in a locked-down worker process; see the module docstring."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        functions: Mapping[str, HostFunction],
        limits: SandboxLimits,
    ) -> None:
        self._proc = proc
        self._functions = dict(functions)
        self.limits = limits
        #: How many times each host function ran, counted in the host: the code cannot skip it.
        self.host_calls: Counter[str] = Counter()
        #: Which layers the worker reported active (netns, uid, landlock, seccomp).
        self.layers: dict[str, Any] = {}
        self.dead_reason: str | None = None
        #: Bytes written to the worker: the bindings once at start, then only requests and replies.
        self.bytes_sent = 0
        self._closed = False
        self._buffer = bytearray()
        self._deadline = time.monotonic() + _START_SECONDS  # of the request (or start) under way
        assert proc.stdin is not None
        os.set_blocking(proc.stdin.fileno(), False)
        self._max_reply = 4 * limits.output_chars + 1024**2
        self._finalizer = weakref.finalize(self, _kill, proc)

    # -------------------------------------------------------------------- the channel

    def _write(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
        self._write_raw([data], len(data))

    def _write_raw(self, parts: Iterable[bytes], total: int) -> None:
        """One frame of ``total`` bytes written part by part (a corpus is never joined here).

        The pipe is non-blocking and every wait has the turn's deadline: a worker that stops
        reading (a forged call whose reply it never takes) cannot hang the host.
        """
        assert self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        for part in _chain(total, parts):
            view = memoryview(part)
            while view:
                now = time.monotonic()
                if now >= self._deadline:
                    raise _Stop("wall", "sandbox: the worker stopped reading the host's messages")
                select.select([], [fd], [], min(_POLL_SECONDS, self._deadline - now))
                try:
                    view = view[os.write(fd, view) :]
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise _Stop("crashed", "sandbox: the REPL's worker process is gone") from exc
        self.bytes_sent += _HEADER.size + total

    def _fill(self, n: int, deadline: float, cpu_cap: float) -> None:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while len(self._buffer) < n:
            now = time.monotonic()
            if now >= deadline:
                raise _Stop("wall", "sandbox: this turn ran past its wall-clock limit")
            if _worker_cpu_seconds(self._proc.pid) > cpu_cap:
                raise _Stop("cpu", "sandbox: this turn used up its CPU time")
            ready, _, _ = select.select([fd], [], [], min(_POLL_SECONDS, deadline - now))
            if ready:
                chunk = os.read(fd, max(n - len(self._buffer), 1 << 16))
                if not chunk:
                    raise _Stop(*self._death())
                self._buffer += chunk

    def _read(self, deadline: float, cpu_cap: float, max_bytes: int) -> dict[str, Any]:
        self._fill(_HEADER.size, deadline, cpu_cap)
        (length,) = _HEADER.unpack(bytes(self._buffer[: _HEADER.size]))
        if length > max_bytes:
            raise _Stop("protocol", f"sandbox: the worker sent {length:,} bytes at once")
        self._fill(_HEADER.size + length, deadline, cpu_cap)
        data = bytes(self._buffer[_HEADER.size : _HEADER.size + length])
        del self._buffer[: _HEADER.size + length]
        try:
            message = json.loads(data)
        except ValueError as exc:
            raise _Stop("protocol", "sandbox: the worker sent a malformed message") from exc
        if not isinstance(message, dict):
            raise _Stop("protocol", "sandbox: the worker sent a malformed message")
        return message

    def _death(self) -> tuple[str, str]:
        """Why the worker's channel closed; a worker that closed it and lives on is killed."""
        try:
            code = self._proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            _kill(self._proc)
            return "protocol", "sandbox: the REPL's worker closed its channel to the host"
        if code < 0:
            name = signal.Signals(-code).name
            return "crashed", f"sandbox: the REPL's worker died of {name} (a crash it caused)"
        return "crashed", f"sandbox: the REPL's worker exited ({code})"

    # --------------------------------------------------------------------- a request

    def _start_turn(self) -> tuple[float, float]:
        """The wall deadline and the CPU total at which the host kills the worker this turn.

        The worker stops itself at ``cpu_seconds`` (a CPU timer raising in the code); the host's
        cap, a grace later, is the floor for code that swallows that or runs long in C.
        """
        used = _worker_cpu_seconds(self._proc.pid)
        self._deadline = time.monotonic() + self.limits.wall_seconds
        return self._deadline, used + self.limits.cpu_seconds + _CPU_GRACE_SECONDS

    def _serve_call(self, message: dict[str, Any]) -> None:
        name = message.get("name")
        function = self._functions.get(name) if isinstance(name, str) else None
        if function is None or not isinstance(name, str):
            self._write({"op": "raise", "message": f"sandbox: no host function {name!r}"})
            return
        self.host_calls[name] += 1
        args, kwargs = message.get("args"), message.get("kwargs")
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            self._write({"op": "raise", "message": "sandbox: malformed call"})
            return
        try:
            value = function(*args, **kwargs)
            reply = {"op": "return", "value": value}
            json.dumps(reply)
        except Exception as exc:  # noqa: BLE001 - the code sees any host failure as RuntimeError
            reply = {"op": "raise", "message": f"{type(exc).__name__}: {exc}"}
        except (
            BaseException
        ):  # HostStop (a budget stop, a cancellation), an interrupt: the turn ends
            self._die(_Stop("interrupted", "sandbox: the host stopped this turn"))
            raise
        self._write(reply)

    def _request(self, message: dict[str, Any], answer_op: str) -> dict[str, Any]:
        """Send one request; serve host calls until the worker answers with ``answer_op``."""
        if self.dead_reason is not None:
            raise SandboxError(self.dead_reason)
        deadline, cpu_cap = self._start_turn()
        self._write(message)
        while True:
            reply = self._read(deadline, cpu_cap, _MAX_CALL_BYTES)
            op = reply.get("op")
            if op == "call":
                self._serve_call(reply)
                continue
            if op != answer_op:
                raise _Stop("protocol", f"sandbox: unexpected message {op!r} from the worker")
            if len(json.dumps(reply)) > self._max_reply:
                raise _Stop("output", "sandbox: the worker's answer is over the output limit")
            return reply

    def _die(self, stop: _Stop) -> str:
        _kill(self._proc)
        self.dead_reason = f"{stop} (violation: {stop.violation}); this REPL is closed"
        return self.dead_reason

    # ----------------------------------------------------------------- the protocol

    def execute(self, code: str) -> ExecutionResult:
        """Run ``code`` in the worker's namespace; a broken limit is reported, never raised."""
        started = time.perf_counter()
        if self._closed:
            raise SandboxError("sandbox: the REPL was closed")
        if self.dead_reason is not None:
            stderr = f"sandbox: the REPL is no longer running: {self.dead_reason}"
            return ExecutionResult("", stderr, (), 0.0, violation="dead", alive=False)
        try:
            reply = self._request({"op": "exec", "code": code}, "result")
        except _Stop as stop:
            stderr = self._die(stop)
            seconds = time.perf_counter() - started
            return ExecutionResult("", stderr, (), seconds, violation=stop.violation, alive=False)
        return ExecutionResult(
            stdout=str(reply.get("stdout", "")),
            stderr=str(reply.get("stderr", "")),
            variables=tuple(str(v) for v in reply.get("variables", ())),
            seconds=time.perf_counter() - started,
            violation=reply.get("violation"),
        )

    def run_silently(self, code: str) -> None:
        """Run scaffold code; raise ``SandboxError`` if it fails (it is the host's own code)."""
        try:
            reply = self._request({"op": "exec", "code": code, "silent": True}, "silent")
        except _Stop as stop:
            raise SandboxError(self._die(stop)) from None
        if reply.get("error"):
            raise SandboxError(f"sandbox: scaffold code failed: {reply['error']}")

    def value(self, expression: str) -> str | None:
        """``str()`` of ``expression`` (cut at ``output_chars``); None if it raises."""
        try:
            reply = self._request({"op": "value", "expression": expression}, "value")
        except _Stop as stop:
            self._die(stop)
            return None
        value = reply.get("value")
        return value if isinstance(value, str) else None

    def close(self) -> None:
        """End the worker; later calls raise ``SandboxError``."""
        self._closed = True
        if self.dead_reason is None:
            try:
                self._deadline = time.monotonic() + 1.0
                self._write({"op": "close"})
                self._proc.wait(timeout=1.0)
            except (_Stop, subprocess.TimeoutExpired):
                pass
        self.dead_reason = self.dead_reason or "sandbox: the REPL was closed"
        self._finalizer()

    def __enter__(self) -> JailedRepl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _chain(total: int, parts: Iterable[bytes]) -> Iterator[bytes]:
    yield _HEADER.pack(total)
    yield from parts


def _is_text(value: object) -> bool:
    """A str, or a list of str: sent as raw UTF-8 rather than JSON (the corpus's two shapes)."""
    if isinstance(value, str):
        return True
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


_PART_CHARS = 1 << 20  # a str goes out in 1M-character parts: the host never holds a 2nd copy


def _utf8_len(text: str) -> int:
    if text.isascii():
        return len(text)
    return sum(len(part) for part in _utf8_parts(text))


def _text_lengths(value: str | list[str]) -> list[int] | None:
    """None for a str; the UTF-8 length of each document for a list."""
    return None if isinstance(value, str) else [_utf8_len(doc) for doc in value]


def _utf8_parts(value: str | list[str]) -> Iterator[bytes]:
    for doc in [value] if isinstance(value, str) else value:
        for at in range(0, len(doc), _PART_CHARS):
            yield doc[at : at + _PART_CHARS].encode("utf-8", "surrogatepass")


def _spawn() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-B", str(_WORKER)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={},
        cwd="/",
        close_fds=True,
        start_new_session=True,
    )


def open_jailed_repl(
    *,
    bindings: Mapping[str, Any],
    functions: Mapping[str, HostFunction],
    limits: SandboxLimits,
) -> JailedRepl:
    """Start a jailed worker with ``bindings`` loaded once; refuse if the jail cannot be built.

    Raises ``SandboxUnavailable`` where the kernel lacks seccomp filtering (or the machine is not
    x86_64): the jail fails closed; only an option whose name says "unsafe" runs code without it.
    """
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable("the jailed REPL needs Linux (seccomp); this is " + sys.platform)
    proc = _spawn()
    repl = JailedRepl(proc, functions, limits)
    texts = {name: _text_lengths(value) for name, value in bindings.items() if _is_text(value)}
    start = {
        "op": "start",
        "texts": list(texts.items()),
        "limits": {
            "memory_bytes": limits.memory_bytes,
            "output_chars": limits.output_chars,
            "cpu_seconds": limits.cpu_seconds,
        },
        "functions": list(functions),
        "bindings": {k: v for k, v in bindings.items() if k not in texts},
    }
    try:
        repl._write(start)
        for name, lengths in texts.items():  # the corpus: one frame of UTF-8, no JSON escaping
            total = sum(lengths) if lengths is not None else _utf8_len(bindings[name])
            repl._write_raw(_utf8_parts(bindings[name]), total)
        ready = repl._read(time.monotonic() + _START_SECONDS, math.inf, 1024**2)
    except _Stop as stop:
        detail = proc.stderr.read().decode(errors="replace")[-2000:] if proc.stderr else ""
        repl._die(stop)
        raise SandboxUnavailable(f"the jailed worker did not start: {stop}\n{detail}") from None
    repl.layers = dict(ready.get("layers", {}))
    if ready.get("op") != "ready" or not repl.layers.get("seccomp"):
        repl._die(_Stop("unavailable", "no seccomp"))
        raise SandboxUnavailable(
            "the jailed REPL needs a seccomp filter, which this kernel or machine refused "
            f"(layers: {repl.layers}); an unsafe in-process REPL is the only other option"
        )
    assert proc.stderr is not None
    proc.stderr.close()
    return repl
