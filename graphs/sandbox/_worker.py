"""The jailed REPL worker: one process per REPL, started by ``jail.py`` as ``python -I -S -B``.

Standard library only (the interpreter starts isolated, without site-packages, so it cannot import
the host's modules). It reads one start message (limits, the host function names and the
bindings: the corpus arrives once, here), imports the modules the model may use, locks itself
down (empty environment, rlimits, a network namespace, an unprivileged uid when started as root,
landlock, then a seccomp filter that refuses every path-taking, process, socket and signal
syscall) and then serves ``exec`` / ``value`` requests over its pipes. Host functions are stubs
that send a ``call`` message and wait for the host's reply.

Frames: 8 bytes big-endian length, then UTF-8 JSON.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import linecache
import os
import resource
import signal
import struct
import sys
import traceback
from collections.abc import Callable
from typing import Any

#: Modules the model may import (full dotted names). Everything else is refused with a message;
#: the kernel layers below stop what the list misses (a module reached through an escape).
ALLOWED_MODULES = (
    "re json math cmath collections collections.abc itertools functools operator string textwrap "
    "statistics random heapq bisect datetime time copy typing dataclasses enum decimal fractions "
    "difflib unicodedata hashlib base64 pprint array numbers csv io abc html urllib urllib.parse "
    "calendar zlib struct keyword"
).split()

_HEADER = struct.Struct(">Q")
_STATE: dict[str, Any] = {"in_channel": False, "pending": None, "violations": []}
_OUT_FD = -1
_REAL_IMPORT = builtins.__import__
_IN_FD = -1
_EPERM = 1
_TRACEBACK_CHARS = 20_000


class LimitExceeded(BaseException):  # noqa: N818 - read by the model: "LimitExceeded: cpu ..."
    """A per-turn limit was hit (a BaseException so ``except Exception`` cannot swallow it)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------------------------- the channel


def _read_exact(n: int) -> bytearray:
    buffer = bytearray(n)  # read in place: a 40 MB corpus is held once, not in chunks and a join
    view, done = memoryview(buffer), 0
    while done < n:
        got = os.readv(_IN_FD, [view[done:]])
        if not got:
            os._exit(0)  # the host is gone
        done += got
    return buffer


def _recv_bytes() -> bytearray:
    (length,) = _HEADER.unpack(_read_exact(_HEADER.size))
    return _read_exact(length)


def _recv() -> dict[str, Any]:
    message: dict[str, Any] = json.loads(_recv_bytes())
    return message


def _send(message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(_OUT_FD, view) :]


def _host_call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        message = {"op": "call", "name": name, "args": list(args), "kwargs": kwargs}
        json.dumps(message)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name}(): arguments must be str, numbers, lists or dicts: {exc}"
        ) from None
    _STATE["in_channel"] = True
    try:
        _send(message)
        reply = _recv()
    finally:
        _STATE["in_channel"] = False
    pending = _STATE["pending"]
    if pending is not None:
        _STATE["pending"] = None
        raise pending
    if reply.get("op") == "return":
        return reply.get("value")
    raise RuntimeError(str(reply.get("message", "host function failed")))


def _make_stub(name: str) -> Callable[..., Any]:
    def stub(*args: Any, **kwargs: Any) -> Any:
        return _host_call(name, args, kwargs)

    stub.__name__ = stub.__qualname__ = name
    return stub


# ------------------------------------------------------------------------------ the namespace


def _refuse(what: str, message: str) -> str:
    _STATE["violations"].append(f"forbidden: {what}")
    return message


def _from_library(importer: object) -> bool:
    """Whether the importing globals are a loaded module's own (a library's lazy import)."""
    if not isinstance(importer, dict):
        return False
    module = sys.modules.get(str(importer.get("__name__")))
    return module is not None and module.__name__ != "__main__" and module.__dict__ is importer


def _guarded_import(
    name: str,
    globals: Any = None,  # noqa: A002
    locals: Any = None,  # noqa: A002
    fromlist: Any = (),
    level: int = 0,
) -> Any:
    if _from_library(globals):
        return _REAL_IMPORT(name, globals, locals, fromlist, level)
    if level or name not in ALLOWED_MODULES or name not in sys.modules:
        allowed = ", ".join(sorted(m for m in ALLOWED_MODULES if "." not in m))
        raise ImportError(
            _refuse(
                f"import {name}",
                f"sandbox: import of {name!r} is not allowed in this REPL (no files, network, "
                f"processes or host modules); allowed modules: {allowed}",
            )
        )
    if fromlist:
        return sys.modules[name]
    return sys.modules[name.partition(".")[0]]


def _no_open(*args: Any, **kwargs: Any) -> Any:
    raise PermissionError(
        _refuse(
            "open",
            "sandbox: open() is not available: the REPL cannot read or write files; "
            "the data is in its variables (such as `context`)",
        )
    )


def _no_input(*args: Any, **kwargs: Any) -> Any:
    raise PermissionError(_refuse("input", "sandbox: there is no terminal to read from"))


def _safe_builtins() -> dict[str, Any]:
    safe = dict(builtins.__dict__)
    for name in ("breakpoint", "help", "exit", "quit", "copyright", "credits", "license"):
        safe.pop(name, None)
    for name in ("eval", "exec", "compile", "globals", "locals"):
        safe[name] = None  # as the official LocalREPL's _SAFE_BUILTINS (rlm @ 72d6940)
    safe["__import__"] = _guarded_import
    safe["open"] = _no_open
    safe["input"] = _no_input
    # the real builtins module is one attribute away (print.__self__): guard it as well
    builtins.__import__ = _guarded_import
    builtins.open = _no_open
    builtins.input = _no_input
    return safe


def _preload() -> None:
    for name in (*ALLOWED_MODULES, "_strptime", "encodings.idna"):
        __import__(name)
    # warm what tracebacks and formatting use, so no file is needed after the lockdown
    "{:,}".format(1234.5)
    traceback.format_exception(ValueError, ValueError("x"), None)


# ------------------------------------------------------------------------------ the lockdown

_LIBC = ctypes.CDLL(None, use_errno=True)
_SYSCALL = _LIBC.syscall
_SYSCALL.restype = ctypes.c_long

#: x86_64 syscalls the code may never make: every call taking a path, making a process, a socket
#: or a signal to another process, touching another process (priority, affinity, pidfd, kcmp) or
#: SysV / POSIX IPC, changing ids, limits, namespaces or the clock, and kernel side doors.
_DENIED_X86_64 = tuple(
    int(nr)
    for nr in (
        "2 4 6 21 29 30 31 41 42 43 44 49 50 53 56 57 58 59 62 64 65 66 67 68 69 70 71 76 78 80 "
        "81 82 83 84 85 86 87 88 89 90 92 94 101 103 105 106 109 112 113 114 116 117 119 122 123 "
        "129 132 133 134 135 136 137 139 141 142 144 153 154 155 156 159 160 161 162 163 164 165 "
        "166 167 168 169 170 171 172 173 175 176 179 188 189 191 192 194 195 197 198 200 203 212 "
        "217 220 227 234 235 240 241 242 243 244 245 246 248 249 250 251 254 256 257 258 259 260 "
        "261 263 264 265 266 267 268 269 272 274 279 280 288 297 298 300 302 303 304 305 306 308 "
        "310 311 312 313 316 319 320 321 322 323 424 425 426 427 428 429 430 431 432 433 434 435 "
        "437 438 439 440 442 443 447 452"
    ).split()
)
_NEWFSTATAT, _STATX, _AT_EMPTY_PATH = 262, 332, 0x1000
_AUDIT_ARCH_X86_64 = 0xC000003E
_RET_ALLOW, _RET_KILL, _RET_EPERM = 0x7FFF0000, 0x80000000, 0x00050000 | _EPERM
_LD_W_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06


def _bpf_program() -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k), jumps resolved from labels."""
    ops: list[tuple[int, str | None, str | None, int]] = [
        (_LD_W_ABS, None, None, 4),
        (_JEQ, "+1", "+0", _AUDIT_ARCH_X86_64),
        (_RET, None, None, _RET_KILL),
        (_LD_W_ABS, None, None, 0),
        (_JGE, "deny", "+0", 0x40000000),  # the x32 ABI
        (_JEQ, "fstatat", "+0", _NEWFSTATAT),
        (_JEQ, "statx", "+0", _STATX),
    ]
    ops += [(_JEQ, "deny", "+0", nr) for nr in _DENIED_X86_64]
    ops.append((_RET, None, None, _RET_ALLOW))
    # fstat(fd) is newfstatat(fd, "", AT_EMPTY_PATH) in glibc: allowed; a path is not
    labels = {"fstatat": len(ops)}
    ops += [(_LD_W_ABS, None, None, 16 + 3 * 8), (_JSET, "allow", "deny", _AT_EMPTY_PATH)]
    labels["statx"] = len(ops)
    ops += [(_LD_W_ABS, None, None, 16 + 2 * 8), (_JSET, "allow", "deny", _AT_EMPTY_PATH)]
    labels["allow"] = len(ops)
    ops.append((_RET, None, None, _RET_ALLOW))
    labels["deny"] = len(ops)
    ops.append((_RET, None, None, _RET_EPERM))

    def offset(at: int, label: str | None) -> int:
        if label is None:
            return 0
        if label.startswith("+"):
            return int(label[1:])
        return labels[label] - at - 1

    program = [(code, offset(i, jt), offset(i, jf), k) for i, (code, jt, jf, k) in enumerate(ops)]
    if any(not 0 <= jump <= 255 for _, jt, jf, _ in program for jump in (jt, jf)):
        raise ValueError("seccomp filter: a jump is out of range")  # fail closed, never wrap
    return program


def _install_seccomp() -> bool:
    if os.uname().machine != "x86_64":
        return False
    program = _bpf_program()

    class SockFilter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint),
        ]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    filters = (SockFilter * len(program))(*[SockFilter(*op) for op in program])
    prog = SockFprog(len(program), filters)
    return bool(_LIBC.prctl(22, 2, ctypes.byref(prog), 0, 0) == 0)  # PR_SET_SECCOMP, FILTER


def _install_landlock() -> bool:
    abi = _SYSCALL(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_VERSION)
    if abi < 1:
        return False
    fs_bits = {1: 13, 2: 14, 3: 15, 4: 15, 5: 16}.get(abi, 16)
    attr = (ctypes.c_uint64 * 3)((1 << fs_bits) - 1, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    size = 8 * (3 if abi >= 6 else 2 if abi >= 4 else 1)
    fd = _SYSCALL(444, ctypes.byref(attr), size, 0)
    if fd < 0:
        return False
    ok = bool(_SYSCALL(446, fd, 0) == 0)  # landlock_restrict_self: no rule, so no file is reachable
    os.close(fd)
    return ok


def _isolate_network_and_user() -> dict[str, Any]:
    layers: dict[str, Any] = {"netns": False, "uid": os.geteuid()}
    if os.geteuid() == 0:
        layers["netns"] = _LIBC.unshare(0x40000000 | 0x08000000) == 0  # NEWNET | NEWIPC
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        layers["uid"] = os.geteuid()
    else:
        layers["netns"] = _LIBC.unshare(0x10000000 | 0x40000000 | 0x08000000) == 0  # +NEWUSER
    return layers


def _lock_down(limits: dict[str, Any]) -> dict[str, Any]:
    os.chdir("/")
    os.environ.clear()
    memory = int(limits["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    layers = _isolate_network_and_user()
    if _LIBC.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS: needed by landlock and seccomp
        return {**layers, "landlock": False, "seccomp": False}
    layers["landlock"] = _install_landlock()
    layers["seccomp"] = _install_seccomp()
    if layers["seccomp"]:
        try:
            os.close(os.open("/", os.O_RDONLY))
            layers["seccomp"] = False  # the filter is not doing its job: fail closed
        except OSError:
            pass
    return layers


def _on_cpu_timer(signum: int, frame: object) -> None:
    error = LimitExceeded("cpu", "sandbox: this turn used up its CPU time")
    if _STATE["in_channel"]:
        _STATE["pending"] = error
        return
    raise error


# --------------------------------------------------------------------------------- the turns


class _Bounded:
    """A text stream that keeps at most ``limit`` characters, then raises ``LimitExceeded``."""

    def __init__(self, limit: int, shared: list[int]) -> None:
        self.parts: list[str] = []
        self.limit = limit
        self.shared = shared  # [characters written so far, stdout and stderr together]

    def write(self, text: object) -> int:
        text = str(text)
        room = self.limit - self.shared[0]
        if len(text) > room:
            self.parts.append(text[: max(room, 0)])
            self.shared[0] = self.limit
            raise LimitExceeded("output", f"sandbox: output over {self.limit:,} characters")
        self.parts.append(text)
        self.shared[0] += len(text)
        return len(text)

    def flush(self) -> None:
        return None

    def getvalue(self) -> str:
        return "".join(self.parts)


def _variables(namespace: dict[str, Any]) -> list[str]:
    kinds = (str, int, float, bool, list, dict, tuple)
    return [k for k, v in namespace.items() if not k.startswith("_") and isinstance(v, kinds)]


def _format_error(exc: BaseException) -> tuple[str, str | None]:
    """The traceback the model reads, and the violation it stands for (None: a plain error)."""
    if isinstance(exc, LimitExceeded):
        return f"LimitExceeded: {exc}\n", exc.kind
    summary = traceback.TracebackException.from_exception(exc)
    frames = [f for f in summary.stack if f.filename.startswith("<repl")]
    summary.stack = traceback.StackSummary.from_list(frames)
    text = "".join(summary.format())[-_TRACEBACK_CHARS:]
    if isinstance(exc, MemoryError):
        return text + "sandbox: the REPL's memory limit was reached\n", "memory"
    if isinstance(exc, OSError) and exc.errno in (_EPERM, 13):
        note = (
            "sandbox: the operating system refused this: the REPL cannot reach files, the "
            "network, other processes or the environment\n"
        )
        return text + note, f"forbidden: {type(exc).__name__}"
    return text, None


def _exec_turn(
    code: str, namespace: dict[str, Any], limits: dict[str, Any], turn: int
) -> dict[str, Any]:
    limit, cpu_seconds = int(limits["output_chars"]), float(limits["cpu_seconds"])
    shared = [0]
    out, err = _Bounded(limit, shared), _Bounded(limit, shared)
    _STATE["violations"] = []
    violation = None
    filename = f"<repl-{turn}>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    try:
        exec(compile(code, filename, "exec"), namespace)  # noqa: S102 - the jail's purpose
    except BaseException as exc:  # noqa: BLE001 - everything the code raises is reported
        signal.setitimer(signal.ITIMER_PROF, 0)
        sys.stdout, sys.stderr = saved
        text, violation = _format_error(exc)
        err.parts.append(text)
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        sys.stdout, sys.stderr = saved
    if violation is None and _STATE["violations"]:
        violation = _STATE["violations"][0]
    return {
        "op": "result",
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "variables": _variables(namespace),
        "violation": violation,
    }


def _eval_value(
    expression: str, namespace: dict[str, Any], limits: dict[str, Any]
) -> dict[str, Any]:
    limit = int(limits["output_chars"])
    signal.setitimer(signal.ITIMER_PROF, float(limits["cpu_seconds"]))
    try:
        text = str(eval(expression, namespace))  # noqa: S307 - the jail's purpose
    except BaseException:  # noqa: BLE001 - value() reports any failure as None
        return {"op": "value", "value": None}
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
    return {"op": "value", "value": text[:limit]}


def _serve(
    namespace: dict[str, Any], limits: dict[str, Any], stubs: dict[str, Callable[..., Any]]
) -> None:
    turn = 0
    while True:
        request = _recv()
        op = request.get("op")
        if op == "exec":
            turn += 1
            try:
                result = _exec_turn(request["code"], namespace, limits, turn)
            except LimitExceeded as exc:  # the CPU timer fired just as the turn ended
                result = {"op": "result", "stdout": "", "stderr": f"LimitExceeded: {exc}\n"}
                result.update(variables=_variables(namespace), violation=exc.kind)
            namespace.update(stubs)  # reserved names, as the official REPL restores its scaffold
            if request.get("silent"):
                failed = result["stderr"] or result["violation"]
                result = {"op": "silent", "error": failed and result["stderr"][-2000:]}
            _send(result)
        elif op == "value":
            try:
                _send(_eval_value(request["expression"], namespace, limits))
            except LimitExceeded:
                _send({"op": "value", "value": None})
        else:
            os._exit(0)


def _decode_text(data: bytearray, lengths: list[int] | None) -> str | list[str]:
    """A str binding, or a list of str from one frame and the documents' UTF-8 lengths."""
    if lengths is None:
        return data.decode("utf-8", "surrogatepass")
    view, docs, at = memoryview(data), [], 0
    for n in lengths:
        docs.append(str(view[at : at + n], "utf-8", "surrogatepass"))
        at += n
    return docs


def main() -> None:
    """Load the bindings, lock the process down, report the layers, then serve the host."""
    global _IN_FD, _OUT_FD
    _IN_FD, _OUT_FD = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    _LIBC.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the host
    start = _recv()
    limits = start["limits"]
    _preload()
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": _safe_builtins()}
    namespace.update(start["bindings"])
    for name, lengths in start["texts"]:
        namespace[name] = _decode_text(_recv_bytes(), lengths)
    stubs = {name: _make_stub(name) for name in start["functions"]}
    namespace.update(stubs)
    del start
    signal.signal(signal.SIGPROF, _on_cpu_timer)
    layers = _lock_down(limits)
    os.dup2(null, 2)
    os.close(null)
    for name in ("ctypes", "_ctypes", "ctypes._endian"):
        sys.modules.pop(name, None)
    _send({"op": "ready", "layers": layers, "pid": os.getpid()})
    if not layers["seccomp"]:
        os._exit(3)
    _serve(namespace, limits, stubs)


if __name__ == "__main__":
    main()
