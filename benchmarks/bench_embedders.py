"""Embedders side by side: throughput, dense index builds at 128K-10M tokens, and evidence recall.

    python -m benchmarks.bench_embedders                                 # every part, defaults
    python -m benchmarks.bench_embedders --part throughput builds --sizes 128K 1M 10M
    python -m benchmarks.bench_embedders --part recall --tiers 128K 1M
    python -m benchmarks.bench_embedders --embedders static-256 minilm

Embedders: MiniLM fp32 (torch), MiniLM int8 (ONNX Runtime), static (model2vec distilled from the
same MiniLM) at 256 and 64 dimensions, and an OpenAI-compatible endpoint (the stub server's
hashed bag-of-words vectors: what the request path costs, not a model's quality).

* throughput: texts per second over the RAG chunks of the synthetic tier (200 words), after a
  warm-up batch, in this process.
* builds: a dense index (``build_index``, fitted chunks, FAISS) of the synthetic finance tier of
  each size, in a fresh process per build (its wall time and peak RSS, ``VmHWM``). A build
  projected (chunks / measured texts per second) over ``--max-build-seconds`` is not run: its
  row says "extrapolated" with the projection.
* recall: LLM-free evidence recall@k (share of a question's evidence documents among the top-k
  chunks' documents, :func:`longctx.experiments.synth.retrieval_recall`) on the synthetic tiers,
  each embedder alone and fused with BM25 (hybrid, RRF k=60), beside BM25 alone; and BABILong's
  supporting facts (generated from the bAbI fixture in tests/fixtures/babi, ``--babilong``): the
  share of a sample's supporting-fact spans inside its top-k chunks.

Prints markdown tables with the load average; nothing is asserted (docs/scale.md records runs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from longctx.experiments.synth import (
    NeedleConfig,
    SynthConfig,
    generate,
    load_samples,
    parse_tokens,
    retrieval_recall,
)
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.index.retrieval_settings import RetrievalSettings

#: label -> (retriever, options); "openai-stub" gets the stub's URL at run time.
EMBEDDERS: dict[str, tuple[str, dict[str, Any]]] = {
    "minilm": ("dense", {"backend": "torch"}),
    "minilm-int8": ("dense", {"backend": "onnx-int8"}),
    "static-256": ("static", {"pca_dims": 256}),
    "static-64": ("static", {"pca_dims": 64}),
    "openai-stub": ("openai", {"model": "stub-embeddings", "api_key": "unused"}),
}
ROOT = Path(__file__).resolve().parents[1]


def load() -> str:
    """The 1/5/15-minute load averages."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def peak_rss_mib() -> float:
    """Peak resident set size of this process (``VmHWM``), in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@contextmanager
def stub_url(labels: list[str]) -> Iterator[str | None]:
    """The stub server's URL while it runs, if the OpenAI-compatible embedder is measured."""
    if "openai-stub" not in labels:
        yield None
        return
    from benchmarks.stub_server import stub_server

    with stub_server(latency=0.0) as url:
        yield url


def options_of(label: str, url: str | None) -> tuple[str, dict[str, Any]]:
    """The retriever and options that measure ``label``."""
    retriever, options = EMBEDDERS[label]
    return retriever, ({**options, "base_url": url} if label == "openai-stub" else dict(options))


def tier(root: Path, size: str, *, needle: bool = False) -> Path:
    """The synthetic finance tier of ``size`` under ``root``, generated the first time."""
    out = root / f"finance-{size}{'-needle' if needle else ''}"
    if not (out / "manifest.json").exists():
        config = SynthConfig(domain="finance", target_tokens=parse_tokens(size), seed=0)
        if needle:
            config = SynthConfig(
                domain="finance",
                target_tokens=parse_tokens(size),
                seed=0,
                needle=NeedleConfig(depth=0.5),
            )
        generate(config, out)
    return out


def chunk_texts(folder: Path, limit: int) -> list[str]:
    """The first ``limit`` RAG chunks (the strategies' default chunking) of a tier's corpus."""
    from longctx.retrieval.chunking import ChunkingConfig, chunk_corpus

    corpus = load_samples(folder)[0].corpus
    return [c.text for c in chunk_corpus(corpus, ChunkingConfig())[:limit]]


def throughput(label: str, url: str | None, texts: list[str]) -> float:
    """Texts per second of ``label``'s embedder over ``texts`` (a warm-up batch first)."""
    from longctx.retrieval.retrievers import make_retriever

    retriever, options = options_of(label, url)
    options.pop("fit_chunks", None)
    embedder = make_retriever(retriever, **options).embedder
    embedder.embed_documents(texts[:8])  # load (and for static: distil) outside the clock
    t = time.perf_counter()
    embedder.embed_documents(texts)
    return len(texts) / (time.perf_counter() - t)


def one_build(label: str, url: str | None, folder: Path, cache: Path) -> dict[str, Any]:
    """Build ``label``'s dense index of the tier at ``folder`` here (a fresh process)."""
    from longctx.retrieval import build_index
    from longctx.retrieval.retrievers import make_retriever

    corpus = load_samples(folder)[0].corpus
    retriever, options = options_of(label, url)
    t = time.perf_counter()
    index = build_index(corpus, make_retriever(retriever, **options), cache_dir=cache)
    return {
        "seconds": time.perf_counter() - t,
        "chunks": len(index.chunks),
        "tokens": corpus.num_tokens,
        "peak_rss_mib": peak_rss_mib(),
    }


def build_in_process(label: str, url: str | None, folder: Path, cache: Path) -> dict[str, Any]:
    """:func:`one_build` in a fresh interpreter (its own peak RSS; nothing cached in memory)."""
    cmd = [sys.executable, "-m", "benchmarks.bench_embedders", "--one-build", label, str(folder)]
    cmd += ["--cache", str(cache)] + (["--url", url] if url else [])
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the {label} build failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def builds(args: argparse.Namespace, url: str | None, root: Path, rates: dict[str, float]) -> None:
    """The build table: per embedder and size, measured or (over the limit) extrapolated."""
    print(f"\n## Dense index builds (fresh process each; load {load()})")
    print("| embedder | size | tokens | chunks | build s | peak RSS MiB | how |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        folder = tier(root, size)
        chunks = None
        for label in args.embedders:
            rate = rates.get(label)
            if chunks is not None and rate and chunks / rate > args.max_build_seconds:
                print(
                    f"| {label} | {size} | - | {chunks:,} | ~{chunks / rate:,.0f} | - | "
                    f"extrapolated: {chunks:,} chunks / {rate:,.1f} texts/s |"
                )
                continue
            r = build_in_process(label, url, folder, root / f"cache-{label}")
            chunks = chunks or r["chunks"]
            print(
                f"| {label} | {size} | {r['tokens']:,} | {r['chunks']:,} | {r['seconds']:.1f} | "
                f"{r['peak_rss_mib']:.0f} | measured |"
            )


def synth_recall(args: argparse.Namespace, url: str | None, root: Path) -> None:
    """Recall@k on the synthetic tiers: BM25, each embedder alone and fused with BM25."""
    for size in args.tiers:
        folder = tier(root, size, needle=True)
        samples = load_samples(folder)
        print(
            f"\n## Evidence recall, synthetic {size} finance tier (seed 0, "
            f"{samples[0].corpus.num_tokens:,} tokens, {len(samples)} questions; load {load()})"
        )
        print("| retriever | " + " | ".join(f"recall@{k}" for k in args.k) + " | seconds |")
        print("|---|" + "---|" * (len(args.k) + 1))
        rows: list[tuple[str, str, dict[str, Any]]] = [("bm25", "bm25", {})]
        for label in args.embedders:
            retriever, options = options_of(label, url)
            rows.append((label, retriever, options))
            rows.append(
                (
                    f"hybrid bm25 + {label}",
                    "hybrid",
                    {"dense": retriever, "dense_options": options},
                )
            )
        for name, retriever, options in rows:
            t = time.perf_counter()
            recalls = recall_at(samples, retriever, options, args.k, root / "cache-recall")
            cells = " | ".join(f"{recalls[k]:.3f}" for k in args.k)
            print(f"| {name} | {cells} | {time.perf_counter() - t:.1f} |")


def recall_at(
    samples: list, retriever: str, options: dict[str, Any], ks: list[int], cache: Path
) -> dict[int, float]:
    """Mean evidence recall per k over ``samples`` (one retrieval of the top ``max(ks)``)."""
    service = RetrievalService(
        settings=RetrievalSettings(retriever=retriever, retriever_options=options, top_k=max(ks)),
        cache_dir=cache,
    )
    index = service.build_index(samples[0].corpus)
    found: dict[int, list[float]] = {k: [] for k in ks}
    for s in samples:
        docs = [h.chunk.doc_id for h in service.retrieve(index, s.question.text)]
        for k in ks:
            found[k].append(retrieval_recall(s.evidence_doc_ids, docs[:k]))
    return {k: statistics.mean(v) for k, v in found.items()}


def babilong_recall(args: argparse.Namespace, url: str | None, root: Path) -> None:
    """BABILong's supporting facts: the share of a sample's fact spans inside its top-k chunks."""
    from longctx.experiments.benchmarks import babilong

    for length in args.babilong:
        out = root / "babilong"
        gen = [sys.executable, "-m", "longctx.experiments.babilong_gen"]
        gen += ["--tasks-dir", str(ROOT / "tests" / "fixtures" / "babi"), "--out", str(out)]
        gen += ["--tasks", "qa1", "qa2", "--lengths", length]
        subprocess.run(gen, check=True, capture_output=True, cwd=ROOT)
        samples = babilong.load(out, datasets=["qa1", "qa2"], lengths=[length])
        samples = samples[: args.babilong_samples]
        print(
            f"\n## BABILong supporting facts at {length} (qa1, qa2; {len(samples)} samples from "
            f"the bAbI fixture; load {load()})"
        )
        print("| retriever | " + " | ".join(f"facts@{k}" for k in args.k) + " | seconds |")
        print("|---|" + "---|" * (len(args.k) + 1))
        for label in ["bm25", *args.embedders]:
            retriever, options = ("bm25", {}) if label == "bm25" else options_of(label, url)
            t = time.perf_counter()
            cells = " | ".join(
                f"{v:.3f}"
                for v in fact_recall(
                    samples, retriever, options, args.k, root / "cache-bl"
                ).values()
            )
            print(f"| {label} | {cells} | {time.perf_counter() - t:.1f} |")


def fact_recall(
    samples: list, retriever: str, options: dict[str, Any], ks: list[int], cache: Path
) -> dict[int, float]:
    """Mean share of supporting facts inside the top-k chunks (a fact counts when one chunk holds
    its whole text), per k."""
    found: dict[int, list[float]] = {k: [] for k in ks}
    service = RetrievalService(
        settings=RetrievalSettings(retriever=retriever, retriever_options=options, top_k=max(ks)),
        cache_dir=cache,
    )
    for s in samples:
        text = s.corpus[0].text
        facts = [text[a:b] for _doc, a, b in s.metadata.get("evidence_spans") or ()]
        if not facts:
            continue
        index = service.build_index(s.corpus)
        hits = service.retrieve(index, s.question.text)
        for k in ks:
            held = [any(fact in h.chunk.text for h in hits[:k]) for fact in facts]
            found[k].append(sum(held) / len(held))
    return {k: statistics.mean(v) if v else float("nan") for k, v in found.items()}


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--part", nargs="+", default=["throughput", "builds", "recall"])
    p.add_argument("--embedders", nargs="+", default=list(EMBEDDERS), choices=list(EMBEDDERS))
    p.add_argument("--sizes", nargs="+", default=["128K", "1M", "10M"])
    p.add_argument("--tiers", nargs="+", default=["128K", "1M"])
    p.add_argument("--k", type=int, nargs="+", default=[7, 10, 50])
    p.add_argument("--babilong", nargs="*", default=["128k"], help="BABILong lengths (e.g. 1M)")
    p.add_argument("--babilong-samples", type=int, default=10)
    p.add_argument("--throughput-texts", type=int, default=256)
    p.add_argument("--max-build-seconds", type=float, default=900.0)
    p.add_argument("--root", help="where tiers and caches are kept (default: a temporary folder)")
    p.add_argument("--one-build", nargs=2, metavar=("LABEL", "TIER"), help=argparse.SUPPRESS)
    p.add_argument("--cache", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    return p


def main() -> None:
    """Run the asked parts and print their tables."""
    args = parser().parse_args()
    if args.one_build:
        label, folder = args.one_build
        print(json.dumps(one_build(label, args.url, Path(folder), Path(args.cache))))
        return
    with tempfile.TemporaryDirectory() as tmp, stub_url(args.embedders) as url:
        root = Path(args.root) if args.root else Path(tmp)
        rates: dict[str, float] = {}
        if "throughput" in args.part or "builds" in args.part:
            texts = chunk_texts(tier(root, "128K"), args.throughput_texts)
            print(f"## Throughput ({len(texts)} RAG chunks of the 128K tier; load {load()})")
            print("| embedder | texts/s |")
            print("|---|---|")
            for label in args.embedders:
                rates[label] = throughput(label, url, texts)
                print(f"| {label} | {rates[label]:,.1f} |")
        if "builds" in args.part:
            builds(args, url, root, rates)
        if "recall" in args.part:
            synth_recall(args, url, root)
            if args.babilong:
                babilong_recall(args, url, root)


if __name__ == "__main__":
    main()
