"""Inject once, ask many: cost per context and per question, one unit per question against one
per context.

    python -m benchmarks.bench_inject_once    # 2 contexts x 25 questions, ~100K tokens each
    python -m benchmarks.bench_inject_once --tokens 400000 --questions 50 --strategies rag

Writes, in a temporary folder, a MemoryAgentBench ``Conflict_Resolution.jsonl`` of
``--contexts`` records (``factconsolidation_sh_262k``: numbered facts, then ``--questions``
questions each), runs the strategies against the stub server (``benchmarks.stub_server``,
no latency, 8-word replies, usage in cl100k) twice, ``inject_once`` off and on, and prints
the report's per-context table, the wall time and the peak RSS of each run. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

from benchmarks.stub_server import stub_server
from longctx import make_chat_model
from longctx.experiments.planning.context_costs import per_context_table
from longctx.experiments.reports.report import score_run
from longctx.experiments.runner import RunConfig, run_experiment

SOURCE = "factconsolidation_sh_262k"


def write_records(folder: Path, contexts: int, tokens: int, questions: int, salt: int = 0) -> None:
    """``contexts`` records of about ``tokens`` cl100k tokens of numbered facts (about 19 tokens a
    fact, memorized).

    ``salt`` makes other contexts (another corpus fingerprint), so an index held in memory by
    an earlier run of the process is not reused.
    """
    facts = max(tokens // 19, questions)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "Conflict_Resolution.jsonl", "w", encoding="utf-8") as f:
        for c in range(salt * contexts, (salt + 1) * contexts):
            lines = [
                f"{i}. The capital of Region-{c}-{i % 997} is Town-{c}-{i}." for i in range(facts)
            ]
            record = {
                "context": "\n".join(lines),
                "questions": [f"what is the capital of Region-{c}-{q}?" for q in range(questions)],
                "answers": [[f"Town-{c}-{q}"] for q in range(questions)],
                "metadata": {"source": SOURCE},
            }
            f.write(json.dumps(record) + "\n")


def main() -> None:
    """Run both modes and print their cost per context and per question."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--contexts", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=100_000)
    ap.add_argument("--questions", type=int, default=25)
    ap.add_argument("--strategies", default="rag,full_context,memagent")
    args = ap.parse_args()
    strategies = tuple(args.strategies.split(","))
    options = (
        {"rag": {"top_k": 10, "chunk_size": 4096, "chunk_unit": "tokens"}}
        if "rag" in strategies
        else {}
    )
    with stub_server(0.0, 8) as url, tempfile.TemporaryDirectory() as tmp:
        llm = make_chat_model("openai:stub", base_url=url, max_retries=0)
        for inject_once in (False, True):
            data = Path(tmp) / f"data-{inject_once}"
            write_records(data, args.contexts, args.tokens, args.questions, salt=int(inject_once))
            out = Path(tmp) / f"run-{inject_once}"
            os.environ["LONGCTX_CACHE_DIR"] = str(
                Path(tmp) / f"cache-{inject_once}"
            )  # each mode builds its indexes afresh
            cfg = RunConfig(
                benchmark="memoryagentbench",
                strategies=strategies,
                data_path=str(data),
                llm_cache=False,
                concurrency=1,
                inject_once=inject_once,
                strategy_options=options,
                loader_options={"all_contexts": True},
            )
            started = time.perf_counter()
            run_experiment(cfg, out, llm=llm, show_progress=False)
            wall = time.perf_counter() - started
            _, _, per_strategy = score_run(out)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(
                f"\ninject_once={inject_once}: {wall:.1f} s wall, peak RSS {rss:.0f} MB "
                "(process so far)"
            )
            print(
                "| strategy | contexts | questions | index s / context | s / question | s / "
                "question all-in | calls / question | prompt tokens / question |"
            )
            print("|---|---|---|---|---|---|---|---|")
            for r in per_context_table(per_strategy):
                print(
                    f"| {r['strategy']} | {r['contexts']} | {r['questions']} | "
                    f"{r['index_seconds_per_context']} | {r['seconds_per_question']} "
                    f"| {r['seconds_per_question_all_in']} | {r['llm_calls_per_question']} | "
                    f"{r['prompt_tokens_per_question']:,.0f} |"
                )


if __name__ == "__main__":
    main()
