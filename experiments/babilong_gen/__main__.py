"""``python -m longctx.experiments.babilong_gen``: BABILong-style haystacks from bAbI task files
(see the package docstring)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from longctx.experiments.babilong_gen.haystack import SAMPLES, generate
from longctx.retrieval.tokenizers import TokenizerError, hf_tokenizer, tiktoken_tokenizer


def _background(folder: str | None) -> list[str] | None:
    if folder is None:
        return None
    files = sorted(p for p in Path(folder).rglob("*.txt") if p.is_file())
    if not files:
        raise SystemExit(f"--background {folder}: no .txt files.")
    return [p.read_text(encoding="utf-8", errors="replace") for p in files]


def build_parser() -> argparse.ArgumentParser:
    """The command line, each argument with its help (``--help`` documents them all)."""
    p = argparse.ArgumentParser(
        prog="python -m longctx.experiments.babilong_gen",
        description=(
            "BABILong-style haystacks: each bAbI sample's statements hidden in background text at "
            "every length, seeded; writes {out}/{length}/{task}.jsonl (input, question, target, "
            "supporting_facts, supporting_spans), the layout the babilong loader reads "
            "(docs/benchmarks.md lists where it differs from the official generator)."
        ),
    )
    p.add_argument(
        "--tasks-dir",
        required=True,
        help=(
            "folder of bAbI task files in the tasks_1-20_v1-2/en-10k layout "
            "(qa1_single-supporting-fact_train.txt ...)"
        ),
    )
    p.add_argument(
        "--out", required=True, help="output folder: {length}/{task}.jsonl are written under it"
    )
    p.add_argument(
        "--tasks",
        nargs="+",
        default=["qa1", "qa2", "qa3", "qa4", "qa5"],
        help="bAbI tasks to generate, qa1 ... qa20 (default: %(default)s)",
    )
    p.add_argument(
        "--lengths",
        nargs="+",
        default=["0k", "1k", "2k", "4k", "8k", "16k", "32k"],
        help=(
            "haystack lengths in tokens of --tokenizer, as <N>k or <N>M, e.g. 128k 1M 10M "
            "(default: %(default)s)"
        ),
    )
    p.add_argument(
        "--samples",
        type=int,
        default=SAMPLES,
        help=(
            "samples per task and length, fewer when the task file has fewer (default: %(default)s)"
        ),
    )
    p.add_argument(
        "--background",
        help="folder of .txt documents the statements are hidden in (default: our synthetic prose)",
    )
    p.add_argument(
        "--tokenizer",
        default="cl100k",
        help=(
            "what counts a length's tokens: cl100k, tiktoken:NAME or hf:PATH; the official code "
            "counts GPT-2 tokens: hf:gpt2 (default: %(default)s)"
        ),
    )
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help=(
            "seeds every draw (samples, background sentences, statement positions): the same "
            "seed writes the same files (default: %(default)s)"
        ),
    )
    p.add_argument(
        "--split",
        default="train",
        choices=["train", "test"],
        help=(
            "which bAbI file of each task the samples come from (default: %(default)s, as the "
            "official create_tasks.py)"
        ),
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, generate, print one line per file written."""
    args = build_parser().parse_args(argv)
    try:
        kind, _, arg = args.tokenizer.partition(":")
        tokenizer = hf_tokenizer(arg) if kind == "hf" else tiktoken_tokenizer(arg or "cl100k_base")
        generate(
            args.tasks_dir,
            args.out,
            tasks=args.tasks,
            lengths=args.lengths,
            samples=args.samples,
            background=_background(args.background),
            tokenizer=tokenizer,
            seed=args.seed,
            split=args.split,
            progress=lambda line: sys.stdout.write(line + "\n"),
        )
    except (OSError, ValueError, TokenizerError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
