"""Peak memory of ``longctx index --retriever bm25`` on a huge single-line file (not a test; nothing is asserted).

    python -m experiments.perf.bench_huge_index                       # a 200 MB file, the RAG default chunking (200 words)
    python -m experiments.perf.bench_huge_index --mb 50 --chunk-unit tokens --chunk-size 512

Writes (once; an existing file is reused) a file of ``--mb`` MB with no newline: sentences
of 15 words drawn from a Zipf distribution over a 50,000-word synthetic vocabulary (as
:mod:`experiments.perf.synthetic_text`), so BM25 sees long-tailed postings. Then runs the
real command, ``longctx index FILE --retriever bm25``, into a fresh cache folder, in a
subprocess, and prints its peak RSS (the child's ``ru_maxrss``, from ``wait4``; this parent
stays small, whose peak a child's ``ru_maxrss`` starts from), that peak over the file's size
(issue 35's bar: under 4x), the wall time, and, for scale, the peak of the same command on a
one-line file (the interpreter and its imports) and the ratio above it. Wall time moves
with the machine's load; the CPU seconds (user + system) less so.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments.perf.synthetic_text import vocabulary

ROOT = Path(__file__).resolve().parents[2]
#: Words written per block while generating (a block's text is in memory at once).
_BLOCK_WORDS = 150_000


def write_single_line_file(
    path: Path, size_bytes: int, *, vocab_size: int = 50_000, seed: int = 0
) -> None:
    """Write about ``size_bytes`` of Zipf-distributed pseudo-words, 15-word sentences, and no newline."""
    rng = np.random.default_rng(seed)
    vocab = np.array(vocabulary(vocab_size, seed))
    probs = 1.0 / np.arange(1, vocab_size + 1) ** 1.07
    probs /= probs.sum()
    written = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        while written < size_bytes:
            words = vocab[rng.choice(vocab_size, _BLOCK_WORDS, p=probs)]
            text = (
                " ".join(
                    " ".join(words[i : i + 15]).capitalize() + "." for i in range(0, len(words), 15)
                )
                + " "
            )
            text = text[: size_bytes - written]
            f.write(text)
            written += len(text)


def measure(path: Path, args: argparse.Namespace) -> tuple[int, float, float, str]:
    """``(peak RSS bytes, wall seconds, CPU seconds, last output line)`` of ``longctx index`` on ``path`` in a fresh subprocess and cache."""
    with tempfile.TemporaryDirectory(prefix="bench-huge-index-") as cache:
        cmd = [
            sys.executable,
            "-m",
            "experiments.cli",
            "index",
            str(path),
            "--retriever",
            "bm25",
            "--cache-dir",
            cache,
        ]
        if args.chunk_unit:
            cmd += ["--chunk-unit", args.chunk_unit]
        if args.chunk_size:
            cmd += ["--chunk-size", str(args.chunk_size)]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TQDM_DISABLE": "1"}
        started = time.perf_counter()
        with subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        ) as proc:
            out = proc.stdout.read() if proc.stdout else ""
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"longctx index failed ({proc.returncode}):\n{out[-3000:]}")
    return (
        usage.ru_maxrss * 1024,
        seconds,
        usage.ru_utime + usage.ru_stime,
        out.strip().splitlines()[-1],
    )


def main(argv: list[str] | None = None) -> None:
    """Generate the file (once), then measure the index build's peak RSS against the file's size."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--mb", type=float, default=200.0, help="file size in MB (10^6 bytes)")
    p.add_argument(
        "--file",
        type=Path,
        help="the file (default: /tmp/longctx-bench/one_line_<mb>MB.txt); written when absent",
    )
    p.add_argument(
        "--chunk-unit", choices=["words", "tokens"], help="default: the RAG strategy's (words)"
    )
    p.add_argument("--chunk-size", type=int, help="default: the RAG strategy's (200)")
    p.add_argument(
        "--no-baseline", action="store_true", help="skip measuring the command on a one-line file"
    )
    args = p.parse_args(argv)
    path = (
        args.file or Path(tempfile.gettempdir()) / "longctx-bench" / f"one_line_{args.mb:g}MB.txt"
    )
    if not path.exists():
        write_single_line_file(path, int(args.mb * 1e6))
    size = path.stat().st_size
    base = None
    if not args.no_baseline:
        small = path.with_name("one_line_tiny.txt")
        small.write_text("A single short line of text for the baseline.", encoding="utf-8")
        base, _, _, _ = measure(small, args)
        print(f"baseline (a one-line file): peak RSS {base / 2**20:.0f} MiB")
    peak, seconds, cpu, line = measure(path, args)
    print(line)
    above = f", {(peak - base) / size:.2f}x above the baseline" if base is not None else ""
    print(
        f"file {size / 1e6:.1f} MB: peak RSS {peak / 2**20:.0f} MiB = {peak / size:.2f}x the file{above}, {seconds:.1f} s ({cpu:.1f} s CPU) (bar: < 4x)"
    )


if __name__ == "__main__":
    main()
