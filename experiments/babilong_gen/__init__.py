"""A BABILong-style generator: bAbI task files hidden in background text, at any length, seeded.

    python -m longctx.experiments.babilong_gen --tasks-dir tasks_1-20_v1-2/en-10k \\
        --out data/babilong \\
        --tasks qa1 qa2 --lengths 4M 10M --samples 5 [--background books/] [--seed 0]

writes ``{out}/{length}/{task}.jsonl`` (the plain layout the ``babilong`` loader reads).
The placement is the official ``data/create_tasks.py`` / ``babilong/babilong_utils.py`` one
(:mod:`.babi`, :mod:`.sentences`, :mod:`.haystack`); ``docs/benchmarks.md`` lists where
ours differs.
"""

from __future__ import annotations

from longctx.experiments.babilong_gen.babi import BabiSample, read_babi, task_file
from longctx.experiments.babilong_gen.haystack import GenerateResult, generate, length_tokens
from longctx.experiments.babilong_gen.sentences import SentenceSampler, synth_background

__all__ = [
    "BabiSample",
    "GenerateResult",
    "SentenceSampler",
    "generate",
    "length_tokens",
    "read_babi",
    "synth_background",
    "task_file",
]
