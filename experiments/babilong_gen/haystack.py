"""BABILong haystacks: a bAbI sample's statements dropped between background sentences, as
``NoiseInjectionDataset`` does.

For a length of ``L`` tokens (``4M``, ``10M``: any ``<N>k`` / ``<N>M``), as ``create_tasks.py``: the
message is ``L - 300`` tokens (room for the prompt); samples with more than a message // 8
statements-plus-question are dropped; the background is the message less the statements'
tokens; each statement goes before a background sentence drawn uniformly (with repeats, then
sorted, so their order is kept), or at the end; ``samples`` samples are drawn without repeats.
Three seeded generators (sample choice, background, positions) come from ``seed``, the task
and the length, so one task x length is the same whatever else is generated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from longctx.experiments.babilong_gen.babi import BabiSample, read_babi, task_file
from longctx.experiments.babilong_gen.sentences import SentenceSampler, synth_background
from longctx.experiments.benchmarks.babilong_data import length_tokens
from longctx.retrieval.tokenizers import Tokenizer, tiktoken_tokenizer

#: ``create_tasks.py``: ``message_lengths = [ml - 300 ...]`` and
#: ``max_n_facts = message_length // 8``.
PROMPT_ALLOWANCE = 300
TOKENS_PER_FACT = 8
#: ``create_tasks.py``'s ``number_of_samples``.
SAMPLES = 100


def placed(
    facts: Sequence[list[int]], background: Sequence[list[int]], rng: np.random.Generator
) -> list[list[int]]:
    """Statements and background sentences in text order: each statement before the sentence at its
    drawn position."""
    positions = (
        np.sort(rng.choice(len(background) + 1, size=len(facts)))
        if facts
        else np.array([], dtype=int)
    )
    out: list[list[int]] = []
    f = 0
    for i in range(len(background) + 1):
        while f < len(facts) and positions[f] == i:
            out.append(facts[f])
            f += 1
        if i < len(background):
            out.append(background[i])
    return out


def haystack(
    sample: BabiSample,
    message: int,
    sampler: SentenceSampler,
    tokenizer: Tokenizer,
    rng: np.random.Generator,
) -> tuple[str, list[list[int] | None]]:
    """The sample's statements hidden in ``message`` tokens of background (statements included),
    decoded and stripped, and each statement's ``[start, end]`` characters in that text (``None``
    where the tokenizer's decoding changed it)."""
    facts = tokenizer.encode_batch([" " + f for f in sample.facts])
    background = sampler.sample(message - sum(len(f) for f in facts))
    which = {id(f): k for k, f in enumerate(facts)}  # placed() keeps the statements' own lists
    pieces: list[str] = []
    starts: list[int | None] = [None] * len(facts)
    pos = 0
    for piece in placed(facts, background, rng):
        pieces.append(tokenizer.decode(piece))
        if id(piece) in which:
            k = which[id(piece)]
            at = pieces[-1].find(sample.facts[k])
            starts[k] = None if at < 0 else pos + at
        pos += len(pieces[-1])
    text = "".join(pieces)
    lead = len(text) - len(text.lstrip())
    return text.strip(), [
        None if a is None else [a - lead, a - lead + len(f)]
        for a, f in zip(starts, sample.facts, strict=True)
    ]


@dataclass
class GenerateResult:
    """What :func:`generate` wrote: files, and samples per ``task/length``."""

    files: list[Path] = field(default_factory=list)
    samples: dict[str, int] = field(default_factory=dict)


def generate(
    tasks_dir: str | Path,
    out: str | Path,
    *,
    tasks: Sequence[str],
    lengths: Sequence[str],
    samples: int = SAMPLES,
    background: Sequence[str] | None = None,
    tokenizer: Tokenizer | None = None,
    seed: int = 0,
    split: str = "train",
    progress: Callable[[str], object] | None = None,
) -> GenerateResult:
    """Write ``{out}/{length}/{task}.jsonl``
    (``input, question, target, supporting_facts, supporting_spans``) for every task and length.

    Args:
        tasks_dir: bAbI files in the ``tasks_1-20_v1-2/en-10k`` layout
            (``qa1_single-supporting-fact_train.txt``...).
        out: Output folder (the ``babilong`` loader's plain layout).
        tasks: ``qa1`` ... ``qa20``.
        lengths: Length names (``0k``, ``16k``, ``4M``, ``10M``...).
        samples: Samples per task and length (fewer when the file has fewer).
        background: Background documents (texts); ``None``: our synthetic prose.
        tokenizer: What counts tokens (default cl100k; the official code counts GPT-2 tokens).
        seed: Seeds every draw.
        split: The bAbI file split (``train``, as ``create_tasks.py``; or ``test``).
        progress: Called with a line per file written.
    """
    tokenizer = tokenizer or tiktoken_tokenizer("cl100k_base")
    if samples < 1:
        raise ValueError(f"samples={samples}: need at least 1.")
    sizes = {n: length_tokens(n) for n in lengths}
    docs: Sequence[str] | Callable[[np.random.Generator], str] = (
        background if background is not None else synth_background()
    )
    result = GenerateResult()
    for task in tasks:
        path = task_file(tasks_dir, task, split)
        for length, size in sizes.items():
            message = size - PROMPT_ALLOWANCE
            pool = read_babi(path, max_n_facts=message // TOKENS_PER_FACT if message > 0 else None)
            pick, noise, where = (
                np.random.default_rng(s)
                for s in np.random.SeedSequence([seed, int(task.removeprefix("qa")), size]).spawn(3)
            )
            sampler = SentenceSampler(docs, tokenizer, rng=noise)
            chosen = [pool[int(i)] for i in pick.permutation(len(pool))[:samples]]
            target = Path(out) / length / f"{task}.jsonl"
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("w", encoding="utf-8") as f:
                for sample in chosen:
                    text, spans = haystack(sample, message, sampler, tokenizer, where)
                    support = [spans[k] for k in sample.supporting_at]
                    record: dict[str, object] = {
                        "input": text,
                        "question": sample.question,
                        "target": sample.answer,
                        "supporting_facts": list(sample.supporting),
                    }
                    if all(
                        support
                        # where each supporting statement is: exact ceilings
                        # (experiments.ceilings.measure)
                    ):
                        record["supporting_spans"] = support
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
            result.files.append(target)
            result.samples[f"{task}/{length}"] = len(chosen)
            if progress:
                progress(f"{target}: {len(chosen)} samples of {length}")
    return result
