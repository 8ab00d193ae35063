"""Peak memory of ``longctx index --retriever bm25`` on a huge single-line file (not a test; nothing
is asserted).

    python -m benchmarks.bench_huge_index    # 200 MB files of Zipf, uniform and random words
    python -m benchmarks.bench_huge_index --mb 50 --words uniform \\
        --chunk-unit tokens --chunk-size 512

Writes (once; an existing file is reused) a file of ``--mb`` MB with no newline for each kind of
``--words`` (:func:`write_single_line_file`): Zipf-distributed over a 50,000-word synthetic
vocabulary (as :mod:`benchmarks.synthetic_text`; long-tailed postings), uniform over it
(nearly every word of a chunk distinct: the most postings), or 5,000 random words. Then runs the
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

from benchmarks.synthetic_text import vocabulary

ROOT = Path(__file__).resolve().parents[2]
#: Words written per block while generating (a block's text is in memory at once).
_BLOCK_WORDS = 150_000


#: What ``--words`` draws: the text's distribution of words (see :func:`write_single_line_file`).
WORDS = ("zipf", "uniform", "random", "unique")


def write_single_line_file(
    path: Path, size_bytes: int, *, vocab_size: int = 50_000, seed: int = 0, words: str = "zipf"
) -> None:
    """Write about ``size_bytes`` of pseudo-words and no newline.

    ``words``: ``zipf`` (15-word sentences, Zipf-distributed over ``vocab_size`` pseudo-words),
    ``uniform`` (the same, uniform over them: a 200-word chunk holds ~200 distinct terms, the most
    postings), ``random`` (5,000 random 2-9 letter words drawn uniformly, each followed by ". ",
    ", " or " ", as ``tests/test_huge_line.py`` writes its file) or ``unique`` (every word a new
    random string: a vocabulary as large as the text's word count)."""
    rng = np.random.default_rng(seed)
    vocab = np.array(
        vocabulary(vocab_size, seed) if words in ("zipf", "uniform") else _letters(rng, 5000)
    )
    probs = 1.0 / np.arange(1, len(vocab) + 1) ** 1.07 if words == "zipf" else None
    written = 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        while written < size_bytes:
            if words == "unique":
                text = " ".join(_letters(rng, _BLOCK_WORDS)) + " "
            elif words == "random":
                seps = np.array([". ", ", ", " "])[rng.integers(0, 3, _BLOCK_WORDS)]
                text = "".join(np.char.add(vocab[rng.integers(0, len(vocab), _BLOCK_WORDS)], seps))
            else:
                p = None if probs is None else probs / probs.sum()
                drawn = vocab[rng.choice(len(vocab), _BLOCK_WORDS, p=p)]
                text = (
                    " ".join(
                        " ".join(drawn[i : i + 15]).capitalize() + "."
                        for i in range(0, len(drawn), 15)
                    )
                    + " "
                )
            text = text[: size_bytes - written]
            f.write(text)
            written += len(text)


def _letters(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` random lowercase strings of 2-9 letters (repeats possible, rare)."""
    lengths = rng.integers(2, 10, n)
    chars = (
        rng.integers(ord("a"), ord("z") + 1, int(lengths.sum()))
        .astype(np.uint8)
        .tobytes()
        .decode("ascii")
    )
    ends = np.cumsum(lengths)
    return [chars[e - k : e] for e, k in zip(ends.tolist(), lengths.tolist())]


def measure(path: Path, args: argparse.Namespace) -> tuple[int, float, float, str]:
    """``(peak RSS bytes, wall seconds, CPU seconds, last output line)`` of ``longctx index`` on
    ``path`` in a fresh subprocess and cache."""
    with tempfile.TemporaryDirectory(prefix="bench-huge-index-") as cache:
        cmd = [
            sys.executable,
            "-m",
            "longctx.experiments.cli",
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
    """Generate each file (once), then measure the index build's peak RSS against the
    file's size."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--mb", type=float, default=200.0, help="file size in MB (10^6 bytes)")
    p.add_argument(
        "--file",
        type=Path,
        help=(
            "one file to measure (default: /tmp/longctx-bench/one_line_<words>_<mb>MB.txt, "
            "written when absent)"
        ),
    )
    p.add_argument(
        "--chunk-unit", choices=["words", "tokens"], help="default: the RAG strategy's (words)"
    )
    p.add_argument("--chunk-size", type=int, help="default: the RAG strategy's (200)")
    p.add_argument(
        "--words",
        nargs="+",
        choices=WORDS,
        default=["zipf", "uniform", "random"],
        help=(
            "the files' words (default: zipf uniform random): Zipf or uniform over 50,000 "
            "pseudo-words, 5,000 random words, or every word new (unique)"
        ),
    )
    p.add_argument(
        "--no-baseline", action="store_true", help="skip measuring the command on a one-line file"
    )
    args = p.parse_args(argv)
    folder = Path(tempfile.gettempdir()) / "longctx-bench"
    base = None
    if not args.no_baseline:
        small = folder / "one_line_tiny.txt"
        small.parent.mkdir(parents=True, exist_ok=True)
        small.write_text("A single short line of text for the baseline.", encoding="utf-8")
        base, _, _, _ = measure(small, args)
        print(f"baseline (a one-line file): peak RSS {base / 2**20:.0f} MiB")
    for words in [None] if args.file else args.words:
        path = args.file or folder / f"one_line_{words}_{args.mb:g}MB.txt"
        if not path.exists():
            write_single_line_file(path, int(args.mb * 1e6), words=words or "zipf")
        size = path.stat().st_size
        peak, seconds, cpu, line = measure(path, args)
        above = f", {(peak - base) / size:.2f}x above the baseline" if base is not None else ""
        print(line)
        print(
            f"{words or path.name}, {size / 1e6:.1f} MB: peak RSS {peak / 2**20:.0f} MiB = "
            f"{peak / size:.2f}x the file{above}, {seconds:.1f} s ({cpu:.1f} s CPU) (bar: < 4x)",
            flush=True,
        )


if __name__ == "__main__":
    main()
