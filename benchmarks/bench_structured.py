"""Structured strategy: extraction makespan and reuse against a local stub with fixed latency.

    python -m benchmarks.bench_structured [--tokens 1M] [--latency 0.05] [--concurrency 32]
        [--repeat 5] [--compare]

Generates a synthetic CorpusQA-style corpus (``longctx.experiments.synth``, finance, seed 0),
starts the stub (``benchmarks.stub_server --tools``: every extraction call answers
``{"records": []}`` after ``latency``) and answers with ``structured`` and the finance table
as a fixed schema. The Map stage is timed from the first ``extract`` call's start to the
last one's end (a callback keyed by LangGraph's node name). Measured, each on a fresh
record cache:

* question 1 with ``answer()`` (which awaits the async ``extract`` over the run's own async
  client) and with ``run_strategy(..., use_async=False)`` (the sync twin in threads over the
  sync client), ``--repeat`` times, interleaved; the min and median makespan against the ideal
  ``documents / concurrency x latency``;
* the client alone: the same extraction requests with bare ``ainvoke`` under a semaphore
  (no graph, no parsing, no cache);
* the HTTP floor: the same request bodies posted with aiohttp alone (no LangChain, no SDK),
  what this machine allows at all with the stub on the other core;
* question 2 after question 1 (no extraction call: the records come from the cache);
* 8 questions started together (``answer_many(..., concurrency=C)``: the 8 questions at once,
  ``C`` extraction calls in flight across them): extraction calls (the single flight: one per
  document) and the makespan;
* the same extraction against a 0 ms stub: what client and stub cost per call.

Prints load averages before and after (the machine is shared). ``--compare`` also answers
the first two questions with ``structured``, ``pai`` and ``memagent`` (default configs) on
the same corpus, against a stub that counts usage exactly: calls, prompt tokens and seconds
per question side by side (the second question shows what each strategy reuses). Nothing
is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage

from benchmarks.stub_server import stub_server
from benchmarks.timing import NodeTimer
from longctx import answer, answer_many, make_chat_model
from longctx.experiments.synth import SynthConfig, generate, load_samples, parse_tokens
from longctx.experiments.synth.domains import get_domain
from longctx.graphs import STRATEGIES
from longctx.graphs.calls.llm import run_client
from longctx.graphs.runtime.run import run_strategy
from longctx.graphs.structured.mapping import extractor
from longctx.retrieval.tokens import count_tokens

UNITS = {
    "usd_m": ("number", "USD million"),
    "count": ("number", "count"),
    "percent": ("percent", "%"),
    "usd2": ("number", "USD"),
    "usd_int": ("number", "USD"),
}


def finance_schema() -> dict:
    """The synthetic finance table (what a planner should define for its questions)."""
    domain = get_domain("finance")
    attrs = [
        {"name": f.name, "type": UNITS[f.kind][0], "unit": UNITS[f.kind][1], "description": f.label}
        for f in domain.fields
    ]
    attrs += [
        {"name": c.name, "type": "text", "description": c.label, "static": True}
        for c in domain.categoricals
    ]
    return {
        "entity": "entity",
        "time": {"name": "fiscal_year", "type": "year"},
        "attributes": attrs,
    }


def load() -> str:
    """The 1/5/15-minute load averages."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def client_only(url: str, prompts: list[str], concurrency: int) -> float:
    """Seconds for the extraction requests with bare ``ainvoke`` (tools bound),
    ``concurrency`` at once."""
    from longctx.graphs.structured.functions import records_function
    from longctx.memory.records.schema import TableSchema

    function = records_function(TableSchema.model_validate(finance_schema()))

    async def run() -> float:
        async with run_client(make_chat_model("openai:stub", base_url=url, max_retries=0)) as llm:
            bound = llm.bind_tools([function], tool_choice="record_rows")
            gate = asyncio.Semaphore(concurrency)
            await bound.ainvoke([HumanMessage(content="warm up")])

            async def one(prompt: str):
                async with gate:
                    return await bound.ainvoke(
                        [HumanMessage(content=prompt)], max_tokens=2048, temperature=0.0
                    )

            started = time.perf_counter()
            await asyncio.gather(*[one(p) for p in prompts])
            return time.perf_counter() - started

    return asyncio.run(run())


def http_floor(url: str, prompts: list[str], concurrency: int) -> float:
    """Seconds for the extraction request bodies posted with aiohttp alone,
    ``concurrency`` at once."""
    import aiohttp

    from longctx.agents.lean_transport import encode_body
    from longctx.graphs.structured.functions import records_function
    from longctx.memory.records.schema import TableSchema

    function = records_function(TableSchema.model_validate(finance_schema()))

    def body(prompt: str) -> bytes:
        return encode_body(
            {
                "messages": [{"role": "user", "content": prompt}],
                "model": "stub",
                "stream": False,
                "max_completion_tokens": 2048,
                "temperature": 0.0,
                "tools": [function],
                "tool_choice": {"type": "function", "function": {"name": "record_rows"}},
            }
        )

    async def run() -> float:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000)) as session:
            gate = asyncio.Semaphore(concurrency)

            async def one(prompt: str) -> dict:
                async with (
                    gate,
                    session.post(
                        f"{url}/chat/completions",
                        data=body(prompt),
                        headers={"Content-Type": "application/json"},
                    ) as r,
                ):
                    return json.loads(await r.read())

            await one("warm up")
            started = time.perf_counter()
            await asyncio.gather(*[one(p) for p in prompts])
            return time.perf_counter() - started

    return asyncio.run(run())


def main() -> None:
    """Run the measurements and print them."""
    args = _parser().parse_args()
    print(f"load average at start: {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.corpus) if args.corpus else Path(tmp) / "corpus"
        if not args.corpus:
            started = time.perf_counter()
            generate(
                SynthConfig(domain="finance", target_tokens=parse_tokens(args.tokens), seed=0), root
            )
            print(
                f"generated {args.tokens} finance corpus in {time.perf_counter() - started:.1f} s"
            )
        samples = load_samples(root)
        corpus, questions = samples[0].corpus, [s.question for s in samples[:8]]
        n_docs, n_tokens = len(corpus), corpus.num_tokens
        ideal = n_docs / args.concurrency * args.latency
        timer = NodeTimer("extract")
        caches = iter(Path(tmp) / f"cache{i}" for i in range(10_000))
        kw = {"strategy": "structured", "schema": finance_schema(), "concurrency": args.concurrency}
        with stub_server(args.latency, reply_tokens=20, tools=True, usage=args.stub_usage) as url:
            llm = make_chat_model("openai:stub", base_url=url, max_retries=0, callbacks=[timer])
            llm.invoke("warm up")  # the tokenizer probe and the connection, once per process
            ex = extractor("bench", finance_schema(), "tools")
            prompts = [
                ex.prompt(d.title, "", d.text) for d in corpus
            ]  # what the extract node sends
            spans, first = _makespans(
                args, url, llm, timer, corpus, questions[0], prompts, caches, kw
            )
            cache, a1, calls1, tokens1, total1 = first
            if (
                args.stub_usage == "approx"
            ):  # the stub's bytes / 4 is cheap, not exact: count what was sent, here
                tokens1 = sum(count_tokens(p) for p in prompts)
            timer.reset()
            started = time.perf_counter()
            a2 = answer(corpus, questions[1], llm=llm, cache_dir=cache, **kw)
            total2, calls2 = time.perf_counter() - started, timer.calls
            timer.reset()
            started = time.perf_counter()
            many = answer_many(corpus, questions, llm=llm, cache_dir=next(caches), **kw)
            many_wall, many_calls, many_span = (
                time.perf_counter() - started,
                timer.calls,
                timer.last - timer.first,
            )
            with stub_server(0.0, reply_tokens=20, tools=True, usage=args.stub_usage) as url0:
                timer.reset()
                answer(
                    corpus,
                    questions[0],
                    llm=make_chat_model(
                        "openai:stub", base_url=url0, max_retries=0, callbacks=[timer]
                    ),
                    cache_dir=next(caches),
                    **kw,
                )
                overhead = timer.last - timer.first

            print(
                f"\nstructured, {n_docs} documents, {n_tokens:,} tokens, stub latency "
                f"{args.latency * 1000:.0f} ms, concurrency {args.concurrency}, "
                f"{args.repeat} runs per path; stub usage counted as "
                f"{'UTF-8 bytes / 4' if args.stub_usage == 'approx' else 'cl100k tokens'}; "
                f"load average at the end: {load()}"
            )
            _print_spans(spans, ideal)
            runs = (
                ("question 1", a1, calls1, tokens1, total1),
                ("question 2, same schema", a2, calls2, 0, total2),
            )
            _print_runs(runs, n_tokens)
            ex = [next(s for s in a.steps if s["node"] == "reduce")["extraction"] for a in many]
            print(
                f"| {len(many)} questions together (answer_many, concurrency {args.concurrency}) "
                f"| {sum(e['extracted'] for e in ex)} / {sum(e['shared'] for e in ex)} / "
                f"{sum(e['cached'] for e in ex)} | {many_calls} (makespan {many_span:.3f} s) | | "
                f"{many_wall:.2f} s, {sum(a.usage.llm_calls for a in many)} calls |"
            )
            print(
                f"\noverhead: the same {n_docs} extraction calls against a 0 ms stub take "
                f"{overhead:.3f} s "
                f"({overhead / n_docs * 1000:.2f} ms per call: client, stub and tokenizer CPU on "
                f"{os.cpu_count()} cores); "
                f"ideal + overhead = {ideal + overhead:.3f} s"
            )
            if args.compare:
                compare(corpus, questions[:2], args, kw, next(caches))


def _parser() -> argparse.ArgumentParser:
    """The benchmark's arguments."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", default="1M")
    p.add_argument("--latency", type=float, default=0.05)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="runs of question 1 per path (min and median reported)",
    )
    p.add_argument("--corpus", help="a corpus generated by `longctx synth` (default: generate one)")
    p.add_argument(
        "--stub-usage",
        choices=("approx", "cl100k"),
        default="approx",
        help="how the stub counts usage tokens: UTF-8 bytes / 4 (default; exact cl100k counting "
        "costs the stub ~1 ms of CPU per 4K-token request, beyond what 32 x 50 ms leaves it on "
        "2 cores) or exact cl100k",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="also answer two questions with structured, pai and memagent (calls, tokens, seconds)",
    )
    return p


def _makespans(
    args: argparse.Namespace,
    url: str,
    llm: Any,
    timer: Any,
    corpus: Any,
    question: Any,
    prompts: list[str],
    caches: Iterator[Path],
    kw: dict[str, Any],
) -> tuple[dict[str, list[float]], tuple[Any, ...]]:
    """Question 1's extraction makespan by each path, ``args.repeat`` times, and the first run's
    ``(cache, answer, calls, prompt tokens, seconds)``."""
    spans: dict[str, list[float]] = {
        "answer() (async)": [],
        "threads (use_async=False)": [],
        "client only": [],
        "HTTP floor (aiohttp alone)": [],
    }
    spec = STRATEGIES.get("structured")
    cfg = spec.make_config(schema=finance_schema(), concurrency=args.concurrency)
    first = None
    for _ in range(args.repeat):
        for path in spans:
            timer.reset()
            if path == "client only":
                spans[path].append(client_only(url, prompts, args.concurrency))
                continue
            if path.startswith("HTTP floor"):
                spans[path].append(http_floor(url, prompts, args.concurrency))
                continue
            cache = next(caches)
            started = time.perf_counter()
            if path.startswith("answer()"):
                a = answer(corpus, question, llm=llm, cache_dir=cache, **kw)
            else:
                (a,) = run_strategy(
                    spec, cfg, [question], llm=llm, corpus=corpus, cache_dir=cache, use_async=False
                )
            spans[path].append(timer.last - timer.first)
            if first is None:
                first = (cache, a, timer.calls, timer.prompt_tokens, time.perf_counter() - started)
    assert first is not None
    return spans, first


def _print_spans(spans: dict[str, list[float]], ideal: float) -> None:
    """The table of makespans against the ideal."""
    print(
        "| question 1 extraction | makespan min | median | ideal (docs / c x latency) "
        "| ratio min / median |"
    )
    print("|---|---|---|---|---|")
    for path, values in spans.items():
        lo, mid = min(values), statistics.median(values)
        print(
            f"| {path} | {lo:.3f} s | {mid:.3f} s | {ideal:.3f} s "
            f"| {lo / ideal:.2f}x / {mid / ideal:.2f}x |"
        )


def _print_runs(runs: tuple[tuple[Any, ...], ...], n_tokens: int) -> None:
    """The table of what questions 1 and 2 extracted and sent."""
    print(
        "\n| run | documents extracted / shared / cached | extraction calls "
        "| extraction prompt tokens (per corpus token) | whole answer |"
    )
    print("|---|---|---|---|---|")
    for name, a, calls, toks, total in runs:
        e = next(s for s in a.steps if s["node"] == "reduce")["extraction"]
        per = f"{toks:,} ({toks / n_tokens:.2f})" if calls else "0"
        print(
            f"| {name} | {e['extracted']} / {e['shared']} / {e['cached']} | {calls} | {per} "
            f"| {total:.2f} s, {a.usage.llm_calls} calls |"
        )


def compare(
    corpus: Any,
    questions: list[Any],
    args: argparse.Namespace,
    kw: dict[str, Any],
    cache_root: Path,
) -> None:
    """Two questions with ``structured``, ``pai`` and ``memagent`` (default configs) on the same
    corpus, against a stub that counts usage exactly (cl100k): calls, prompt tokens and seconds
    per question."""
    print(
        "\nsame corpus, two questions per strategy, default configs, stub "
        f"{args.latency * 1000:.0f} ms counting usage with cl100k:"
    )
    print(
        "| strategy | question 1: calls / prompt tokens (per corpus token) / seconds | question "
        "2: calls / prompt tokens / seconds |"
    )
    print("|---|---|---|")
    runs = (
        ("structured", kw),
        ("pai", {"strategy": "pai", "concurrency": args.concurrency}),
        ("memagent", {"strategy": "memagent"}),
    )
    with stub_server(args.latency, reply_tokens=20, tools=True, usage="cl100k") as url:
        llm = make_chat_model("openai:stub", base_url=url, max_retries=0)
        llm.invoke("warm up")
        for name, options in runs:
            cells = []
            for q in (
                questions
            ):  # the same cache folder: what the first question stored, the second may reuse
                started = time.perf_counter()
                a = answer(corpus, q, llm=llm, cache_dir=cache_root / name, **options)
                u = a.usage
                cells.append(
                    f"{u.llm_calls} / {u.prompt_tokens:,} "
                    f"({u.prompt_tokens / corpus.num_tokens:.2f}) / "
                    f"{time.perf_counter() - started:.1f} s"
                )
            print(f"| {name} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()
