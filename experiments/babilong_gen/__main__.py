"""``python -m experiments.babilong_gen``: BABILong-style haystacks from bAbI task files (see the package docstring)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.babilong_gen.haystack import SAMPLES, generate
from retrieval.tokenizers import TokenizerError, hf_tokenizer, tiktoken_tokenizer


def _background(folder: str | None) -> list[str] | None:
    if folder is None:
        return None
    files = sorted(p for p in Path(folder).rglob("*.txt") if p.is_file())
    if not files:
        raise SystemExit(f"--background {folder}: no .txt files.")
    return [p.read_text(encoding="utf-8", errors="replace") for p in files]


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, generate, print one line per file written."""
    p = argparse.ArgumentParser(prog="python -m experiments.babilong_gen", description=__doc__)
    p.add_argument(
        "--tasks-dir", required=True, help="bAbI files, the tasks_1-20_v1-2/en-10k layout"
    )
    p.add_argument("--out", required=True, help="output folder ({length}/{task}.jsonl)")
    p.add_argument("--tasks", nargs="+", default=["qa1", "qa2", "qa3", "qa4", "qa5"])
    p.add_argument("--lengths", nargs="+", default=["0k", "1k", "2k", "4k", "8k", "16k", "32k"])
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument(
        "--background", help="folder of .txt background documents (default: our synthetic prose)"
    )
    p.add_argument(
        "--tokenizer",
        default="cl100k",
        help="cl100k, tiktoken:NAME or hf:PATH (the official code counts GPT-2 tokens: hf:gpt2)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="train", choices=["train", "test"])
    args = p.parse_args(argv)
    try:
        kind, _, arg = args.tokenizer.partition(":")
        tokenizer = hf_tokenizer(arg) if kind == "hf" else tiktoken_tokenizer(arg or "cl100k_base")
        generate(args.tasks_dir, args.out, tasks=args.tasks, lengths=args.lengths, samples=args.samples, background=_background(args.background),
                 tokenizer=tokenizer, seed=args.seed, split=args.split, progress=lambda line: sys.stdout.write(line + "\n"))  # fmt: skip
    except (OSError, ValueError, TokenizerError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
