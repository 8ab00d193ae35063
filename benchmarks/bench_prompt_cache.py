"""Cost per question per strategy with a provider's prompt cache and without one, on a caching stub.

    python -m benchmarks.bench_prompt_cache [--tokens 6000] [--questions 20]
        [--strategies rag,full_context,...] [--llm embedded]

One own corpus (synthetic text) and ``--questions`` questions, every strategy run through
``longctx run``'s path (``run_experiment``, one call at a time) against the loopback stub with
``--prompt-cache 256`` (it reports, as OpenAI does, the tokens of the longest start a prompt shares
with one of the last 256 prompts), then ``build_report`` at gpt-4o-mini's built-in list prices.
Prints, per strategy, prompt and cached prompt tokens per answer, USD per answer with the cache and
without it, the cost frontier both ways, the tokens the model computed per answer (prompt tokens not
read from the cache, plus completion) and the frontier by them and by every token, then the report's
sentence naming the strategies the cache moves onto or off each frontier (nothing is asserted; the
report folder is kept with ``--out``). The stub's PAI replies name the same sub-question for every
question, so PAI's judge prompts (which start with the sub-question) repeat across questions here as
they would not over real questions; the stub caches any shared start, where OpenAI caches from 1,024
tokens in steps of 128. ``--llm embedded`` runs the embedded model instead (free: the cached tokens
are the prefix llama.cpp kept in its context, prefill it skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from benchmarks.stub_server import stub_server
from benchmarks.synthetic_text import generate_corpus, sample_queries
from longctx import make_chat_model
from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.planning.prices import DEFAULT_PRICES
from longctx.experiments.reports.html_report.prompt_cache import frontier_changes
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, run_experiment

MODEL = "gpt-4o-mini"
STRATEGIES = ("rag", "full_context", "self_route", "memagent", "pai")


def write_own_data(folder: Path, tokens: int, questions: int) -> tuple[Path, Path]:
    """A corpus folder of synthetic documents and a questions file over it."""
    docs = folder / "docs"
    docs.mkdir(parents=True)
    for i, doc in enumerate(generate_corpus(tokens, doc_tokens=max(500, tokens // 3)).documents):
        (docs / f"doc{i}.txt").write_text(doc.text, encoding="utf-8")
    qfile = folder / "questions.jsonl"
    topics = sample_queries(
        questions, zipf=True
    )  # words of the corpus, different for each question: RAG retrieves different chunks
    qfile.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"q{i:03d}",
                    "question": f"What does the corpus say about {t}?",
                    "answer": "stub",
                }
            )
            + "\n"
            for i, t in enumerate(topics)
        ),
        encoding="utf-8",
    )
    return docs, qfile


def cost_table(summary: list[dict]) -> list[dict]:
    """Per strategy (the report's summary rows): tokens and USD per answer with and without the
    cache, and the frontier each way."""
    keys = (
        "strategy",
        "score",
        "prompt_tokens",
        "cached_prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "cost_usd_uncached",
        "frontier_cost",
        "frontier_cost_uncached",
        "computed_tokens",
        "frontier_computed_tokens",
        "frontier_tokens",
    )
    return [{k: row.get(k) for k in keys} for row in summary]


def main() -> None:
    """Run the strategies on the caching stub and print the cost table."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", type=int, default=6_000, help="corpus size")
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--out", help="keep the run and its report here")
    p.add_argument(
        "--llm",
        default=f"openai:{MODEL}",
        help="openai:gpt-4o-mini on the caching stub (default), or embedded",
    )
    args = p.parse_args()
    # the built-in rows carry the cached rate
    prompt, completion, cached = DEFAULT_PRICES[MODEL]  # type: ignore[misc]
    prices = {MODEL: {"prompt": prompt, "completion": completion, "cached": cached}}
    with (
        tempfile.TemporaryDirectory() as tmp,
        stub_server(latency=0.0, reply_tokens=8, tools=True, properties=1, prompt_cache=256) as url,
    ):
        os.environ["OPENAI_BASE_URL"] = url  # the embedded model ignores it
        docs, qfile = write_own_data(Path(tmp), args.tokens, args.questions)
        samples = load_benchmark("own", qfile, corpus=docs)
        out = Path(args.out) if args.out else Path(tmp) / "run"
        cfg = RunConfig(
            benchmark="own",
            strategies=tuple(args.strategies.split(",")),
            llm_cache=False,
            concurrency=1,
        )
        llm = (
            make_chat_model(args.llm, max_retries=0)
            if args.llm.startswith("openai:")
            else make_chat_model(args.llm)
        )
        run_experiment(cfg, out, llm=llm, samples=samples, show_progress=False)
        result = build_report(out, samples=samples, plots=False, html=True, prices=prices)
    where = (
        f"{MODEL} at ${prompt}/${cached}/${completion} per 1M prompt/cached/completion tokens "
        "(list prices), caching stub"
    )
    print(
        f"{args.questions} questions over one {args.tokens:,}-token corpus, "
        f"{where if args.llm.startswith('openai:') else args.llm + ' (local: free)'}"
    )
    print(
        "| strategy | score | prompt tokens / answer | cached / answer | USD / answer with cache "
        "| without | cost frontier with | without "
        "| tokens computed / answer | token frontier with | without |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    table = cost_table(result["summary"])
    for r in table:
        print(
            f"| {r['strategy']} | {r['score']} | {r['prompt_tokens']:,} | "
            f"{r['cached_prompt_tokens']:,} | ${r['cost_usd'] or 0:.6f} | "
            f"${r['cost_usd_uncached'] or 0:.6f} | {r['frontier_cost']} | "
            f"{r['frontier_cost_uncached']} | {r['computed_tokens'] or 0:,} | "
            f"{r['frontier_computed_tokens']} | {r['frontier_tokens']} |"
        )
    print(frontier_changes(table))


if __name__ == "__main__":
    main()
