"""BrowseComp-Plus per-question corpora at N = 1,000 documents: tokens, build time, peak RSS, and
one strategy (RAG) end to end on them against the stub server.

    python -m benchmarks.bench_browsecomp_corpus                 # 4 questions, 3,000-page corpus
    python -m benchmarks.bench_browsecomp_corpus --queries 8 --corpus-docs 10000 --n 1000

The real release is encrypted and is not on this machine, so this runs on a synthetic stand-in
in the release's layout (``browsecomp_plus_decrypted.jsonl``, ``qrel_*.txt``,
``corpus.parquet``), written to a temporary folder: pages whose lengths are drawn from a
log-normal with the corpus's mean, 32,296 characters (the paper's section 3.4: 5,179 words,
32,296 characters a page; sigma 1.0 is ours, the paper gives no spread), made of English-like
sentences; each question has the paper's mean judgements, 6 evidence pages of which 3 gold, and
76 listed negatives. Then, each in a fresh process (so its peak RSS is its own):

1. ``load_benchmark("browsecomp_plus", docs_per_query=N)`` cold (choose the documents, cache the
   choice, read the pages' text from the Parquet corpus) and warm (the cached choice);
2. counting each question corpus's cl100k tokens;
3. ``longctx run --benchmark browsecomp_plus --strategies rag`` over the questions against
   ``benchmarks.stub_server``, then the report's figures.

Prints one table (nothing is asserted).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.stub_server import stub_server

#: The corpus's mean page length in characters (BrowseComp-Plus paper, section 3.4).
MEAN_CHARS = 32_296
SIGMA = 1.0
WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at which "
    "but have an they you were her she there been one all we their has would when if so no will "
    "more other its out time what about up into them can only some could new two these may first "
    "then do any like my now over such our man me even most made after also did many before must "
    "through back years where much your way well down should because each just those people how "
    "harbour council archive ledger bridge festival museum chapter orchard lantern quarry signal "
    "river meadow canal tower season league album county station village island painter author"
).split()


def write_standin(root: Path, queries: int, corpus_docs: int, seed: int) -> int:
    """The stand-in release, qrels and corpus under ``root``; the corpus's characters."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    sentences = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24))).capitalize() + "."
        for _ in range(20_000)
    ]
    mu = math.log(MEAN_CHARS) - SIGMA**2 / 2
    rows, chars = [], 0
    for i in range(corpus_docs):
        target = min(int(rng.lognormvariate(mu, SIGMA)), 2_000_000)
        parts, size = [f"---\ntitle: Page {i}\n---"], 0
        while size < target:
            batch = rng.choices(sentences, k=64)
            parts += batch
            size += sum(len(s) + 1 for s in batch)
        text = " ".join(parts)[: max(target, 200)]
        chars += len(text)
        rows.append({"docid": str(i), "text": text, "url": f"https://example.org/{i}"})
    pq.write_table(pa.Table.from_pylist(rows), root / "corpus.parquet")
    with (
        (root / "browsecomp_plus_decrypted.jsonl").open("w") as release,
        (root / "qrel_evidence.txt").open("w") as ev,
        (root / "qrel_golds.txt").open("w") as gold,
    ):
        for q in range(queries):
            picked = rng.sample(range(corpus_docs), 6 + 76)
            docs = [{"docid": str(d), "text": "", "url": ""} for d in picked]
            record = {
                "query_id": str(700 + q),
                "query": f"Which page of council {q} names the lantern festival's founder?",
                "answer": f"Founder {q}",
                "evidence_docs": docs[:6],
                "gold_docs": docs[:3],
                "negative_docs": docs[6:],
            }
            release.write(json.dumps(record) + "\n")
            ev.writelines(f"{record['query_id']} Q0 {d['docid']} 1\n" for d in docs[:6])
            gold.writelines(f"{record['query_id']} Q0 {d['docid']} 1\n" for d in docs[:3])
    return chars


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phase_load(root: Path, cache: Path, n: int) -> dict[str, Any]:
    """Phase 1 and 2 in this process: cold and warm loads, then the tokens of each corpus."""
    from longctx.experiments.benchmarks import load_benchmark

    t = time.perf_counter()
    samples = load_benchmark("browsecomp_plus", root, docs_per_query=n, cache_dir=cache)
    cold = time.perf_counter() - t
    peak_cold = _peak_mib()
    del samples
    t = time.perf_counter()
    samples = load_benchmark("browsecomp_plus", root, docs_per_query=n, cache_dir=cache)
    warm = time.perf_counter() - t
    t = time.perf_counter()
    tokens = [s.corpus.num_tokens for s in samples]
    count_s = time.perf_counter() - t
    return {
        "questions": len(samples),
        "cold_s": round(cold, 2),
        "warm_s": round(warm, 2),
        "peak_rss_after_cold_mib": round(peak_cold),
        "peak_rss_mib": round(_peak_mib()),
        "tokens_min": min(tokens),
        "tokens_mean": round(sum(tokens) / len(tokens)),
        "tokens_max": max(tokens),
        "count_tokens_s": round(count_s, 2),
        "chars_mean": round(
            sum(sum(len(d.text) for d in s.corpus) for s in samples) / len(samples)
        ),
    }


def phase_rag(root: Path, cache: Path, n: int, out: Path) -> dict[str, Any]:
    """Phase 3 in this process: ``longctx run ... --strategies rag`` against the stub, then the
    report."""
    import os

    from longctx.experiments.cli.app import main as cli

    with stub_server(0.0, 8) as url:  # replies are 8 filler words: judged wrong (fallback)
        os.environ["OPENAI_BASE_URL"] = url
        os.environ.setdefault("OPENAI_API_KEY", "stub")
        os.environ["LONGCTX_CACHE_DIR"] = str(cache)
        argv = ["run", "--benchmark", "browsecomp_plus", "--data", str(root), "--strategies", "rag"]
        argv += ["--llm", "openai:stub", "--loader-option", f"docs_per_query={n}", "--yes"]
        argv += ["--out", str(out), "--concurrency", "1"]
        t = time.perf_counter()
        if cli(argv) != 0:
            raise SystemExit("the run failed")
        run_s = time.perf_counter() - t
    if cli(["report", str(out), "--no-plots", "--no-html"]) != 0:
        raise SystemExit("the report failed")
    scores = json.loads((out / "report" / "scores.json").read_text())["rag"]
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    return {
        "run_s": round(run_s, 2),
        "answers_ok": sum(1 for r in rows if r.get("status") == "ok"),
        "accuracy": scores["Accuracy (%)"],
        "evidence_recall": scores["Recall (%)"],
        "search_calls": scores["search_calls"],
        "peak_rss_mib": round(_peak_mib()),
    }


def _child(phase: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_browsecomp_corpus", "--phase", phase, *args],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Write the stand-in, run the phases in child processes, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=4)
    parser.add_argument("--corpus-docs", type=int, default=3000)
    parser.add_argument("--n", type=int, default=1000, help="documents per question")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--phase", choices=("load", "rag"), help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        root = Path(args.root)
        if args.phase == "load":
            result = phase_load(root, root / "cache", args.n)
        else:
            result = phase_rag(root, root / "cache", args.n, root / "run")
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        chars = write_standin(root, args.queries, args.corpus_docs, args.seed)
        written = time.perf_counter() - t
        size = (root / "corpus.parquet").stat().st_size
        common = ["--root", str(root), "--n", str(args.n)]
        load = _child("load", *common)
        rag = _child("rag", *common)
    print(
        f"stand-in: {args.corpus_docs:,} pages, {chars / args.corpus_docs:,.0f} characters a page "
        f"(target mean {MEAN_CHARS:,}), corpus.parquet {size / 2**20:,.0f} MiB, written in "
        f"{written:.1f}s; {args.queries} questions x N = {args.n:,}"
    )
    print("| what | value |\n|---|---|")
    for key, value in load.items():
        print(
            f"| load: {key} | {value:,} |"
            if isinstance(value, int)
            else f"| load: {key} | {value} |"
        )
    for key, value in rag.items():
        print(f"| rag run: {key} | {value} |")


if __name__ == "__main__":
    main()
