"""The search agent's tools at scale: per-turn latency of ``search`` and ``get_document`` over a
generated corpus (not a test; nothing is asserted).

    python -m benchmarks.bench_search_agent                    # 10M tokens, BM25
    python -m benchmarks.bench_search_agent --tokens 1M --turns 50 --retriever bm25

Generates a synthetic corpus (``longctx synth``'s generator, finance domain, seed 0), builds the
agent's index (``SearchAgentConfig``: 512-token chunks, BM25 by default), then times, over the
corpus's own questions:

* ``search`` as one tool round runs it (retrieve ``top_k`` chunks, group into ``k=5`` documents,
  cut each snippet to 512 cl100k tokens, write the JSON), p50 / p95 / max;
* ``get_document`` of a returned document (lookup and JSON of the whole document);
* whole agent runs through ``answer()`` with a scripted model (a search and a get_document a round,
  then the answer): wall seconds per round, and what LangGraph and the run path add over the
  tools themselves;
* the corpus generation and index build seconds, and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from longctx import answer
from longctx.experiments.synth import SynthConfig, generate, load_samples, parse_tokens
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.search_agent.config import SearchAgentConfig
from longctx.graphs.search_agent.tools import CorpusSearcher, SearchTools, snippet_tokenizer
from tests.scripted_tools import ToolScriptedChatModel, named_call


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ms(values: list[float]) -> str:
    """``p50 / p95 / max`` of seconds, in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return f"{1000 * statistics.median(ordered):.2f} / {1000 * p95:.2f} / {1000 * ordered[-1]:.2f}"


def time_tools(tools: SearchTools, questions: list[str]) -> tuple[list[float], list[float]]:
    """Seconds of each ``search`` of a question and of a ``get_document`` of its best document."""
    searches, opens = [], []
    for q in questions:
        t = time.perf_counter()
        found = json.loads(tools.execute("search", {"query": q}))
        searches.append(time.perf_counter() - t)
        t = time.perf_counter()
        tools.execute("get_document", {"docid": found[0]["docid"]})
        opens.append(time.perf_counter() - t)
    return searches, opens


def scripted_agent(question: str, rounds: int, docid: str) -> ToolScriptedChatModel:
    """A model that searches the question and opens ``docid`` in each of ``rounds`` rounds, then
    answers."""
    count = {"n": 0}

    def reply(prompt: str, tools: Any) -> Any:
        count["n"] += 1
        if count["n"] > rounds:
            return f"Explanation: found [{docid}].\nExact Answer: x\nConfidence: 50%"
        return [named_call("search", query=question), named_call("get_document", docid=docid)]

    return ToolScriptedChatModel(reply_fn=reply)


def main() -> None:
    """Parse arguments, build the corpus and index, print the table."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", default="10M", help="corpus size (default 10M)")
    p.add_argument("--retriever", default="bm25")
    p.add_argument("--turns", type=int, default=200, help="tool rounds timed (default 200)")
    p.add_argument("--runs", type=int, default=3, help="whole agent runs timed (default 3)")
    p.add_argument("--rounds", type=int, default=10, help="tool rounds a run (default 10)")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        cfg_synth = SynthConfig(domain="finance", target_tokens=parse_tokens(args.tokens), seed=0)
        generate(cfg_synth, root / "corpus")
        samples = load_samples(root / "corpus")
        gen_s = time.perf_counter() - t
        corpus = samples[0].corpus
        cfg = SearchAgentConfig(retriever=args.retriever, get_document=True)
        service = RetrievalService(settings=cfg, cache_dir=root / "cache")
        t = time.perf_counter()
        index = service.build_index(corpus)
        build_s = time.perf_counter() - t
        print(
            f"## search_agent tools over {corpus.num_tokens:,} tokens ({len(corpus):,} documents, "
            f"{len(index):,} chunks of 512 tokens, {args.retriever}); generated in {gen_s:.1f}s, "
            f"index built in {build_s:.1f}s"
        )
        tools = SearchTools(
            CorpusSearcher(index, corpus, service),
            k=cfg.k,
            snippet_max_tokens=cfg.snippet_max_tokens,
            tokenizer=snippet_tokenizer(cfg.snippet_tokenizer),
            include_get_document=True,
        )
        questions = [s.question.text for s in samples]
        asked = (questions * (1 + args.turns // max(1, len(questions))))[: args.turns]
        time_tools(tools, asked[:5])  # warm: the document table, the tokenizer
        searches, opens = time_tools(tools, asked)
        print("\n| tool | calls | p50 / p95 / max ms |\n|---|---|---|")
        print(
            f"| search (k={cfg.k}, {cfg.snippet_max_tokens}-token snippets) | "
            f"{len(searches)} | {ms(searches)} |"
        )
        print(f"| get_document | {len(opens)} | {ms(opens)} |")
        walls = []
        for q in questions[: args.runs]:
            best = json.loads(tools.execute("search", {"query": q}))[0]["docid"]
            llm = scripted_agent(q, args.rounds, best)
            t = time.perf_counter()
            answer(
                corpus, q, strategy="search_agent", llm=llm, cache_dir=root / "cache",
                retriever=args.retriever, get_document=True, show_progress=False,
            )  # fmt: skip
            walls.append((time.perf_counter() - t) / (args.rounds + 1))
        tool_round = statistics.median(searches) + statistics.median(opens)
        print(
            f"\nwhole runs through answer(): {1000 * statistics.median(walls):.1f} ms a round "
            f"(median of {len(walls)} runs of {args.rounds} rounds + the answer; the tools "
            f"alone {1000 * tool_round:.1f} ms); peak RSS {peak_rss_mb():,.0f} MiB"
        )


if __name__ == "__main__":
    main()
