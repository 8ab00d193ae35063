"""PAI judge-stage benchmark against a local OpenAI-compatible stub with fixed latency.

    python -m benchmarks.bench_pai [--pairs 2000] [--latency 0.2] [--concurrency 1,8,32]
        [--serial-pairs 100] [--paths sync,async]

Runs full PAI answers (tool calling: the stub returns ``--properties`` parallel property
calls and a ``keep_context`` verdict per chunk) over a synthetic corpus of 1,024-token
chunks sized so that properties x chunks = the pair count, exhaustively judged. The judge
stage is timed from the first judge call's start to the last one's end (a callback on
the chat model, keyed by LangGraph's node name). Prints, per concurrency: pairs, judge
makespan, the ideal ``pairs / concurrency x latency``, their ratio, calls/s, and prompt
tokens sent per pair. Concurrency 1 runs on ``--serial-pairs`` pairs (2,000 serial calls
would take pairs x latency). Nothing is asserted.

Each level runs on both run paths, side by side in one run: ``sync`` drives the graph with
``invoke`` (the judges in LangGraph's thread pool over the sync client, the path before the
async fan-out) and ``async`` with ``ainvoke`` (the judges as coroutines over the async
client, what ``aanswer()`` uses), and ``client`` makes the same judge calls with bare
``ainvoke`` under a semaphore (no graph, no parsing): the async client's own ceiling.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time

from langchain_core.messages import HumanMessage

from benchmarks.stub_server import stub_server
from benchmarks.synthetic_text import generate_corpus
from benchmarks.timing import NodeTimer
from longctx import STRATEGIES, make_chat_model
from longctx.graphs.calls.llm import run_client
from longctx.graphs.pai import prompts as P
from longctx.graphs.runtime.event_loop import run_sync
from longctx.graphs.runtime.run import run_strategy
from longctx.retrieval import ChunkingConfig, Corpus, chunk_corpus
from longctx.retrieval.contract import as_question


def chunk_corpus_of(n_chunks: int, size: int = 1024) -> Corpus:
    """``n_chunks`` documents of just under ``size`` tokens each, so each is exactly one chunk."""
    source = generate_corpus(int(n_chunks * (size - 40) * 1.05), doc_tokens=8 * size)
    pieces = chunk_corpus(source, ChunkingConfig(unit="tokens", size=size - 24))[:n_chunks]
    corpus = Corpus.from_texts(
        [c.text for c in pieces], titles=[f"Report {i}" for i in range(len(pieces))]
    )
    assert len(chunk_corpus(corpus, ChunkingConfig(unit="tokens", size=size))) == n_chunks
    return corpus


def run_once(
    pairs: int, properties: int, concurrency: int, cache: str, use_async: bool
) -> dict[str, float]:
    """One PAI answer judging ``pairs`` pairs at ``concurrency`` on one run path; the judge
    stage's figures."""
    timer = NodeTimer("judge")
    llm = make_chat_model("openai:stub", max_retries=0, callbacks=[timer])
    corpus = chunk_corpus_of(pairs // properties)
    spec = STRATEGIES.get("pai")
    cfg = spec.make_config(None, judge_mode="exhaustive", concurrency=concurrency)
    question = as_question("How did the revenue of the companies change?")
    started = time.perf_counter()
    (result,) = run_strategy(
        spec, cfg, [question], llm=llm, corpus=corpus, cache_dir=cache, use_async=use_async
    )
    total = time.perf_counter() - started
    judged = next(s for s in result.steps if s["node"] == "judge")
    return {
        "pairs": timer.calls,
        "expected": judged["calls"],
        "makespan": timer.last - timer.first,
        "tokens_per_pair": timer.prompt_tokens / max(timer.calls, 1),
        "total": total,
        "calls": result.usage.llm_calls,
    }


def client_floor(pairs: int, concurrency: int) -> dict[str, float]:
    """The same judge calls (prompt of one 1,024-token chunk, bound ``keep_context`` tool) made with
    bare ``ainvoke`` under a semaphore: no graph, no parsing. The async client's own ceiling."""
    chunk = chunk_corpus_of(1).documents[0].text

    async def run() -> float:
        gate = asyncio.Semaphore(concurrency)
        async with run_client(
            make_chat_model("openai:stub", max_retries=0)
        ) as llm:  # the transport a run uses
            model = llm.bind_tools([dict(P.KEEP_CONTEXT_FUNCTION)], tool_choice="Query")

            async def one(i: int) -> None:
                async with gate:
                    prompt = P.JUDGE_PROMPT.format(
                        sub_question=f"What was the revenue of Company {i % 4}?",
                        title=f"Report {i}",
                        chunk=chunk,
                    )
                    await model.ainvoke([HumanMessage(content=prompt)], max_tokens=64)

            started = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(pairs)))
            return time.perf_counter() - started

    cpu = time.process_time()
    makespan = run_sync(run())
    return {"makespan": makespan, "cpu_ms": (time.process_time() - cpu) / pairs * 1000}


def main() -> None:
    """Run the measurements and print them."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--pairs", type=int, default=2000)
    p.add_argument("--serial-pairs", type=int, default=100, help="pairs for concurrency 1")
    p.add_argument(
        "--latency",
        type=float,
        default=0.2,
        help="stub seconds per call (a remote judge call takes 0.3-0.8 s)",
    )
    p.add_argument("--properties", type=int, default=4)
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument(
        "--paths",
        default="sync,async,client",
        help="sync (invoke, threads), async (ainvoke), client (bare ainvoke, no graph)",
    )
    args = p.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    paths = [x.strip() for x in args.paths.split(",")]
    print(
        f"PAI judge stage: stub latency {args.latency * 1000:.0f} ms, {args.properties} "
        "properties, 1,024-token chunks, "
        f"exhaustive judging; concurrency 1 runs {args.serial_pairs} pairs, the others {args.pairs}"
    )
    print(
        "| concurrency | path | pairs | judge makespan | ideal (pairs / c x latency) | ratio | "
        "judge calls/s | prompt tokens per pair | whole answer |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with (
        stub_server(args.latency, reply_tokens=20, tools=True, properties=args.properties) as url,
        tempfile.TemporaryDirectory() as cache,
    ):
        os.environ["OPENAI_BASE_URL"] = url
        for c, path in ((c, path) for c in levels for path in paths):
            pairs = args.serial_pairs if c == 1 else args.pairs
            if path == "client":
                f = client_floor(pairs, c)
                ideal = pairs / c * args.latency
                print(
                    f"| {c} | client only (bare ainvoke, {f['cpu_ms']:.2f} ms CPU per call) | "
                    f"{pairs:,} | {f['makespan']:.2f} s | {ideal:.2f} s "
                    f"| {f['makespan'] / ideal:.3f}x | {pairs / f['makespan']:.0f} | | |"
                )
                continue
            r = run_once(pairs, args.properties, c, cache, use_async=path == "async")
            ideal = r["pairs"] / c * args.latency
            print(
                f"| {c} | {path} | {r['pairs']:,} (graph: {r['expected']:,}) | "
                f"{r['makespan']:.2f} s | {ideal:.2f} s | {r['makespan'] / ideal:.3f}x "
                f"| {r['pairs'] / r['makespan']:.0f} | {r['tokens_per_pair']:,.0f} | "
                f"{r['total']:.2f} s, {r['calls']:,} calls |"
            )


if __name__ == "__main__":
    main()
