"""What a grown or edited corpus costs RAPTOR's tree and HippoRAG's graph against a fresh build
(not a test).

    python -m benchmarks.bench_index_growth    # 50K tokens, +1 doc in 100, both strategies
    python -m benchmarks.bench_index_growth --strategies raptor --tokens 200000

Generates a corpus (``synthetic_text``), builds its tree / graph through ``answer`` into a cache
(the stub server answers every call after ``--latency`` seconds; MiniLM embeds), then, side by
side: the grown corpus (``--grow`` of its documents added) built in that cache, the same grown
corpus built in an empty cache (a fresh build), and an edit (one document updated, one removed)
built in the shared cache. Each line prints the index-time calls asked, the texts embedded, the
wall time and, for the grown build, whether its tree or graph equals the fresh build's. The stub's
replies are fixed text: RAPTOR is built with one summary layer (equal summaries above it would
give UMAP equal points), and HippoRAG's OpenIE replies hold no triples (its graph has passages
only), so the figures show the calls and passage embeddings a growth saves, not graph sizes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.stub_server import stub_server
from benchmarks.synthetic_text import generate_corpus
from longctx import answer, make_chat_model
from longctx.graphs.hipporag import build as hipporag_build
from longctx.graphs.raptor import graph as raptor_graph
from longctx.retrieval import Corpus
from longctx.retrieval.contract.document import Document

STEP = {"raptor": "build_tree", "hipporag": "index"}


def embedded(strategy: str, step: dict[str, Any]) -> int:
    """Texts the build embedded (every store together)."""
    if strategy == "raptor":
        return int(step.get("embeddings_computed", 0))
    return sum(step.get("embedded", {}).values())


def artifact(strategy: str) -> Any:
    """The tree's nodes or the graph's edges the last build held, to compare two builds."""
    if strategy == "raptor":
        tree = list(raptor_graph._TREES.values())[-1]
        return [(n.layer, n.text, n.children) for n in tree.nodes], tree.embeddings.tobytes()
    kg = list(hipporag_build._LOADED.entries.values())[-1].kg
    return kg.phrases, kg.passages, kg.edges, kg.weights, kg.passage_vectors.tobytes()


def forget() -> None:
    """Drop the trees and graphs held in this process (the next build loads or builds)."""
    raptor_graph._TREES.clear()
    hipporag_build.forget_graphs()


def measure(
    strategy: str, corpus: Corpus, cache: Path, llm: Any, options: dict[str, Any]
) -> dict[str, Any]:
    """One build of ``corpus``'s tree or graph in ``cache``: calls, embedded texts, wall seconds."""
    forget()
    start = time.perf_counter()
    result = answer(
        corpus, "What is reported?", strategy=strategy, llm=llm, cache_dir=cache, **options
    )
    wall = time.perf_counter() - start
    step = next(s for s in result.steps if s["node"] == STEP[strategy])
    return {
        "calls": result.usage.index_llm_calls,
        "embedded": embedded(strategy, step),
        "wall_s": round(wall, 2),
        "tokens": result.usage.index_prompt_tokens,
        "artifact": artifact(strategy),
    }


def run(strategy: str, corpus: Corpus, grow: float, url: str) -> None:
    """Build, grow, build fresh and edit one strategy's artifact; print a line per build."""
    llm = make_chat_model("openai:stub", base_url=url, max_retries=0)
    options: dict[str, Any] = {"concurrency": 8}
    if strategy == "raptor":
        options["num_layers"] = 1
    added = max(1, round(len(corpus) * grow))
    base = Corpus(corpus.documents[:-added])
    grown = corpus
    first = base.documents[0]
    edited = grown.update(
        Document(doc_id=first.doc_id, text=first.text + " Edited.", title=first.title)
    )
    edited = edited.remove(base.documents[1].doc_id)
    with tempfile.TemporaryDirectory() as tmp:
        shared, fresh = Path(tmp) / "shared", Path(tmp) / "fresh"
        rows = {"parent": measure(strategy, base, shared, llm, options)}
        rows["grown"] = measure(strategy, grown, shared, llm, options)
        rows["fresh"] = measure(strategy, grown, fresh, llm, options)
        rows["edited"] = measure(strategy, edited, shared, llm, options)
    same = rows["grown"]["artifact"] == rows["fresh"]["artifact"]
    print(
        f"{strategy}: {len(base)} documents + {added} ({grown.num_tokens:,} tokens), load "
        f"{os.getloadavg()[0]:.2f}"
    )
    for name, row in rows.items():
        figures = (
            f"calls {row['calls']:5d}  prompt tokens {row['tokens']:9,d}  embedded "
            f"{row['embedded']:6d}"
        )
        print(f"  {name:7s} {figures}  wall {row['wall_s']:7.2f} s")
    print(f"  grown tree/graph equals the fresh build's: {same}")


def main() -> None:
    """Parse the options and run each strategy."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", type=int, default=50_000)
    p.add_argument("--doc-tokens", type=int, default=1000)
    p.add_argument("--grow", type=float, default=0.01, help="share of documents added")
    p.add_argument("--latency", type=float, default=0.05, help="the stub's seconds per call")
    p.add_argument("--strategies", nargs="+", default=["raptor", "hipporag"], choices=sorted(STEP))
    args = p.parse_args()
    corpus = generate_corpus(args.tokens, doc_tokens=args.doc_tokens)
    with stub_server(args.latency, reply_tokens=40) as url:
        for strategy in args.strategies:
            run(strategy, corpus, args.grow, url)


if __name__ == "__main__":
    main()
