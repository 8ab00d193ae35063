"""The embedded model's speed: through the library against bare llama-cpp-python, side by side.

    # library vs bare (best settings) vs llama-cpp-python's defaults
    python -m benchmarks.bench_embedded
    # + each setting changed alone (threads, flash attention, batches)
    python -m benchmarks.bench_embedded --sweep
    # + a second llama_cpp build (e.g. AVX-512) installed in DIR
    python -m benchmarks.bench_embedded --other-build DIR

Every contender is measured once per round, rounds interleaved, so a load that comes and goes
hits them alike; the median of the rounds is printed with the load average before and after.
Prefill: a prompt of N tokens answered with one token (a different first word each call, so no
prompt prefix is reused beyond the chat template's). Generation: the same prompt again with a
64-token reply (the prompt is reused, so the call is its generation).

A contender is a name and a way to answer ``(messages, max_tokens) -> (seconds, prompt_tokens,
completion_tokens)``; a build in another directory runs in a subprocess (``--bare-json``) that
answers the same calls.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from longctx.agents.embedded_settings import EmbeddedSettings, usable_cores

Messages = list[dict[str, str]]
Call = Callable[[Messages, int], tuple[float, int, int]]

#: About 40 words per report line; the prompt is cut to the token count asked for.
REPORT = (
    "Report {i}: the harbour office logged {a} vessels, {b} inspections and {c} delays in week "
    "{i}, with notes on costs and margins."
)


def prompt_text(first_word: str, words: int) -> str:
    """A prose prompt of about ``words`` words that starts with ``first_word`` (so no two
    share a prefix)."""
    lines, i = [first_word + "."], 1
    while sum(len(x.split()) for x in lines) < words:
        lines.append(REPORT.format(i=i, a=i * 7, b=i * 3, c=i + 11))
        i += 1
    return " ".join(lines) + "\nWrite the next ten reports."


@dataclass
class Contender:
    """One way of running the model, and what it measured."""

    name: str
    call: Call
    prefill: dict[int, list[float]] = field(default_factory=dict)
    generation: list[float] = field(default_factory=list)

    def measure(self, round_no: int, sizes: list[int], gen_tokens: int) -> None:
        """One round: a prefill per prompt size, then a generation after the last prompt."""
        for n in sizes:
            messages = [
                {
                    "role": "user",
                    "content": prompt_text(f"Round {round_no} size {n} {self.name}", int(n * 0.72)),
                }
            ]
            seconds, prompt_tokens, _ = self.call(messages, 1)
            self.prefill.setdefault(n, []).append(prompt_tokens / seconds)
        seconds, _, written = self.call(
            messages, gen_tokens
        )  # the last prompt again: read already, so this is generation
        self.generation.append(written / seconds)


def bare_call(settings: dict[str, Any], model_path: str) -> Call:
    """Bare llama-cpp-python: ``Llama(**settings).create_chat_completion``."""
    from llama_cpp import Llama

    llama = Llama(model_path=model_path, n_ctx=8192, seed=0, verbose=False, **settings)

    def call(messages: Messages, max_tokens: int) -> tuple[float, int, int]:
        started = time.perf_counter()
        out = llama.create_chat_completion(
            messages=messages, max_tokens=max_tokens, temperature=0.0, seed=0
        )
        seconds = time.perf_counter() - started
        return seconds, out["usage"]["prompt_tokens"], out["usage"]["completion_tokens"]

    call(
        messages=[{"role": "user", "content": "Say hi."}], max_tokens=1
    )  # load and page in the weights
    return call


def library_call(settings: EmbeddedSettings) -> Call:
    """The library's embedded model (``EmbeddedChatModel``) as every strategy calls it: LangChain's
    ``invoke``, the shared-model lock, usage accounting; its reply cache off."""
    from langchain_core.messages import HumanMessage

    from longctx.agents.embedded_chat import EmbeddedChatModel

    chat = EmbeddedChatModel(cache=False, **settings.as_dict())

    def call(messages: Messages, max_tokens: int) -> tuple[float, int, int]:
        started = time.perf_counter()
        reply = chat.invoke(
            [HumanMessage(content=messages[0]["content"])], max_tokens=max_tokens, temperature=0.0
        )
        seconds = time.perf_counter() - started
        usage = reply.usage_metadata or {}
        return seconds, usage["input_tokens"], usage["output_tokens"]

    call([{"role": "user", "content": "Say hi."}], 1)
    return call


def subprocess_call(
    build_dir: str | None, settings: dict[str, Any], model_path: str, **env_vars: str
) -> Call:
    """Bare llama-cpp-python in a child process whose ``llama_cpp`` is imported from ``build_dir``
    (``None``: this environment's) with ``env_vars`` set (read when its OpenMP runtime starts),
    answering calls sent as JSON lines."""
    env = dict(
        os.environ,
        **env_vars,
        PYTHONPATH=os.pathsep.join(p for p in (build_dir, os.environ.get("PYTHONPATH", "")) if p),
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_embedded",
            "--bare-json",
            json.dumps(settings),
            "--model",
            model_path,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdin is not None and child.stdout is not None

    def call(messages: Messages, max_tokens: int) -> tuple[float, int, int]:
        child.stdin.write(json.dumps([messages, max_tokens]) + "\n")  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        reply = child.stdout.readline()  # type: ignore[union-attr]
        seconds, prompt_tokens, written = json.loads(reply)
        return seconds, prompt_tokens, written

    call([{"role": "user", "content": "Say hi."}], 1)
    return call


def serve_bare_json(settings: dict[str, Any], model_path: str) -> None:
    """The child's side of :func:`subprocess_call`: one JSON reply line per JSON request line."""
    call = bare_call(settings, model_path)
    import llama_cpp

    print(
        f"[{llama_cpp.__file__}] {llama_cpp.llama_print_system_info().decode().strip()}",
        file=sys.stderr,
        flush=True,
    )
    for line in sys.stdin:
        messages, max_tokens = json.loads(line)
        print(json.dumps(call(messages, max_tokens)), flush=True)


def contenders(
    model_path: str, sweep: bool, other_build: str | None, env_variants: list[str] | None = None
) -> list[Contender]:
    """The library and bare llama-cpp-python at the chosen settings, llama-cpp-python's own
    defaults (what the library ran with before the settings were chosen) and, asked for, one
    change at a time."""
    best = EmbeddedSettings()
    out = [
        Contender("library (chosen settings)", library_call(best)),
        Contender(
            "bare llama-cpp-python (chosen settings)", bare_call(best.llama_kwargs(), model_path)
        ),
        Contender("bare llama-cpp-python (its defaults)", bare_call({}, model_path)),
    ]
    if sweep:
        cores = usable_cores()
        changes = {
            "flash attention off": replace(best, flash_attn=False),
            f"generation threads {max(cores // 2, 1)}": replace(best, n_threads=max(cores // 2, 1)),
            "batch 2048": replace(best, n_batch=2048),
            "batch 256 / micro-batch 256": replace(best, n_batch=256, n_ubatch=256),
        }
        out += [
            Contender(f"bare, {name}", bare_call(s.llama_kwargs(), model_path))
            for name, s in changes.items()
        ]
        out.append(
            Contender(
                "bare, KV cache q8_0",
                bare_call({**best.llama_kwargs(), "type_k": 8, "type_v": 8}, model_path),
            )
        )
    if sweep or other_build or env_variants:
        out.append(
            Contender(
                "bare, this build (subprocess)",
                subprocess_call(None, best.llama_kwargs(), model_path),
            )
        )
    for variant in (
        env_variants or ()
    ):  # e.g. GOMP_SPINCOUNT=10000: how OpenMP's threads wait between the ops of a token
        key, _, value = variant.partition("=")
        out.append(
            Contender(
                f"bare, {key}={value} (subprocess)",
                subprocess_call(None, best.llama_kwargs(), model_path, **{key: value}),
            )
        )
    if sweep:  # OpenMP's threads sleep instead of spinning while they wait: kinder to a shared CPU
        out.append(
            Contender(
                "bare, OMP_WAIT_POLICY=PASSIVE (subprocess)",
                subprocess_call(None, best.llama_kwargs(), model_path, OMP_WAIT_POLICY="PASSIVE"),
            )
        )
    if other_build:
        out.append(
            Contender(
                f"bare, build in {other_build} (subprocess)",
                subprocess_call(other_build, best.llama_kwargs(), model_path),
            )
        )
    return out


def main(argv: list[str] | None = None) -> None:
    """Measure and print the table (and write it as JSON with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--sizes", default="512,2600", help="prompt sizes in tokens, comma-separated"
    )
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--sweep", action="store_true", help="also each setting changed alone")
    parser.add_argument(
        "--other-build",
        help="a directory holding another llama_cpp build (pip install --target DIR)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also bare llama-cpp-python in a process with this variable set",
    )
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--model", help="GGUF file (default: the embedded SmolLM2)")
    parser.add_argument("--bare-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.model is None:
        from longctx.agents.embedded_chat import embedded_model_path

        args.model = str(embedded_model_path())
    if args.bare_json is not None:
        serve_bare_json(json.loads(args.bare_json), args.model)
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    load_before = os.getloadavg()
    entries = contenders(args.model, args.sweep, args.other_build, args.env)
    for r in range(args.rounds):
        for c in (
            entries if r % 2 == 0 else reversed(entries)
        ):  # alternate the order: no contender always runs first
            c.measure(r, sizes, args.gen_tokens)
        print(
            f"round {r + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}",
            file=sys.stderr,
            flush=True,
        )
    load_after = os.getloadavg()
    print(
        f"embedded model {os.path.basename(args.model)}, {usable_cores()} cores, {args.rounds} "
        "rounds (medians), "
        f"load average before {load_before[0]:.2f} / after {load_after[0]:.2f}"
    )
    head = "".join(f"{f'prefill@{n}':>13}" for n in sizes) + f"{'generation':>12}"
    print(f"{'tokens/s':<48}{head}")
    base = entries[1]
    rows = []
    for c in entries:
        pre = {n: statistics.median(v) for n, v in c.prefill.items()}
        gen = statistics.median(c.generation)
        rows.append({"name": c.name, "prefill": pre, "generation": gen})
        cells = "".join(f"{pre[n]:>13.0f}" for n in sizes) + f"{gen:>12.1f}"
        ratio = (
            "  "
            + " ".join(f"{pre[n] / statistics.median(base.prefill[n]):.3f}" for n in sizes)
            + f" {gen / statistics.median(base.generation):.3f}"
        )
        print(f"{c.name:<48}{cells}{ratio}")
    print("(last columns: ratio to bare llama-cpp-python at the chosen settings)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(
                {
                    "load_before": load_before[0],
                    "load_after": load_after[0],
                    "rounds": args.rounds,
                    "settings": EmbeddedSettings().as_dict(),
                    "rows": rows,
                },
                fh,
                indent=1,
            )


if __name__ == "__main__":
    main()
