"""bAbI task files (``tasks_1-20_v1-2`` layout) as one-question samples, as the official
``get_dataset_df`` cuts them.

A file is stories of numbered lines (numbering restarts at 1 for each story); a question line
is ``N question<TAB>answer<TAB>supporting line numbers``. Every question becomes one sample:
the story's statements before it (earlier questions left out), the question, its answer and
its supporting statements.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from longctx.retrieval.contract.errors import DataError


class BabiFormatError(DataError):
    """A bAbI task file line is not ``N text`` or ``N question<TAB>answer<TAB>ids``."""


@dataclass(frozen=True)
class BabiSample:
    """One question with the statements before it in its story; ``supporting_at``: the supporting
    ones' places in ``facts``."""

    facts: tuple[str, ...]
    question: str
    answer: str
    supporting: tuple[str, ...]
    supporting_at: tuple[int, ...] = ()


def _line(raw: str, path: Path, number: int) -> tuple[int, str, str | None, tuple[int, ...]]:
    head, sep, rest = raw.partition(" ")
    if not sep or not head.isdigit():
        raise BabiFormatError(f"{path}:{number}: expected 'N text', got {raw[:60]!r}")
    if "\t" not in rest:
        return int(head), rest, None, ()
    parts = rest.split("\t")
    if len(parts) < 2 or not parts[1]:
        raise BabiFormatError(
            f"{path}:{number}: a question line needs 'question<TAB>answer<TAB>ids', got "
            f"{raw[:60]!r}"
        )
    ids = parts[2].split() if len(parts) > 2 else []
    if not all(i.isdigit() for i in ids):
        raise BabiFormatError(
            f"{path}:{number}: supporting ids must be line numbers, got {parts[2]!r}"
        )
    return int(head), parts[0], parts[1], tuple(int(i) for i in ids)


def read_babi(path: str | Path, *, max_n_facts: int | None = None) -> list[BabiSample]:
    """The file's samples in order; with ``max_n_facts``, those whose statements plus question
    exceed it are dropped (official)."""
    path = Path(path)
    samples: list[BabiSample] = []
    story: list[tuple[int, str]] = []
    text = path.read_text(encoding="utf-8").strip()
    lines = text.split("\n") if text else []
    for number, raw in enumerate(lines, 1):
        n, text, answer, ids = _line(raw.rstrip("\r"), path, number)
        if n == 1:
            story = []
        if answer is None:
            story.append((n, text))
            continue
        if max_n_facts is not None and len(story) + 1 > max_n_facts:
            continue
        at = tuple(k for k, (i, _) in enumerate(story) if i in ids)
        samples.append(
            BabiSample(
                facts=tuple(t for _, t in story),
                question=text,
                answer=answer,
                supporting=tuple(story[k][1] for k in at),
                supporting_at=at,
            )
        )
    return samples


def task_file(tasks_dir: str | Path, task: str, split: str = "train") -> Path:
    """``{tasks_dir}/{task}_*_{split}.txt`` (``qa1`` finds
    ``qa1_single-supporting-fact_train.txt``), or ``FileNotFoundError``."""
    folder = Path(tasks_dir)
    found = sorted(folder.glob(f"{task}_*_{split}.txt"))
    if not found:
        raise FileNotFoundError(
            f"No bAbI file {task}_*_{split}.txt in {folder} (the tasks_1-20_v1-2/en-10k layout)."
        )
    return found[0]
