"""RAPTOR's tree and HippoRAG's graph built over a 1M- or 10M-token corpus against the stub,
then questions.

    python -m benchmarks.bench_index_build --strategy raptor|hipporag --tokens 1M|10M
        [--concurrency 32 --latency 0.05] [--clustering official|scalable]
        [--knn dense|faiss|faiss-ivf] [--bic-patience 0] [--questions 4] [--minilm-sample 256]
        [--root runs/index_build] [--json out.json] [--progress 60]

The corpus is ``longctx synth``'s finance tier of that size (seed 0; generated once under
``--root``). The stub (``stub_server --content``) answers RAPTOR's summaries and HippoRAG's OpenIE
from the request's own text after ``--latency`` seconds and serves ``/v1/embeddings`` (hashed bag of
words, 384 dimensions), which the ``openai`` embedder reads, so embedding costs HTTP and not a
model. The first question builds the artifact into an empty cache; the others reuse it from memory.
Printed: index calls and tokens (the first answer's ``Usage.index_*``), the build's wall time
against the ideal ``calls / concurrency x latency``, seconds per phase (measured by wrapping the
build's functions: LLM map, embedding, clustering or OpenIE's graph and synonymy search, writing),
peak RSS (``VmHWM`` of this process; the stub's own is apart), the artifact's size on disk, seconds
per later question, and the load before and after. ``--minilm-sample N`` also embeds N of the
corpus's leaves with all-MiniLM-L6-v2 and extrapolates what the real embedder would add to this
build (said as an extrapolation). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.stub_server import stub_server
from longctx import answer, make_chat_model
from longctx.experiments.synth import SynthConfig, generate, load_samples, parse_tokens

#: Per strategy: (module, attribute, phase) of each function whose time is a phase of the build.
PHASES: dict[str, list[tuple[str, str, str]]] = {
    "raptor": [
        ("longctx.graphs.raptor.tree", "summarize_layer", "llm map (summaries)"),
        ("longctx.graphs.raptor.tree", "cluster_nodes", "clustering"),
        ("longctx.graphs.raptor.tree", "count_tokens_batch", "token counts"),
        # inside the clustering (nested phases counted in each;
        # ``--progress`` shows them as they go)
        ("longctx.graphs.raptor.clustering", "reduce", "  umap fits"),
        ("longctx.graphs.raptor.clustering", "place_by_neighbours", "  out-of-sample placement"),
        ("longctx.graphs.raptor.clustering", "best_component_count", "  bic searches"),
        ("longctx.graphs.raptor.clustering", "soft_memberships", "  mixtures (bic included)"),
        ("longctx.graphs.raptor.clustering", "cluster_again", "  re-clustering (over-long)"),
        (
            "longctx.graphs.raptor.clustering",
            "reclustered",
            "  re-clustering, per layer (workers included)",
        ),
    ],
    "hipporag": [
        ("longctx.graphs.hipporag.build", "extract_all", "llm map (OpenIE)"),
        ("longctx.graphs.hipporag.build", "build_graph", "graph build (all)"),
        ("longctx.graphs.hipporag.kg", "synonym_pairs", "synonymy kNN"),
        ("longctx.graphs.hipporag.build", "igraph_of", "igraph load"),
    ],
}
#: Phases timed at their outermost call only (a recursion is counted once).
OUTERMOST = {"  re-clustering (over-long)", "  re-clustering, per layer (workers included)"}


def load() -> str:
    """The 1/5/15-minute load averages."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def vm_hwm_mib(field: str = "VmHWM") -> float:
    """Peak resident set size of this process (``VmHWM``; ``VmRSS``: the current one), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def report_progress(url: str, phases: Phases, every: float, stop: threading.Event) -> None:
    """``--progress``: every ``every`` seconds, one line of where the build is (for a run that may
    be stopped)."""
    started = time.perf_counter()
    while not stop.wait(every):
        try:
            stats = stub_stats(url)
        except OSError:
            stats = {}
        print(
            f"[{time.perf_counter() - started:.0f} s] load {load()}; RSS "
            f"{vm_hwm_mib('VmRSS'):.0f} MiB, "
            f"peak {vm_hwm_mib():.0f} MiB; stub: {stats.get('chat_requests', '?')} chat requests, "
            f"{stats.get('embedded_texts', '?')} texts embedded; {phases.line()}",
            flush=True,
        )


def disk_mib(path: Path) -> float:
    """Bytes under ``path``, in MiB."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


class Phases:
    """Seconds spent in wrapped functions, by phase (nested phases are counted in each)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.active: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def wrap(self, fn: Callable[..., Any], phase: str) -> Callable[..., Any]:
        """``fn`` timed into ``phase`` (in :data:`OUTERMOST`: a call inside another is
        not counted)."""

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                nested = phase in OUTERMOST and self.active[phase] > 0
                self.active[phase] += 1
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with self.lock:
                    self.active[phase] -= 1
                    if not nested:
                        self.seconds[phase] += time.perf_counter() - started
                        self.calls[phase] += 1

        return timed

    def line(self) -> str:
        """Seconds (calls) per finished phase and the phases under way, on one line."""
        with self.lock:
            done = ", ".join(
                f"{k.strip()} {v:.1f} s ({self.calls[k]})" for k, v in self.seconds.items()
            )
            going = ", ".join(k.strip() for k, v in self.active.items() if v > 0)
        return f"{done} | in progress: {going or '-'}"

    @contextmanager
    def patched(self, strategy: str) -> Iterator[None]:
        """The build's functions timed while inside (the embedder's calls and the artifact's
        writing too)."""
        import importlib

        import longctx.graphs.index.index_artifact as artifact
        from longctx.retrieval.embedders import OpenAIEmbedder

        saved: list[tuple[Any, str, Any]] = []

        def patch(owner: Any, name: str, phase: str) -> None:
            saved.append((owner, name, getattr(owner, name)))
            setattr(owner, name, self.wrap(getattr(owner, name), phase))

        for module, name, phase in PHASES[strategy]:
            patch(importlib.import_module(module), name, phase)
        patch(OpenAIEmbedder, "embed_raw", "embedding")  # under embed_documents and RAPTOR's path
        original = artifact.load_or_build

        def load_or_build(folder: Any, *, what: str, load: Any, build: Any, save: Any) -> Any:
            return original(
                folder, what=what, load=load, build=build, save=self.wrap(save, "writing")
            )

        saved.append((artifact, "load_or_build", original))
        artifact.load_or_build = self.wrap(load_or_build, "build + write (all)")
        try:
            yield
        finally:
            for owner, name, value in reversed(saved):
                setattr(owner, name, value)


def corpus_dir(root: Path, tokens: str) -> Path:
    """The synthetic finance corpus of ``tokens`` under ``root``, generated the first time."""
    out = root / f"corpus-{tokens}"
    if not (out / "manifest.json").exists():
        generate(SynthConfig(domain="finance", target_tokens=parse_tokens(tokens), seed=0), out)
    return out


def options_of(args: argparse.Namespace) -> dict[str, Any]:
    """The strategy's options: the stub's embeddings, the concurrency, the chosen
    scaling options."""
    opts: dict[str, Any] = {"concurrency": args.concurrency}
    if args.embedder == "static":  # model2vec distilled from MiniLM: real embeddings, on the CPU
        opts |= {"embedder": "static"}
    else:  # the stub's hashed bag-of-words vectors: HTTP and hashing, not a model
        opts |= {"embedder": "openai", "embedder_model": "stub-embedding"}
    if args.strategy == "raptor":
        opts |= {
            "clustering": args.clustering,
            "cluster_sample": args.cluster_sample,
            "cluster_bic_patience": args.bic_patience,
            "cluster_recluster": args.recluster,
            "cluster_workers": args.cluster_workers,
        }
    else:
        opts |= {"synonymy_knn": args.knn}
        if args.passage_tokens:
            opts["passage_tokens"] = args.passage_tokens
    return opts


def stub_stats(url: str) -> dict[str, int]:
    """The stub's request counts."""
    import urllib.request

    with urllib.request.urlopen(f"{url}/stats", timeout=10) as r:
        stats: dict[str, int] = json.loads(r.read())
    return stats


def minilm_rate(texts: list[str]) -> float:
    """Texts per second all-MiniLM-L6-v2 embeds on this machine (the sample once,
    after a warm-up)."""
    from longctx.retrieval.embedders import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()
    model.embed_documents(texts[:8])
    started = time.perf_counter()
    model.embed_documents(texts)
    return len(texts) / (time.perf_counter() - started)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build once, answer the questions, and gather the figures."""
    root = Path(args.root)
    samples = load_samples(corpus_dir(root, args.tokens))[: args.questions]
    corpus = samples[0].corpus
    cache = root / f"cache-{args.strategy}-{args.tokens}-{int(time.time())}"
    phases = Phases()
    out: dict[str, Any] = {
        "strategy": args.strategy,
        "tokens": args.tokens,
        "corpus_tokens": corpus.num_tokens,
        "documents": len(corpus.documents),
        "latency": args.latency,
        "concurrency": args.concurrency,
        "options": options_of(args),
        "load_before": load(),
    }
    with stub_server(latency=args.latency, content=True) as url:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = url, "stub"
        llm = make_chat_model("openai:stub", base_url=url, max_retries=0, timeout=600)
        stop = threading.Event()
        if args.progress:
            threading.Thread(
                target=report_progress, args=(url, phases, args.progress, stop), daemon=True
            ).start()
        started = time.perf_counter()
        with phases.patched(args.strategy):
            first = answer(
                corpus,
                samples[0].question,
                strategy=args.strategy,
                llm=llm,
                cache_dir=cache,
                **options_of(args),
            )
        first_s = time.perf_counter() - started
        stop.set()
        build_stats = stub_stats(url)
        question_s = []
        for sample in samples[1:]:
            t0 = time.perf_counter()
            answer(
                corpus,
                sample.question,
                strategy=args.strategy,
                llm=llm,
                cache_dir=cache,
                **options_of(args),
            )
            question_s.append(time.perf_counter() - t0)
    u = first.usage
    build_s = phases.seconds.get("build + write (all)", first_s)
    calls = u.index_llm_calls
    index_step: dict[str, Any] = next(
        (s for s in first.steps if s.get("node") in ("build_tree", "index")), {}
    )
    out |= {
        "index_llm_calls": calls,
        "index_prompt_tokens": u.index_prompt_tokens,
        "index_completion_tokens": u.index_completion_tokens,
        "stub_chat_requests": build_stats["chat_requests"],
        "embedded_texts": build_stats["embedded_texts"],
        "embedding_requests": build_stats["embedding_requests"],
        "build_s": round(build_s, 2),
        "first_question_s": round(first_s, 2),
        "ideal_s": round(calls / args.concurrency * args.latency, 2),
        "phases_s": {k: round(v, 2) for k, v in phases.seconds.items()},
        "phase_calls": dict(phases.calls),
        "peak_rss_mib": round(vm_hwm_mib(), 1),
        "disk_mib": round(disk_mib(cache), 1),
        "question_s": [round(x, 3) for x in question_s],
        "question_s_median": round(statistics.median(question_s), 3) if question_s else None,
        "artifact": {k: v for k, v in index_step.items() if k not in ("node", "key")},
        "load_after": load(),
    }
    if args.strategy == "raptor":
        out["cluster_tokens"] = cluster_tokens(cache)
    if args.minilm_sample:
        from longctx.graphs.raptor.split import split_text

        leaves = [c for d in corpus.documents[:50] for c in split_text(d.text, 100)][
            : args.minilm_sample
        ]
        rate = minilm_rate(leaves)
        out["minilm_texts_per_s"] = round(rate, 1)
        out["minilm_extrapolated_s"] = round(build_stats["embedded_texts"] / rate, 0)
    return out


def cluster_tokens(cache: Path) -> list[dict[str, Any]]:
    """Per upper layer of the built tree: its clusters' texts in tokens (the children's, summed as
    the 3,500-token limit counts them): median, largest, and how many are over the limit."""
    from longctx.retrieval.tokens import count_tokens_batch

    nodes = json.loads(next(cache.glob("raptor/*/tree.json")).read_text())["nodes"]
    tokens = count_tokens_batch([n[2] for n in nodes])
    rows = []
    for layer in sorted({n[1] for n in nodes} - {0}):
        sizes = [sum(tokens[c] for c in n[3]) for n in nodes if n[1] == layer]
        rows.append(
            {
                "layer": layer,
                "clusters": len(sizes),
                "median": statistics.median(sizes),
                "max": max(sizes),
                "over_3500": sum(x > 3500 for x in sizes),
            }
        )
    return rows


def report(r: dict[str, Any]) -> None:
    """The figures, one per line."""
    print(
        f"{r['strategy']} over {r['corpus_tokens']:,} tokens ({r['documents']:,} documents), "
        f"options {r['options']}"
    )
    print(f"load before: {r['load_before']}   after: {r['load_after']}")
    print(
        f"index calls {r['index_llm_calls']:,} (stub saw {r['stub_chat_requests']:,}), "
        "prompt tokens "
        f"{r['index_prompt_tokens']:,}, completion tokens {r['index_completion_tokens']:,}"
    )
    print(
        f"build {r['build_s']} s against the ideal {r['ideal_s']} s (calls / {r['concurrency']} x "
        f"{r['latency']} s); first question {r['first_question_s']} s"
    )
    for phase, s in r["phases_s"].items():
        print(f"  {phase:28s} {s:10.2f} s  ({r['phase_calls'].get(phase, 0):,} calls)")
    print(f"embedded texts {r['embedded_texts']:,} in {r['embedding_requests']:,} requests")
    print(f"peak RSS {r['peak_rss_mib']:,} MiB, on disk {r['disk_mib']:,} MiB")
    print(f"question s: {r['question_s']} (median {r['question_s_median']})")
    print(f"artifact: {json.dumps(r['artifact'])[:600]}")
    for row in r.get("cluster_tokens", []):
        print(
            f"  layer {row['layer']}: {row['clusters']:,} clusters, tokens median "
            f"{row['median']:,} max {row['max']:,}, {row['over_3500']:,} over 3,500"
        )
    if "minilm_texts_per_s" in r:
        print(
            f"MiniLM here: {r['minilm_texts_per_s']} texts/s; the build's {r['embedded_texts']:,} "
            f"texts would add ~{r['minilm_extrapolated_s']:,.0f} s (extrapolated, not run)"
        )


def sweep(args: argparse.Namespace) -> None:
    """``--sweep``: where the official clustering / synonymy search stops
    (``benchmarks.index_sweeps``)."""
    from benchmarks import index_sweeps

    sizes = [int(parse_tokens(x)) for x in args.sweep.split(",")]
    print(f"load before: {load()}", flush=True)
    if args.strategy == "raptor":
        corpus = load_samples(corpus_dir(Path(args.root), args.tokens))[0].corpus
        rows = index_sweeps.raptor_sweep(corpus, sizes, args.official_max, args.cluster_sample)
    else:
        rows = index_sweeps.hipporag_sweep(sizes, args.official_max)
    print(f"load after: {load()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


def main() -> None:
    """Parse the flags, run, print (and write ``--json``)."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--strategy", choices=("raptor", "hipporag"), required=True)
    p.add_argument("--tokens", default="1M", help="corpus size (1M, 10M, ...)")
    p.add_argument("--concurrency", type=int, default=32, help="index calls in flight")
    p.add_argument("--latency", type=float, default=0.05, help="the stub's seconds per call")
    p.add_argument("--clustering", choices=("official", "scalable"), default="official")
    p.add_argument("--cluster-sample", type=int, default=2000)
    p.add_argument(
        "--bic-patience", type=int, default=0, help="RAPTOR's cluster_bic_patience (scalable)"
    )
    p.add_argument(
        "--recluster",
        choices=("fresh", "reuse"),
        default="reuse",
        help="RAPTOR's cluster_recluster (scalable)",
    )
    p.add_argument("--cluster-workers", type=int, default=1, help="RAPTOR's cluster_workers")
    p.add_argument("--knn", choices=("dense", "faiss", "faiss-ivf"), default="dense")
    p.add_argument(
        "--embedder",
        choices=("stub", "static"),
        default="stub",
        help="the stub's embeddings (default) or the static embedder (real, model2vec)",
    )
    p.add_argument(
        "--passage-tokens",
        type=int,
        default=0,
        help="HippoRAG passages of this many tokens (0: one per document)",
    )
    p.add_argument("--questions", type=int, default=4)
    p.add_argument(
        "--minilm-sample",
        type=int,
        default=0,
        help="leaves MiniLM embeds to extrapolate the real embedder",
    )
    p.add_argument("--root", default="runs/index_build")
    p.add_argument(
        "--progress", type=float, default=0, help="print where the build is every this many seconds"
    )
    p.add_argument("--json", help="write the figures here too")
    p.add_argument(
        "--sweep",
        default="",
        help="sizes (e.g. 250,500,1000): benchmarks.index_sweeps instead of a build",
    )
    p.add_argument(
        "--official-max",
        type=int,
        default=2000,
        help="--sweep: the largest size the official way runs at",
    )
    p.add_argument(
        "--blas-threads",
        type=int,
        default=1,
        help=(
            "BLAS / OpenMP threads (1: on 2 shared cores "
            "a mixture fit is ~15x faster than with spinning threads, docs/scale.md)"
        ),
    )
    args = p.parse_args()
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    if args.sweep:
        with threadpool_limits(args.blas_threads):
            sweep(args)
        return
    with threadpool_limits(args.blas_threads):  # see --blas-threads
        r = run(args)
    r["blas_threads"] = args.blas_threads
    report(r)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
