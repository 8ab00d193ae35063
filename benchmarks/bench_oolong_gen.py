"""The OOLONG-synth-style generator at 128K, 1M and 4M tokens: wall time, peak RSS, and a recount
of every gold answer from the labelled window (the check of tests/test_oolong_gen.py).

    python -m benchmarks.bench_oolong_gen [--lengths 128K 1M 4M] [--seed 0]

Each length runs in its own process, so its peak RSS is its own (``ru_maxrss`` of the child).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child(length: str, seed: int) -> None:
    """Generate one window at ``length``, write it, recount its answers; one JSON line out."""
    from longctx.experiments import oolong_gen as g
    from tests.test_oolong_gen import _gold, _lines, _recount

    start = time.perf_counter()
    rows = g.generate([length], seed=seed)
    generated = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as scratch:
        path = g.write(rows, Path(scratch))
        size = path.stat().st_size
    written = time.perf_counter() - start
    records = _lines(rows[0]["context_window_text_with_labels"])
    wrong = sum(_gold(r) != _recount(r, records) for r in rows)
    out = {
        "length": length,
        "tokens": rows[0]["window_tokens"],
        "records": len(records),
        "questions": len(rows),
        "generate_s": round(generated, 2),
        "generate_and_write_s": round(written, 2),
        "file_mb": round(size / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "gold_not_recounted": wrong,
    }
    sys.stdout.write(json.dumps(out) + "\n")


def main() -> None:
    """Run each length in a child process and print its figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", nargs="+", default=["128K", "1M", "4M"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seed)
        return
    for length in args.lengths:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.bench_oolong_gen",
                "--child",
                length,
                "--seed",
                str(args.seed),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(done.stdout.strip().splitlines()[-1])
        sys.stdout.write(
            f"{r['length']}: {r['tokens']:,} tokens, {r['records']:,} records, {r['questions']} "
            f"questions; generate {r['generate_s']} s (+ write {r['file_mb']} MB: "
            f"{r['generate_and_write_s']} s), peak RSS {r['peak_rss_mb']} MB; gold answers not "
            f"equal to a recount: {r['gold_not_recounted']}\n"
        )


if __name__ == "__main__":
    main()
