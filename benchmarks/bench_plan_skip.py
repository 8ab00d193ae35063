"""What a budget-less ``answer`` saves by not computing its cost plan: the up-front check it made
before (the strategy's whole plan, then ``check_plan`` with no budget, which reads nothing of a
bounded plan) beside the one it makes now, on the same corpus and model tokenizer, side by side.

    python -m benchmarks.bench_plan_skip --tokens 1000000 --strategies memagent rag full_context

The model is never called (``openai:gpt-4o-mini`` at a closed port: its tokenizer is what a budget
guard counts with). Each figure is the first and the best of ``--repeats`` runs (MemAgent's plan
cuts the whole stream into chunks with the model's tokenizer every time).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from benchmarks.synthetic_text import generate_corpus
from longctx import make_chat_model
from longctx.agents.api import _check_budget
from longctx.agents.strategy_plan import strategy_plan
from longctx.graphs import STRATEGIES
from longctx.graphs.metering.plan_check import check_plan
from longctx.retrieval.contract import Question


def timed(fn: Callable[[], object], repeats: int) -> str:
    """The first and the fastest of ``repeats`` wall times of ``fn()``, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return f"{times[0]:.4f} / {min(times):.4f}"


def main() -> None:
    """Print, per strategy, the budget-less check's seconds before and now."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--strategies", nargs="+", default=["memagent", "rag", "full_context"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    corpus = generate_corpus(args.tokens)
    chat = make_chat_model("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1", max_retries=0)
    qs = [Question(text="Which site keeps the vault?")]
    print(f"corpus: {corpus.num_tokens:,} tokens in {len(corpus)} documents")
    print(f"{'strategy':<14}{'before (s): first / best':>26}{'now (s): first / best':>26}")
    for name in args.strategies:
        spec = STRATEGIES.get(name)
        cfg = spec.make_config()

        def before() -> None:
            check_plan(strategy_plan(spec, cfg, corpus, qs, chat), None)

        def now() -> None:
            _check_budget(spec, cfg, corpus, qs, chat, None, None, False)

        print(f"{name:<14}{timed(before, args.repeats):>26}{timed(now, args.repeats):>26}")


if __name__ == "__main__":
    main()
