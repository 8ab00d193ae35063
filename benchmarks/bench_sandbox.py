"""The jailed REPL's costs: per-turn overhead against a plain in-process exec, and opening a REPL
over a 10M-token context.

    python -m benchmarks.bench_sandbox                 # 10M tokens (~40 MB), 300 turns
    python -m benchmarks.bench_sandbox --tokens 1000000 --turns 100

Per turn: the median and 90th percentile of ``execute`` for a statement, a print, a host call
(``llm_query`` answered in the host) and a regex over the whole context, in the jail and in a plain
``exec`` in this process. Opening: the wall time of ``open_jailed_repl`` with the context as one
str and as a list of 1,000 documents, and the peak RSS of the host (VmHWM reset before each open)
and of the worker. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from longctx.graphs.sandbox.jail import open_jailed_repl
from longctx.graphs.sandbox.protocol import SandboxLimits

LIMITS = SandboxLimits(cpu_seconds=60.0, wall_seconds=600.0, memory_bytes=4 * 1024**3)
TURNS = {
    "statement": "x = 1",
    "print": "print(len(context))",
    "host call": "r = llm_query('hello')",
}


def _hwm_mb(pid: int | str = "self") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_hwm() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def _context(tokens: int) -> str:
    sentence = "The quick brown fox jumps over the lazy dog near the river bank. "
    chars = tokens * 4
    return (sentence * (chars // len(sentence) + 1))[:chars]


def _timed(run: Callable[[str], Any], code: str, turns: int) -> tuple[float, float]:
    seconds = []
    for _ in range(turns):
        started = time.perf_counter()
        run(code)
        seconds.append(time.perf_counter() - started)
    seconds.sort()
    return statistics.median(seconds) * 1e3, seconds[int(len(seconds) * 0.9)] * 1e3


def _plain_runner(namespace: dict[str, Any]) -> Callable[[str], Any]:
    def run(code: str) -> None:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(code, "<plain>", "exec"), namespace)

    return run


def per_turn(context: str, turns: int) -> None:
    """Print the per-turn overhead, jail against plain exec."""
    functions = {"llm_query": lambda prompt: "reply"}
    turns_code = {**TURNS, "regex over the context": "n = len(re.findall('fox', context))"}
    plain = _plain_runner({"context": context, **functions, "re": __import__("re")})
    with open_jailed_repl(bindings={"context": context}, functions=functions, limits=LIMITS) as r:
        r.execute("import re")
        print(f"per turn, {turns} turns (ms)       jail p50   p90 | plain exec p50   p90")
        for name, code in turns_code.items():
            n = turns if "regex" not in name else max(turns // 30, 5)
            jail_p50, jail_p90 = _timed(r.execute, code, n)
            plain_p50, plain_p90 = _timed(plain, code, n)
            print(
                f"  {name:<30} {jail_p50:8.3f} {jail_p90:6.3f} | {plain_p50:14.3f} {plain_p90:6.3f}"
            )


def opening(context: str) -> None:
    """Print the cost of opening a REPL with the context, as a str and as 1,000 documents."""
    size = len(context) // 1000
    shapes: dict[str, Any] = {
        "empty": "",
        f"str of {len(context) / 1e6:.0f} M chars": context,
        "list of 1,000 documents": [context[i : i + size] for i in range(0, len(context), size)],
    }
    rss = _rss_mb()
    print(f"host RSS before opening (the benchmark holds the context twice): {rss:.0f} MB")
    print("opening a REPL             seconds   host peak RSS MB   worker peak RSS MB")
    for name, value in shapes.items():
        _reset_hwm()
        started = time.perf_counter()
        repl = open_jailed_repl(bindings={"context": value}, functions={}, limits=LIMITS)
        seconds = time.perf_counter() - started
        repl.execute("n = len(context)")
        worker = _hwm_mb(repl._proc.pid)
        host = _hwm_mb()
        repl.close()
        print(f"  {name:<26} {seconds:7.3f} {host:18.0f} {worker:20.0f}")


def main() -> None:
    """Measure and print both tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=10_000_000)
    ap.add_argument("--turns", type=int, default=300)
    args = ap.parse_args()
    context = _context(args.tokens)
    print(f"context: {args.tokens:,} tokens as {len(context):,} characters (4 a token)")
    opening(context)
    per_turn(context, args.turns)


if __name__ == "__main__":
    main()
