"""The OOLONG loader on hub-shaped Parquet: samples, windows, wall time and peak RSS per setting.

    python -m benchmarks.bench_oolong_load [--lengths 128K 1M 4M] [--seed 0] [--row-group 4]

The generated windows (``longctx.experiments.oolong_gen``, one per length) are written as the hub
stores OOLONG-synth: both window texts on every question's row, in
``synth/data/test-00000-of-00001.parquet`` with small row groups. Each load setting then runs
``load_benchmark("oolong", ...)`` in its own process, so its peak RSS (the child's ``VmHWM``) is its
own: the default length filter (``1,024 < context_len <= 131,072``), every length, and
every length with the labelled text.
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

#: (name, load options) of each setting measured.
SETTINGS: dict[str, dict] = {
    "default (1,024 < context_len <= 131,072)": {},
    "max_context_len=None": {"max_context_len": None},
    "max_context_len=None, labels=True": {"max_context_len": None, "labels": True},
}


def write_hub_shaped(root: Path, lengths: list[str], seed: int, row_group: int) -> dict:
    """Generate one window per length and write it as the hub's shard; the file's figures."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from longctx.experiments import oolong_gen as g

    rows = g.generate(lengths, seed=seed)
    texts: dict[int, tuple[str, str]] = {}
    for row in rows:
        if row["context_window_text"] is not None:
            texts[row["context_window_id"]] = (
                row["context_window_text"],
                row["context_window_text_with_labels"],
            )
    for row in rows:  # the hub repeats both texts on every question's row
        plain, labelled = texts[row["context_window_id"]]
        row["context_window_text"], row["context_window_text_with_labels"] = plain, labelled
        row["answer"] = str(row["answer"])
        del row["window_tokens"]
    path = root / "synth" / "data" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group)
    return {"rows": len(rows), "mb": path.stat().st_size / 2**20}


def peak_rss_mb() -> int:
    """This process's peak resident set (``VmHWM``: ``ru_maxrss`` survives ``exec`` on Linux, so
    a child would report the parent's peak after it wrote the shard)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def child(root: str, setting: str) -> None:
    """Load the shard with one setting; one JSON line out."""
    from longctx.experiments.benchmarks import load_benchmark

    start = time.perf_counter()
    samples = load_benchmark("oolong", root, datasets=["synth"], **SETTINGS[setting])
    seconds = time.perf_counter() - start
    windows = {s.metadata["context_window_id"] for s in samples}
    out = {
        "samples": len(samples),
        "windows": len(windows),
        "seconds": round(seconds, 1),
        "peak_rss_mb": peak_rss_mb(),
    }
    sys.stdout.write(json.dumps(out) + "\n")


def main() -> None:
    """Write the shard once, then load it with each setting in a child process."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", nargs="+", default=["128K", "1M", "4M"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--row-group", type=int, default=4)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory() as scratch:
        made = write_hub_shaped(Path(scratch), args.lengths, args.seed, args.row_group)
        sys.stdout.write(
            f"shard: {made['rows']} rows, row groups of {args.row_group}, "
            f"{made['mb']:.0f} MB compressed\n"
        )
        width = max(len(s) for s in SETTINGS) + 1
        for setting in SETTINGS:
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_oolong_load", "--child", scratch, setting],
                check=True,
                capture_output=True,
                text=True,
            )
            r = json.loads(done.stdout.strip().splitlines()[-1])
            windows = f"{r['windows']} window{'s' if r['windows'] != 1 else ''}"
            sys.stdout.write(
                f"{setting + ':':<{width}} {r['samples']} samples, {windows}, {r['seconds']} s, "
                f"peak RSS {r['peak_rss_mb']} MB\n"
            )


if __name__ == "__main__":
    main()
