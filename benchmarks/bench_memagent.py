"""MemAgent orchestration benchmark against a local OpenAI-compatible stub with fixed latency.

    python -m benchmarks.bench_memagent [--tokens 1000000] [--latency 0.05] [--questions 8]

Prints (nothing is asserted): orchestration overhead per call (wall time minus the
server's known latency, per call), prompt tokens sent / corpus tokens, peak RSS, and the
speed-up of ``answer_many`` for N questions over N sequential ``answer`` runs.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

from benchmarks.bench_retrieval import peak_rss_mb
from benchmarks.stub_server import stub_server
from benchmarks.synthetic_text import generate_corpus
from longctx import answer, answer_many, make_chat_model
from longctx.graphs.prompts import format_documents
from longctx.retrieval import count_tokens


def main() -> None:
    """Run the measurements and print them."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", type=int, default=1_000_000)
    p.add_argument("--latency", type=float, default=0.05, help="stub seconds per call")
    p.add_argument("--reply-tokens", type=int, default=200, help="memory size the stub writes")
    p.add_argument("--questions", type=int, default=8)
    p.add_argument("--concurrency", type=int, default=8)
    args = p.parse_args()

    corpus = generate_corpus(args.tokens)
    stream = count_tokens(format_documents(corpus.documents))
    n_chunks = math.ceil(stream / 5000)
    questions = [f"What is fact number {i}?" for i in range(args.questions)]
    print(
        f"corpus {corpus.num_tokens:,} tokens ({stream:,} with document headers) -> {n_chunks} "
        "chunks of 5000, "
        f"{n_chunks + 1} calls per question; stub latency {args.latency * 1000:.0f} ms, memory "
        f"reply {args.reply_tokens} words"
    )
    with (
        stub_server(args.latency, args.reply_tokens) as url,
        tempfile.TemporaryDirectory() as cache,
    ):
        os.environ["OPENAI_BASE_URL"] = url
        llm = make_chat_model("openai:stub", max_retries=0)
        common = dict(strategy="memagent", llm=llm, cache_dir=cache, show_progress=False)

        from langchain_core.messages import HumanMessage

        probe = "word " * 5200  # the size of one memory-update prompt
        llm.invoke([HumanMessage(probe)], max_tokens=1024)
        t = time.perf_counter()
        for _ in range(20):
            llm.invoke([HumanMessage(probe)], max_tokens=1024)
        bare_ms = ((time.perf_counter() - t) / 20 - args.latency) * 1000

        t = time.perf_counter()
        one = answer(corpus, questions[0], resume=True, **common)
        single_s = time.perf_counter() - t
        calls = one.usage.llm_calls
        overhead_ms = (single_s - calls * args.latency) / calls * 1000
        print("\n| measure | value |\n|---|---|")
        print(f"| calls for one question | {calls} (expected {n_chunks + 1}) |")
        print(f"| wall time, one question (checkpointed) | {single_s:.2f} s |")
        print(f"| overhead per call beyond the stub's latency | {overhead_ms:.1f} ms |")
        print(
            "| of which a bare ChatOpenAI call of the same size (HTTP, SDK, stub work) | "
            f"{bare_ms:.1f} ms |"
        )
        print(
            "| orchestration overhead per call (graph, checkpoint, trace, chunking) | "
            f"{overhead_ms - bare_ms:.1f} ms |"
        )
        print(
            "| prompt tokens sent / corpus tokens | "
            f"{one.usage.prompt_tokens / corpus.num_tokens:.3f} |"
        )

        t = time.perf_counter()
        for q in questions:
            answer(corpus, q, resume=False, **common)
        sequential_s = time.perf_counter() - t
        t = time.perf_counter()
        many = answer_many(corpus, questions, resume=False, concurrency=args.concurrency, **common)
        batched_s = time.perf_counter() - t
        assert all(a.usage.llm_calls == n_chunks + 1 for a in many)
        print(f"| {len(questions)} questions sequentially | {sequential_s:.2f} s |")
        print(
            f"| {len(questions)} questions with answer_many (concurrency {args.concurrency}) | "
            f"{batched_s:.2f} s |"
        )
        print(f"| answer_many speed-up | {sequential_s / batched_s:.2f}x |")
        print(f"| peak RSS | {peak_rss_mb():,.0f} MiB |")


if __name__ == "__main__":
    main()
