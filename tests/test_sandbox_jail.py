"""The jailed REPL keeps the REPL contract of graphs/sandbox/protocol.py (issue #48 item 2).

Persistence across turns, the variables listing, ``value()``, host functions (arguments, returns,
exceptions, counted in the host), bindings loaded once, scaffold code, closing, and failing closed
where the jail cannot be built. One worker serves the file where a test leaves it alive.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from longctx.graphs.sandbox import _worker, jail
from longctx.graphs.sandbox.jail import SandboxError, SandboxUnavailable, open_jailed_repl
from longctx.graphs.sandbox.protocol import Repl, SandboxLimits

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine() == "x86_64"),
    reason="the jail needs Linux x86_64 (seccomp); elsewhere it refuses to open (fails closed)",
)
LIMITS = SandboxLimits(cpu_seconds=5.0, wall_seconds=30.0, memory_bytes=1024**3, output_chars=5000)
SEEN: list[object] = []


def echo(*args: object, **kwargs: object) -> object:
    SEEN.append((args, kwargs))
    return {"args": list(args), "kwargs": kwargs}


def fail(message: str) -> str:
    raise ValueError(message)


def unjsonable() -> object:
    return {1, 2}


@pytest.fixture(scope="module")
def repl():
    functions = {"echo": echo, "fail": fail, "unjsonable": unjsonable}
    docs = ["first document", "zweites Dokument, ünïcode 🌍"]
    bindings = {"context": "héllo wörld 🌍 " * 1000, "docs": docs, "n_docs": 2}
    with open_jailed_repl(bindings=bindings, functions=functions, limits=LIMITS) as r:
        yield r


def test_it_is_a_repl(repl) -> None:
    assert isinstance(repl, Repl)


def test_the_namespace_lives_across_turns(repl) -> None:
    assert repl.execute("total = 40").stderr == ""
    repl.execute("def add(x):\n    return x + total")
    res = repl.execute("print(add(2))")
    assert res.stdout == "42\n" and res.violation is None and res.alive


def test_bindings_arrive_whole_str_and_list(repl) -> None:
    res = repl.execute("print(len(context), context[:5], docs[1][-1], n_docs)")
    assert res.stdout == f"{len('héllo wörld 🌍 ' * 1000)} héllo 🌍 2\n"


def test_variables_lists_public_data_in_definition_order(repl) -> None:
    res = repl.execute("zeta = [1]\n_hidden = 2\nalpha = {'a': 1}\nf = lambda: 1\nflag = True")
    names = res.variables
    assert names.index("zeta") < names.index("alpha") < names.index("flag")
    assert {"context", "docs", "n_docs"} <= set(names)
    assert "_hidden" not in names and "f" not in names and "echo" not in names


def test_value_returns_str_or_none(repl) -> None:
    repl.execute("answer = {'k': [1, 2]}")
    assert repl.value("answer") == "{'k': [1, 2]}"
    assert repl.value("answer['k'][1] * 10") == "20"
    assert repl.value("undefined_name") is None


def test_value_is_cut_at_the_output_limit(repl) -> None:
    assert len(repl.value("'x' * 100_000") or "") == LIMITS.output_chars


def test_host_functions_take_args_and_kwargs_and_return_json_values(repl) -> None:
    SEEN.clear()
    res = repl.execute("r = echo(1, 'two', [3], k={'v': None})\nprint(r)")
    assert res.stdout == "{'args': [1, 'two', [3]], 'kwargs': {'k': {'v': None}}}\n"
    assert SEEN == [((1, "two", [3]), {"k": {"v": None}})]  # ran here, in the host


def test_a_host_exception_reaches_the_code_as_runtime_error(repl) -> None:
    res = repl.execute("try:\n    fail('no budget')\nexcept RuntimeError as e:\n    print(e)")
    assert res.stdout == "ValueError: no budget\n"


def test_arguments_and_returns_must_be_json_values(repl) -> None:
    res = repl.execute("try:\n    echo({1, 2})\nexcept TypeError as e:\n    print('T', e)")
    assert res.stdout.startswith("T echo(): arguments must be")
    res = repl.execute("try:\n    unjsonable()\nexcept RuntimeError as e:\n    print('R', e)")
    assert res.stdout.startswith("R TypeError")


def test_host_calls_are_counted_in_the_host(repl) -> None:
    before = repl.host_calls["echo"]
    repl.execute("for i in range(7):\n    echo(i)")
    assert repl.host_calls["echo"] - before == 7


def test_a_host_function_replaced_by_the_code_is_rebound_after_the_turn(repl) -> None:
    res = repl.execute("echo = lambda *a: 'fake'\nprint(echo(1))")
    assert res.stdout == "fake\n"
    assert repl.execute("print(echo(1))").stdout == "{'args': [1], 'kwargs': {}}\n"


def test_bindings_are_sent_once_not_per_turn(repl) -> None:
    after_start = repl.bytes_sent
    assert after_start > len("héllo wörld 🌍 ".encode() * 1000)
    for _ in range(5):
        repl.execute("x = len(context)")
    assert repl.bytes_sent - after_start < 500  # five small requests, no context


def test_an_exception_is_a_traceback_of_the_code_only(repl) -> None:
    res = repl.execute("def f():\n    raise ValueError('boom')\nf()")
    assert "ValueError: boom" in res.stderr and "line 2, in f" in res.stderr
    assert "_worker.py" not in res.stderr and res.violation is None and res.alive


def test_output_over_the_limit_is_cut_and_reported(repl) -> None:
    res = repl.execute("print('a' * 3000)\nprint('b' * 3000)\nprint('never')")
    assert res.violation == "output" and len(res.stdout) == LIMITS.output_chars
    assert "never" not in res.stdout and res.alive


def test_run_silently_runs_scaffold_and_raises_when_it_fails(repl) -> None:
    repl.run_silently("def SHOW_VARS():\n    return 'Available variables'")
    assert repl.value("SHOW_VARS()") == "Available variables"
    with pytest.raises(SandboxError, match="scaffold code failed"):
        repl.run_silently("1 / 0")


def test_eval_exec_compile_globals_locals_are_none_as_in_the_official_repl(repl) -> None:
    res = repl.execute("print([f is None for f in (eval, exec, compile, globals, locals)])")
    assert res.stdout == "[True, True, True, True, True]\n"


def test_a_closed_repl_refuses_further_calls() -> None:
    r = open_jailed_repl(bindings={}, functions={}, limits=LIMITS)
    r.close()
    with pytest.raises(SandboxError):
        r.execute("1")
    r.close()  # twice is harmless


def test_a_dead_repl_says_so_on_the_next_execute() -> None:
    limits = SandboxLimits(cpu_seconds=1.0, wall_seconds=0.5, memory_bytes=1024**3)
    with open_jailed_repl(bindings={}, functions={}, limits=limits) as r:
        first = r.execute("import time\ntime.sleep(5)")
        assert first.violation == "wall" and not first.alive
        second = r.execute("print(1)")
    assert second.violation == "dead" and not second.alive
    assert "no longer running" in second.stderr


def test_it_fails_closed_when_the_worker_cannot_install_seccomp(monkeypatch, tmp_path) -> None:
    fake = tmp_path / "worker.py"
    fake.write_text(
        "import json, os, struct\n"
        "os.read(0, 8)\n"
        "body = json.dumps({'op': 'ready', 'layers': {'seccomp': False}}).encode()\n"
        "os.write(1, struct.pack('>Q', len(body)) + body)\n"
    )
    monkeypatch.setattr(jail, "_WORKER", Path(fake))
    with pytest.raises(SandboxUnavailable, match="needs a seccomp filter"):
        open_jailed_repl(bindings={}, functions={}, limits=LIMITS)


def test_the_worker_path_holds_the_standard_library_only(repl) -> None:
    res = repl.execute("import collections\nprint(collections._sys.path)")
    repo = str(Path(__file__).resolve().parents[1])
    assert "site-packages" not in res.stdout and repo not in res.stdout, res.stdout
    assert "python3" in res.stdout  # the standard library is there


def test_an_interrupt_in_a_host_function_ends_the_repl_and_reaches_the_host() -> None:
    def interrupted(prompt: str) -> str:
        raise KeyboardInterrupt

    with open_jailed_repl(bindings={}, functions={"ask": interrupted}, limits=LIMITS) as r:
        with pytest.raises(KeyboardInterrupt):
            r.execute("ask('x')")
        res = r.execute("print(1)")
    assert res.violation == "dead" and "stopped this turn" in res.stderr


def test_the_seccomp_program_jumps_stay_in_range() -> None:
    program = _worker._bpf_program()
    assert program[-1] == (0x06, 0, 0, 0x00050001)  # the last instruction refuses with EPERM
    assert all(0 <= jt <= 255 and 0 <= jf <= 255 for _, jt, jf, _ in program)
