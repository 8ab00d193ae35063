"""An OOLONG-synth-style generator: labelled records with users and dates, packed into context
windows of any length, with questions whose gold answers are computed from the records. Seeded.

    python -m longctx.experiments.oolong_gen --out data/oolong --lengths 128K 1M 4M \\
        [--records my_labelled.jsonl] [--windows 1] [--seed 0]

writes ``{out}/synth/test.jsonl`` in the hub dataset's schema (``id``, ``context_len``,
``dataset``, ``context_window_text``, ``context_window_text_with_labels``, ``question``,
``task_group``, ``task``, ``answer``, ``answer_type``, ``input_subset``, ``num_labels``,
``context_window_id``), read by the ``oolong`` loader and scored by the official rules; a window's
text is written on its first question only (the loader shares it with the rest).

Records come from the user's labelled data (``--records``: JSON Lines of ``{"text", "label"}``) or
from ours (:func:`builtin_records`: question-like sentences in six TREC-coarse-style classes, from
templates). Each record gets a user (a skewed pool, so per-user questions have a clear answer) and a
date (uniform over 2022-2024), one line per record: ``Date: Jan 05, 2023 || User: 44106 ||
Instance: ...`` (``|| Label: ...`` in the labelled text). Where this differs from the official
construction (its code is unreleased): docs/benchmarks-data.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from longctx.retrieval.tokens import count_tokens, count_tokens_batch

#: Our classes and the templates their records are drawn from.
_CLASSES: dict[str, tuple[str, ...]] = {
    "abbreviation": ("What does {A} stand for?", "What is the full form of {A}?"),
    "entity": ("What {n} is used to make {t}?", "Which {n} did {p} invent?"),
    "description and abstract concept": ("Why do {t} {v}?", "What is the meaning of {t}?"),
    "human being": ("Who invented the {t}?", "Who was the first {n} to {v}?"),
    "location": ("Where is the {n} of {p} located?", "In which city did {p} {v}?"),
    "numeric value": ("How many {t} are in a {n}?", "When did {p} {v}?"),
}
_WORDS = {
    "A": ("NASA", "UNICEF", "CPU", "DNA", "RSVP", "HTML", "GDP", "OPEC"),
    "n": ("river", "metal", "country", "instrument", "planet", "painter", "animal", "machine"),
    "t": ("bridges", "volcanoes", "violins", "glaciers", "lanterns", "bicycles", "comets"),
    "p": ("Marie Curie", "Ada Lovelace", "Galileo", "Tesla", "Hokusai", "Cervantes", "Darwin"),
    "v": ("sail east", "vanish at night", "change colour", "win the prize", "climb the peak"),
}
_START, _DAYS = date(2022, 1, 1), 3 * 365
_USERS = 60
_LINE = "Date: {d} || User: {u} || Instance: {t}"
_LENGTH = re.compile(r"(\d+)([KM])")
#: The answer-format instruction each question ends with, per answer type.
FORMATS = {
    "LABEL": "Give your final answer in the form 'Label: answer', where answer is one label.",
    "NUMERIC": "Give your final answer in the form 'Answer: number'.",
    "COMPARISON": (
        "Give your final answer in the form 'Answer: X', where X is one of 'more common than', "
        "'less common than' or 'same frequency as'."
    ),
    "USER": "Give your final answer in the form 'User: user id'.",
    "MONTH_YEAR": "Give your final answer in the form 'Answer: Month YYYY' (e.g. March 2023).",
    "DATE": "Give your final answer in the form 'Date: Mon DD, YYYY'.",
}


@dataclass(frozen=True)
class Record:
    """One line of a window: its text, label, user and date."""

    text: str
    label: str
    user: int
    day: date


def length_tokens(name: str) -> int:
    """Tokens of a length name, powers of two as OOLONG's ``context_len``: ``8K`` -> 8,192,
    ``4M`` -> 4,194,304."""
    match = _LENGTH.fullmatch(name)
    if match is None:
        raise ValueError(f"Length {name!r}: use <N>K or <N>M, e.g. 8K, 128K, 4M.")
    return int(match.group(1)) << (10 if match.group(2) == "K" else 20)


def builtin_records(count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` (text, label) pairs of our six classes from templates (seeded)."""
    rng = random.Random(seed)
    labels = list(_CLASSES)
    out = []
    for _ in range(count):
        label = labels[min(int(rng.paretovariate(1.2)) - 1, len(labels) - 1)]
        template = rng.choice(_CLASSES[label])
        out.append((re.sub(r"\{(\w)\}", lambda m: rng.choice(_WORDS[m.group(1)]), template), label))
    return out


def read_records(path: Path) -> list[tuple[str, str]]:
    """(text, label) pairs of a JSON Lines file of ``{"text": ..., "label": ...}`` objects."""
    out = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                item = json.loads(line)
                if not isinstance(item.get("text"), str) or item.get("label") in (None, ""):
                    raise ValueError(f"{path}, line {number}: needs a 'text' and a 'label'.")
                out.append((" ".join(item["text"].split()), str(item["label"])))
    if not out:
        raise ValueError(f"{path}: no records.")
    return out


def _pack(
    pool: Sequence[tuple[str, str]], tokens: int, rng: random.Random, header: str
) -> tuple[list[Record], list[str], int]:
    """Records drawn from ``pool`` until the window holds ``tokens`` tokens (cl100k): the
    records, their lines, the window's exact token count (at most ``tokens``)."""
    users = [rng.randint(10_000, 99_999) for _ in range(_USERS)]
    weights = [1 / (i + 1) for i in range(_USERS)]
    records: list[Record] = []
    lines: list[str] = []
    used = count_tokens_batch([header])[0]
    full = False
    while not full:
        batch = []
        for _ in range(max(8, (tokens - used) // 40)):
            text, label = pool[rng.randrange(len(pool))]
            day = _START + timedelta(days=rng.randrange(_DAYS))
            batch.append(Record(text, label, rng.choices(users, weights)[0], day))
        texts = [_LINE.format(d=f"{r.day:%b %d, %Y}", u=r.user, t=r.text) for r in batch]
        for record, line, n in zip(
            batch, texts, count_tokens_batch([t + "\n" for t in texts]), strict=True
        ):
            if used + n > tokens:
                full = True
                break
            records.append(record)
            lines.append(line)
            used += n
    exact = count_tokens(header + "\n".join(lines))
    while exact > tokens:  # a line's tokens can join across a newline: trim to the length
        records.pop()
        exact = count_tokens(header + "\n".join(lines[:-1]))
        lines.pop()
    return records, lines, exact


def _unique_top(counts: Counter, *, least: bool = False) -> Any:
    ranked = sorted(counts.items(), key=lambda kv: (kv[1] if least else -kv[1], str(kv[0])))
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def questions(records: Sequence[Record], labels: Sequence[str], rng: random.Random) -> list[dict]:
    """The questions of one window with gold answers computed from its records (a question whose
    answer would be a tie is left out): counting, user and timeline groups."""
    by_label = Counter(r.label for r in records)
    x, y = rng.sample(list(labels), 2) if len(labels) > 1 else (labels[0], labels[0])
    out: list[dict] = []

    def ask(group: str, task: str, kind: str, text: str, answer: Any) -> None:
        if answer is None:
            return
        gold = (
            f"[datetime.date({answer.year}, {answer.month}, {answer.day})]"
            if isinstance(answer, date)
            else repr([answer])
        )
        out.append(
            {
                "task_group": group,
                "task": f"TASK_TYPE.{task}",
                "answer_type": f"ANSWER_TYPE.{kind}",
                "question": f"{text} {FORMATS[kind]}",
                "answer": gold,
            }
        )

    most, least = _unique_top(by_label), _unique_top(by_label, least=True)
    ask("counting", "MOST_FREQ", "LABEL", "Which label is the most common in the data?", most)
    ask("counting", "LEAST_FREQ", "LABEL", "Which label is the least common in the data?", least)
    ask(
        "counting",
        "NUMERIC_ONE_CLASS",
        "NUMERIC",
        f"How many instances in the data have the label '{x}'?",
        by_label[x],
    )
    cmp = by_label[x] - by_label[y]
    relation = (
        "more common than" if cmp > 0 else "less common than" if cmp < 0 else "same frequency as"
    )
    ask(
        "counting",
        "RELATIVE_FREQ",
        "COMPARISON",
        f"In the data, is the label '{x}' more common than, less common than, or the same "
        f"frequency as the label '{y}'?",
        relation,
    )
    x_records = [r for r in records if r.label == x]
    per_user = Counter(r.user for r in x_records)
    ask(
        "user",
        "USER_MOST_FREQ",
        "USER",
        f"Which user has the most instances with the label '{x}'?",
        _unique_top(per_user),
    )
    if x_records:
        user = rng.choice(x_records).user
        ask(
            "user",
            "USER_COUNT",
            "NUMERIC",
            f"How many instances with the label '{x}' does user {user} have?",
            per_user[user],
        )
        per_month = Counter(f"{r.day:%B %Y}" for r in x_records)
        ask(
            "timeline",
            "MONTH_MOST_FREQ",
            "MONTH_YEAR",
            f"In which month were instances with the label '{x}' most common?",
            _unique_top(per_month),
        )
        ask(
            "timeline",
            "FIRST_DATE",
            "DATE",
            f"What is the date of the earliest instance with the label '{x}'?",
            min(r.day for r in x_records),
        )
        cut = _START + timedelta(days=rng.randrange(_DAYS))
        ask(
            "timeline",
            "COUNT_AFTER_DATE",
            "NUMERIC",
            f"How many instances with the label '{x}' are dated after {cut:%b %d, %Y}?",
            sum(1 for r in x_records if r.day > cut),
        )
    return out


def header(labels: Sequence[str]) -> str:
    """The window's first line: what the records are and the labels they may take."""
    return (
        "The following lines contain instances, one per line. Each line has a date, a user ID and "
        "an instance, which can be classified into one of these labels: "
        + ", ".join(labels)
        + ". The labels are not given; classify each instance yourself.\n"
    )


def generate(
    lengths: Sequence[str],
    *,
    records: Sequence[tuple[str, str]] | None = None,
    windows: int = 1,
    seed: int = 0,
    dataset: str = "ours",
) -> list[dict[str, Any]]:
    """Rows in OOLONG-synth's schema: ``windows`` windows per length, every question of each."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for li, name in enumerate(lengths):
        tokens = length_tokens(name)
        for w in range(windows):
            pool = records if records is not None else builtin_records(5000, rng.randrange(1 << 30))
            labels = sorted({label for _, label in pool})
            head = header(labels)
            window, lines, used = _pack(pool, tokens, rng, head)
            text = head + "\n".join(lines)
            labelled = head + "\n".join(
                f"{line} || Label: {r.label}" for line, r in zip(lines, window, strict=True)
            )
            window_id = 1000 * li + w
            for k, q in enumerate(questions(window, labels, rng)):
                rows.append(
                    {
                        "id": 100 * window_id + k,
                        "context_len": tokens,
                        "dataset": dataset,
                        "context_window_text": text if k == 0 else None,
                        "context_window_text_with_labels": labelled if k == 0 else None,
                        **q,
                        "input_subset": "False",
                        "num_labels": len(labels),
                        "context_window_id": window_id,
                        "window_tokens": used,
                    }
                )
    return rows


def write(rows: Sequence[dict[str, Any]], out: Path) -> Path:
    """``rows`` as ``{out}/synth/test.jsonl``; the path."""
    path = out / "synth" / "test.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m longctx.experiments.oolong_gen")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--lengths", nargs="+", default=["8K", "128K"])
    parser.add_argument("--records", type=Path, help="JSON Lines of {text, label}")
    parser.add_argument("--windows", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    pool = read_records(args.records) if args.records else None
    rows = generate(
        args.lengths,
        records=pool,
        windows=args.windows,
        seed=args.seed,
        dataset=args.records.stem if args.records else "ours",
    )
    sys.stdout.write(f"{len(rows)} questions -> {write(rows, args.out)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
