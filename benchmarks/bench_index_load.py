"""What verifying an index's checksums costs at load time (not a test; nothing is asserted).

    python -m benchmarks.bench_index_load                      # 10M tokens, BM25, 7 rounds
    python -m benchmarks.bench_index_load --tokens 1000000 --rounds 3 --retriever rank_bm25

Builds the cached BM25 index of a generated corpus (as ``bench_retrieval``: 200-word
chunks, the RAG default; ``--cache`` keeps it for a later run), then loads it from disk
``--rounds`` times with verification and without, alternating which goes first, with the
page cache warm. Printed side by side: load seconds (median and best) with and without,
the difference and its share of the load, the time of the verification alone (every file
hashed), the first query after each kind of load (an unverified memory-mapped load pages
the matrices in on the first query instead), and, for the build, the time spent hashing
the files bm25s writes itself (hashed after writing, from the page cache).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.synthetic_text import generate_corpus, sample_queries
from longctx.retrieval import ChunkingConfig, build_index
from longctx.retrieval import index as index_module
from longctx.retrieval.bm25 import BM25Retriever
from longctx.retrieval.checksums import digest_file, verify_folder
from longctx.retrieval.index.store import load_index


def load_once(
    folder: Path, key: str, chunking: ChunkingConfig, engine: str, verify: bool, query: str
) -> tuple[float, float]:
    """Seconds to load the index at ``folder`` and milliseconds of its first query."""
    index_module.clear_memory_cache()
    t = time.perf_counter()
    index = load_index(folder, key, chunking, BM25Retriever(engine=engine), verify=verify)
    load_s = time.perf_counter() - t
    if index is None:
        raise RuntimeError(f"the index at {folder} did not load")
    t = time.perf_counter()
    index.search(query, 10)
    return load_s, (time.perf_counter() - t) * 1000


def main(argv: list[str] | None = None) -> None:
    """Build (or reuse) the index, then time its loads with and without verification."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", type=int, default=10_000_000, help="corpus size in tokens")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument(
        "--retriever", choices=["bm25s", "rank_bm25"], default="bm25s", help="BM25 engine"
    )
    p.add_argument(
        "--cache", type=Path, help="cache folder to build into and keep (default: a temporary one)"
    )
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp)
        t = time.perf_counter()
        corpus = generate_corpus(args.tokens)
        chunking = ChunkingConfig(unit="words", size=200)
        print(
            f"## Index load with and without checksum verification: BM25 ({args.retriever}) over "
            f"{corpus.num_tokens:,} tokens (generated in {time.perf_counter() - t:.1f}s)"
        )
        t = time.perf_counter()
        built = build_index(
            corpus, "bm25", engine=args.retriever, chunking=chunking, cache_dir=cache
        )
        build_s = time.perf_counter() - t
        folder = built.path
        files = json.loads((folder / "meta.json").read_text())["files"]
        total = sum(f["bytes"] for f in files.values())
        library_written = [n for n in files if n.startswith("bm25s/")]
        t = time.perf_counter()
        for name in library_written:
            digest_file(folder / name)
        after_ms = (time.perf_counter() - t) * 1000
        print(
            f"{len(built):,} chunks; index files {total / 2**20:.1f} MiB: "
            + ", ".join(f"{n} {f['bytes'] / 2**20:.1f}" for n, f in files.items())
        )
        print(
            f"built and saved in {build_s:.1f}s (or loaded, if --cache held it); hashing the "
            f"{len(library_written)} "
            f"files bm25s writes itself, from the page cache: {after_ms:.1f} ms"
        )
        query = sample_queries(1, zipf=True)[0]
        times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        verify_only = []
        for r in range(args.rounds):
            for verify in (True, False) if r % 2 == 0 else (False, True):
                times[verify].append(
                    load_once(folder, built.key, chunking, args.retriever, verify, query)
                )
            t = time.perf_counter()  # exactly what a verified load adds
            verify_folder(folder, files)
            verify_only.append(time.perf_counter() - t)
        off = [s for s, _ in times[False]]
        on = [s for s, _ in times[True]]
        print(f"{args.rounds} rounds, alternating which goes first; page cache warm")
        print("| load | median s | best s | first query ms (median) |")
        print("|---|---|---|---|")
        for label, verify in (("without verification", False), ("with verification", True)):
            secs = [s for s, _ in times[verify]]
            print(
                f"| {label} | {statistics.median(secs):.3f} | {min(secs):.3f} | "
                f"{statistics.median(q for _, q in times[verify]):.1f} |"
            )
        diff = statistics.median(on) - statistics.median(off)
        alone = statistics.median(verify_only)
        print(
            f"cost of verification: {diff * 1000:+.1f} ms on the median load "
            f"({diff / statistics.median(off):+.1%}), "
            f"{(min(on) - min(off)) * 1000:+.1f} ms on the best "
            f"({(min(on) - min(off)) / min(off):+.1%}); "
            f"the verification's own work (all {len(files)} files, {total / 2**20:.1f} MiB, "
            "timed alone): "
            f"{alone * 1000:.1f} ms median, {min(verify_only) * 1000:.1f} ms best = "
            f"{alone / statistics.median(off):.1%} of the median unverified load, "
            f"{min(verify_only) / min(off):.1%} of the best"
        )


if __name__ == "__main__":
    main()
