"""Hostile model-written code against the jailed REPL (issue #48 item 2, "How to prove it").

Every program runs twice: in the jail, where it must be contained with a clear error, and in a
plain unsandboxed ``exec`` (tests/sandbox_baseline.py), where the same check must FAIL: those runs
are strict expected failures, so the battery shows the sandbox is what stops each attack. The
jail's runs share one worker where the program leaves it alive (a worker start is ~50 ms).
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from unittest import mock

import pytest

from longctx.graphs.sandbox import jail
from longctx.graphs.sandbox.jail import JailedRepl, open_jailed_repl
from longctx.graphs.sandbox.protocol import ExecutionResult, SandboxLimits
from tests.sandbox_baseline import ChildExec, InProcessExec

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
    reason="the jail needs Linux x86_64 (seccomp); elsewhere it refuses to open (fails closed)",
)
KEY_NAME, KEY = "LONGCTX_HOSTILE_API_KEY", "sk-hostile-0123456789"
BUDGET = 20
LIMITS = SandboxLimits(
    cpu_seconds=0.5, wall_seconds=30.0, memory_bytes=1024**3, output_chars=20_000
)
#: The ``os`` module's globals, reached with no import through a class every interpreter loads.
OS = "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0].__init__.__globals__"  # noqa: E501
#: Every class the interpreter has loaded, reached from ``object``.
WALK = """
def walk():
    seen, todo = [], [object]
    while todo:
        cls = todo.pop()
        seen.append(cls)
        try:
            todo.extend(cls.__subclasses__())
        except TypeError:
            todo.extend(cls.__subclasses__(cls))
    return seen
"""


class Model:
    """The model behind ``llm_query``: ``calls`` counts what actually reached it."""

    def __init__(self) -> None:
        self.calls = 0
        self.counted = 0

    def complete(self, prompt: str) -> str:
        self.calls += 1
        return f"reply to {prompt[:20]}"


MODEL = Model()


def _make_llm_query(model: Model) -> Callable[[str], str]:
    def llm_query(prompt: str) -> str:
        """The host's accounted call: a budget of BUDGET calls, each one counted."""
        model.counted += 1
        if model.counted > BUDGET:
            raise RuntimeError("budget: no model calls left")
        return model.complete(prompt)

    return llm_query


LLM_QUERY = _make_llm_query(MODEL)


@dataclass
class Env:
    secret: Path
    out: Path
    port: int
    victim: subprocess.Popen | None = None

    def code(self, template: str) -> str:
        return (
            template.replace("@SECRET@", repr(str(self.secret)))
            .replace("@DIR@", repr(str(self.secret.parent)))
            .replace("@OUT@", repr(str(self.out)))
            .replace("@PORT@", str(self.port))
            .replace("@KEY@", repr(KEY_NAME))
            .replace("@VICTIM@", str(self.victim.pid if self.victim else 0))
            .replace("@OS@", OS)
            .replace("@WALK@", WALK)
        )


@pytest.fixture(scope="module")
def listener():
    server = socket.create_server(("127.0.0.1", 0))
    yield server.getsockname()[1]
    server.close()


@pytest.fixture(scope="module")
def api_key():
    os.environ[KEY_NAME] = KEY
    yield KEY
    os.environ.pop(KEY_NAME, None)


@pytest.fixture(scope="module")
def shared(api_key) -> Any:
    """One jailed REPL for the programs that leave it alive; reopened if one kills it."""
    holder: dict[str, JailedRepl] = {}

    def get() -> JailedRepl:
        repl = holder.get("repl")
        if repl is None or repl.dead_reason is not None:
            holder["repl"] = open_jailed_repl(
                bindings={"context": "the corpus"},
                functions={"llm_query": LLM_QUERY},
                limits=LIMITS,
            )
        return holder["repl"]

    yield get
    if "repl" in holder:
        holder["repl"].close()


@pytest.fixture
def env(tmp_path, listener):
    secret = tmp_path / "user" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP-SECRET-42")
    secret.parent.chmod(0o755)
    tmp_path.chmod(0o755)
    secret.chmod(0o644)  # readable by anyone: only the jail may stop the read
    MODEL.calls = MODEL.counted = 0
    e = Env(secret=secret, out=tmp_path / "pwned.txt", port=listener)
    yield e
    if e.victim is not None:
        e.victim.kill()
        e.victim.wait()


def _forbidden(res: ExecutionResult) -> None:
    assert res.violation is not None and res.violation.startswith("forbidden"), res
    assert "sandbox:" in res.stderr, res.stderr


def _no_secret(res: ExecutionResult, env: Env) -> None:
    assert "TOP-SECRET" not in res.stdout + res.stderr
    _forbidden(res)


def _no_listing(res: ExecutionResult, env: Env) -> None:
    assert "secret.txt" not in res.stdout
    _forbidden(res)


def _not_written(res: ExecutionResult, env: Env) -> None:
    assert not env.out.exists()
    _forbidden(res)


def _no_key(res: ExecutionResult, env: Env) -> None:
    assert KEY not in res.stdout + res.stderr


def _no_key_forbidden(res: ExecutionResult, env: Env) -> None:
    _no_key(res, env)
    _forbidden(res)


def _not_connected(res: ExecutionResult, env: Env) -> None:
    assert "connected" not in res.stdout
    _forbidden(res)


def _raw_socket_refused(res: ExecutionResult, env: Env) -> None:
    assert "socket fd -1" in res.stdout, res


def _no_process(res: ExecutionResult, env: Env) -> None:
    assert "pwned" not in res.stdout and "forked" not in res.stdout
    assert not env.out.exists()
    _forbidden(res)


def _system_refused(res: ExecutionResult, env: Env) -> None:
    assert not env.out.exists()
    assert "status -1" in res.stdout, res  # the shell never started


def _victim_alive(res: ExecutionResult, env: Env) -> None:
    assert env.victim is not None and env.victim.poll() is None
    _forbidden(res)


def _limit(kind: str, alive: bool = True) -> Callable[[ExecutionResult, Env], None]:
    def check(res: ExecutionResult, env: Env) -> None:
        assert res.violation == kind, res
        assert res.alive is alive
        assert "sandbox:" in res.stderr, res.stderr

    return check


def _crash_contained(res: ExecutionResult, env: Env) -> None:
    assert res.violation in ("crashed", "memory"), res
    assert "sandbox:" in res.stderr


def _output_capped(res: ExecutionResult, env: Env) -> None:
    assert len(res.stdout) <= LIMITS.output_chars
    _limit("output")(res, env)


def _model_only_through_host(res: ExecutionResult, env: Env) -> None:
    assert MODEL.calls == min(MODEL.counted, BUDGET), (MODEL.calls, MODEL.counted)


def _bomb_counted(res: ExecutionResult, env: Env) -> None:
    assert MODEL.counted == 300, MODEL.counted  # the host ran (and counted) every call
    assert MODEL.calls == BUDGET, MODEL.calls  # and the model saw no call past the budget


@dataclass(frozen=True)
class Case:
    name: str
    code: str
    check: Callable[[ExecutionResult, Env], None]
    plain: str = "child"  # the unsandboxed run: "inproc" (safe here) or "child" (a throwaway)
    own_repl: bool = False  # the program kills its worker: it gets its own
    limits: SandboxLimits = LIMITS


CASES = [
    Case("read_etc_passwd", "print(open('/etc/passwd').read())", _no_secret, "inproc"),
    Case("read_user_file", "print(open(@SECRET@).read())", _no_secret, "inproc"),
    Case(
        "read_through_the_builtins_module",
        "print(print.__self__.open(@SECRET@).read())",
        _no_secret,
        "inproc",
    ),
    Case(
        "read_through_subclasses_fileio",
        "@WALK@\nF = [c for c in walk() if c.__name__ == 'FileIO'][0]\nprint(F(@SECRET@).read())",
        _no_secret,
        "inproc",
    ),
    Case(
        "read_through_os_escape",
        "o = @OS@\nprint(o['read'](o['open'](@SECRET@, 0), 100))",
        _no_secret,
        "inproc",
    ),
    Case("list_user_dir", "print((@OS@)['listdir'](@DIR@))", _no_listing, "inproc"),
    Case("write_file", "open(@OUT@, 'w').write('pwned')", _not_written, "inproc"),
    Case(
        "write_through_os_escape",
        "o = @OS@\no['write'](o['open'](@OUT@, o['O_WRONLY'] | o['O_CREAT']), b'pwned')",
        _not_written,
        "inproc",
    ),
    Case(
        "environ_import_os", "import os\nprint(os.environ.get(@KEY@))", _no_key_forbidden, "inproc"
    ),
    Case("environ_through_escape", "print(dict((@OS@)['environ']))", _no_key, "inproc"),
    Case(
        "environ_through_proc",
        "print(print.__self__.open('/proc/self/environ').read())",
        _no_key_forbidden,
    ),
    Case(
        "socket_import",
        "import socket\nsocket.create_connection(('127.0.0.1', @PORT@))\nprint('connected')",
        _not_connected,
        "inproc",
    ),
    Case(
        "socket_through_the_real_import",
        "s = print.__self__.__import__('socket')\n"
        "s.create_connection(('127.0.0.1', @PORT@))\nprint('connected')",
        _not_connected,
        "inproc",
    ),
    Case(
        "socket_syscall_through_ctypes_escape",
        "@WALK@\ncdll = [c for c in walk() if c.__name__ == 'CDLL']\n"
        "if not cdll:\n    import ctypes\n    cdll = [ctypes.CDLL]\n"
        "print('socket fd', cdll[0](None).socket(2, 1, 0))",
        _raw_socket_refused,
    ),
    Case(
        "subprocess_run",
        "import subprocess\nprint(subprocess.run(['echo', 'pwned'], capture_output=True).stdout)",
        _no_process,
    ),
    Case("os_system", "import os\nos.system('echo pwned > ' + @OUT@)", _no_process),
    Case(
        "os_system_through_escape",
        "print('status', -1 if (@OS@)['system']('echo pwned > ' + @OUT@) else 0)",
        _system_refused,
    ),
    Case(
        "fork_through_escape",
        "o = @OS@\npid = o['fork']()\nif pid == 0:\n    o['_exit'](0)\nprint('forked', pid)",
        _no_process,
    ),
    Case(
        "exec_through_escape",
        "(@OS@)['execv']('/bin/echo', ['echo', 'pwned'])",
        _no_process,
    ),
    Case("kill_another_process", "(@OS@)['kill'](@VICTIM@, 9)", _victim_alive, "inproc"),
    Case("while_true", "while True:\n    pass", _limit("cpu")),
    Case(
        "cpu_limit_swallowed",
        "import collections\nsig = collections._sys.modules['signal']\n"
        "sig.signal(sig.SIGPROF, sig.SIG_IGN)\nwhile True:\n    pass",
        _limit("cpu", alive=False),
        own_repl=True,
    ),
    Case("allocate_10_gb", "b = bytearray(10 * 1024**3)", _limit("memory")),
    Case(
        "memory_growth",
        "def grow():\n    chunks = []\n    while True:\n"
        "        chunks.append(bytes(10**8))\ngrow()",
        _limit("memory"),
    ),
    Case(
        "recursion_past_the_interpreter_guard",
        "import collections\ncollections._sys.setrecursionlimit(10**8)\n"
        "x = []\nfor _ in range(3 * 10**5):\n    x = [x]\nprint(repr(x)[:10])",
        _crash_contained,
        own_repl=True,
        limits=SandboxLimits(cpu_seconds=10.0, wall_seconds=30.0, memory_bytes=1024**3),
    ),
    Case("output_flood", "for _ in range(10**4):\n    print('x' * 1000)", _output_capped),
    Case(
        "sleep_past_the_wall",
        "import time\ntime.sleep(60)",
        _limit("wall", alive=False),
        own_repl=True,
        limits=SandboxLimits(cpu_seconds=1.0, wall_seconds=1.0, memory_bytes=1024**3),
    ),
    Case("import_longctx", "import longctx\nprint(longctx.__name__)", lambda r, e: _forbidden(r)),
    Case(
        "import_langchain_through_the_real_import",
        "m = print.__self__.__import__('langchain')\nprint('imported', m.__name__)",
        lambda r, e: _forbidden(r) if "imported" not in r.stdout else pytest.fail(r.stdout),
    ),
    Case(
        "import_ctypes",
        "import ctypes\nprint(ctypes.CDLL(None).getpid())",
        lambda r, e: _forbidden(r),
    ),
    Case(
        "reach_the_model_behind_llm_query",
        "raw = [c.cell_contents for c in (llm_query.__closure__ or ())]\n"
        "llm_query = lambda prompt: 'free'\n"
        "model = [m for m in raw if hasattr(m, 'complete')][0]\n"
        "for i in range(50):\n    model.complete(str(i))",
        _model_only_through_host,
        "inproc",
    ),
    Case(
        "llm_query_bomb_then_bypass",
        "real = llm_query\nllm_query = lambda prompt: 'free'\n"
        "for i in range(300):\n    try:\n        real(str(i))\n"
        "    except RuntimeError:\n        pass\n"
        "model = [c.cell_contents for c in real.__closure__][0]\n"
        "for i in range(100):\n    model.complete('past the budget')",
        _bomb_counted,
        "inproc",
    ),
]


def _run_jailed(case: Case, env: Env, shared: Callable[[], JailedRepl]) -> ExecutionResult:
    code = env.code(case.code)
    if not case.own_repl:
        return shared().execute(code)
    with (
        mock.patch.object(jail, "_CPU_GRACE_SECONDS", 0.5),
        open_jailed_repl(
            bindings={}, functions={"llm_query": LLM_QUERY}, limits=case.limits
        ) as repl,
    ):
        return repl.execute(code)


def _run_plain(case: Case, env: Env) -> ExecutionResult:
    code = env.code(case.code)
    if case.plain == "inproc":
        return InProcessExec({"context": "the corpus"}, {"llm_query": LLM_QUERY}).execute(code)
    return ChildExec().execute(code)


_PLAIN_FAILS = pytest.mark.xfail(
    strict=True, reason="a plain exec does not stop it: the sandbox is what does"
)


@pytest.mark.parametrize(
    ("case", "runner"),
    [pytest.param(c, "jail", id=f"{c.name}-jail") for c in CASES]
    + [pytest.param(c, "plain", id=f"{c.name}-plain", marks=_PLAIN_FAILS) for c in CASES],
)
def test_hostile_program_is_contained(case: Case, runner: str, env: Env, shared) -> None:
    if case.name == "kill_another_process":
        env.victim = subprocess.Popen(["sleep", "60"])
    if runner == "jail":
        res = _run_jailed(case, env, shared)
    else:
        res = _run_plain(case, env)
    case.check(res, env)


def test_the_battery_has_at_least_25_programs() -> None:
    assert len({c.name for c in CASES}) >= 25


def test_the_shared_repl_still_answers_after_the_battery(shared) -> None:
    MODEL.calls = MODEL.counted = 0
    res = shared().execute("print(len(context), llm_query('x'))")
    assert res.stdout.startswith("10 ") and res.alive


def test_a_forged_channel_message_kills_the_worker_not_the_host(shared) -> None:
    with open_jailed_repl(bindings={}, functions={"SHOW": lambda: "ok"}, limits=LIMITS) as repl:
        res = repl.execute("g = SHOW.__globals__\ng['os'].write(g['_OUT_FD'], b'\\xff' * 16)")
        assert res.violation == "protocol" and res.alive is False
        assert repl.execute("1").violation == "dead"
    assert shared().execute("print(1)").stdout == "1\n"


def test_a_call_to_a_host_function_the_repl_was_not_given_is_refused() -> None:
    with open_jailed_repl(bindings={}, functions={"SHOW": lambda: "ok"}, limits=LIMITS) as repl:
        res = repl.execute(
            "f = SHOW.__globals__['_host_call']\ntry:\n    f('open', ('/etc/passwd',), {})\n"
            "except RuntimeError as e:\n    print(e)"
        )
    assert "no host function 'open'" in res.stdout
    assert repl.host_calls["open"] == 0


def _namespaces_allowed() -> bool:
    if os.geteuid() == 0:
        return True
    knob = Path("/proc/sys/kernel/unprivileged_userns_clone")
    limit = Path("/proc/sys/user/max_user_namespaces")
    return (not knob.exists() or knob.read_text().strip() == "1") and (
        not limit.exists() or int(limit.read_text()) > 0
    )


def test_the_worker_reports_its_kernel_layers() -> None:
    with open_jailed_repl(bindings={}, functions={}, limits=LIMITS) as repl:
        assert repl.layers["seccomp"] is True
        if _namespaces_allowed():
            assert repl.layers["netns"] is True
        assert os.geteuid() != 0 or repl.layers["uid"] == 65534


def test_case_ids_are_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


def test_a_forged_call_whose_reply_the_worker_never_reads_cannot_hang_the_host() -> None:
    limits = SandboxLimits(cpu_seconds=1.0, wall_seconds=1.0, memory_bytes=1024**3)
    functions = {"big": lambda: "x" * 10**6, "SHOW": lambda: "ok"}
    with open_jailed_repl(bindings={}, functions=functions, limits=limits) as repl:
        res = repl.execute(
            "import json, time\ng = SHOW.__globals__\n"
            "msg = json.dumps({'op': 'call', 'name': 'big', 'args': [], 'kwargs': {}}).encode()\n"
            "g['os'].write(g['_OUT_FD'], g['_HEADER'].pack(len(msg)) + msg)\n"
            "while True:\n    time.sleep(1)"
        )
    assert res.violation == "wall" and res.alive is False


def test_a_worker_that_closes_its_channel_and_spins_is_killed() -> None:
    with open_jailed_repl(bindings={}, functions={"SHOW": lambda: "ok"}, limits=LIMITS) as repl:
        res = repl.execute(
            "import collections\nsig = collections._sys.modules['signal']\n"
            "sig.setitimer(sig.ITIMER_PROF, 0)\nsig.signal(sig.SIGPROF, sig.SIG_IGN)\n"
            "g = SHOW.__globals__\ng['os'].close(g['_OUT_FD'])\nwhile True:\n    pass"
        )
    assert res.violation == "protocol" and res.alive is False
