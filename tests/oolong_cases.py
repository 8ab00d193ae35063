"""The inputs OOLONG's parity checks share: reply x gold pairs per answer type for the scorers,
and seeded OOLONG-shaped rows for the prompt assembly (built the same way by
``tests/oolong_official.py``,
which runs the official code on them, and by the default-tier tests, which run ours).
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

SEED = 48

_LABELS = ("spam", "ham", "entity", "location", "numeric value", "description and abstract concept")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August")


def _numeric(rng: random.Random) -> list[tuple[str, str, str]]:
    cases = []
    for gold in (0, 1, 7, 12, 40, 133):
        for reply in (
            f"Answer: {gold}",
            f"Answer: {gold + 1}",
            f"Answer: {gold - 2}",
            f"Answer: {gold + 25}",
            f"**Answer:** **{gold}**",
            f"Answer: [{gold}]",
            f"{gold}",
            f" {gold} ",
            f"The label appears {gold} times in the data set, so the count is {gold}",
            f"After counting every instance, the total is {gold + 3}",
            f"Answer: {gold}.0",
            f"Answer: {gold} instances",
            f"Answer: about {gold}",
            f"Label: {gold}",
            "Answer: twelve",
            "Answer:",
            f"Answer: 1_{gold}",
            f"Answer: +{gold}",
        ):
            cases.append((f"[{gold}]", "ANSWER_TYPE.NUMERIC", reply))
    for _ in range(30):
        gold = rng.randint(0, 500)
        reply = f"Answer: {gold + rng.randint(-6, 6)}"
        cases.append((f"[{gold}]", "ANSWER_TYPE.NUMERIC", reply))
    return cases


def _labels(rng: random.Random) -> list[tuple[str, str, str]]:
    cases = []
    for gold in _LABELS:
        other = rng.choice([x for x in _LABELS if x != gold])
        for reply in (
            f"Label: {gold}",
            f"Label: {gold.title()}",
            f"Label: **{gold}**",
            f"Label: [{gold}]",
            gold,
            f"The most common label in the data is {gold}",
            f"Answer: {gold}.",
            f"Label: {other}",
            f"Answer: the answer is {gold}, as counted above",
            f"Label: {gold}\n",
        ):
            cases.append((repr([gold]), "ANSWER_TYPE.LABEL", reply))
    return cases


def _comparisons() -> list[tuple[str, str, str]]:
    cases = []
    golds = ("more common than", "less common than", "same frequency as")
    for gold in golds:
        for phrase in ("more common", "less common", "same frequency"):
            for reply in (
                f"Answer: {phrase}",
                f"Answer: {phrase} than",
                f"Answer: spam is {phrase} than ham in the data",
                f"Answer: label 'spam' is {phrase} than label 'ham'",
                f"spam is {phrase} than ham",
                f"**Answer:** {phrase}",
            ):
                cases.append((repr([gold]), "ANSWER_TYPE.COMPARISON", reply))
        cases.append((repr([gold]), "ANSWER_TYPE.COMPARISON", "Answer: they are equal in number"))
    return cases


def _users(rng: random.Random) -> list[tuple[str, str, str]]:
    cases = []
    for _ in range(12):
        gold = rng.randint(10_000, 99_999)
        for reply in (
            f"User: {gold}",
            f"User: {gold + 1}",
            f"User: user {gold}",
            f"The user with the most instances is {gold}",
            f"User: **{gold}**",
        ):
            cases.append((f"[{gold}]", "ANSWER_TYPE.USER", reply))
    return cases


def _dates() -> list[tuple[str, str, str]]:
    cases = []
    for year, month, day in ((2023, 1, 5), (2021, 11, 23), (2022, 7, 1), (2020, 2, 29)):
        name = _MONTHS[month - 1] if month <= len(_MONTHS) else "November"
        gold = f"[datetime.date({year}, {month}, {day})]"
        for reply in (
            f"Date: {year}-{month:02d}-{day:02d}",
            f"Date: {year}-{month}-{day}",
            f"Date: {name} {day}, {year}",
            f"Date: {day} {name} {year}",
            f"Date: {name[:3]} {day}, {year}",
            f"Date: {month}/{day}/{year}",
            f"Date: {day:02d}/{month:02d}/{year}",
            f"Date: {month}/{day}/{year % 100:02d}",
            f"Date: {year}/{month:02d}/{day:02d}",
            f"Date: **{name} {day}, {year}**",
            f"Date: [{year}-{month:02d}-{day:02d}]",
            f"The earliest date is {year}-{month:02d}-{day:02d}",
            f"Date: {day}th of {name} {year}",
            f"Date: {name} {day + 1 if day < 28 else day - 1}, {year}",
            f"Date: {year + 1}-{month:02d}-{day:02d}",
            f"Answer: the date is {name} {day}, {year} at the latest",
            f"Date: {year}-{month:02d}-{day:02d} 00:00:00",
            f"Date: {year}-{month:02d}-{day:02d} 00",
            f"Date: {year}{month:02d}{day:02d}",
            "Date: not sure",
            "Date: 2023-13-45",
            f"{year}-{month:02d}-{day:02d}",
            f"Date: {name} {year}" if month != 1 else f"Date: February {year}",
        ):
            cases.append((gold, "ANSWER_TYPE.DATE", reply))
    return cases


def _edges() -> list[tuple[str, str, str]]:
    """Corners of ``int()``, the colon split and the gold literal."""
    numeric = "ANSWER_TYPE.NUMERIC"
    return [
        ("[12]", numeric, "Answer: \u0661\u0662"),  # Arabic-Indic digits: int() reads 12
        ("[0]", numeric, "Answer: -0"),
        ("[1000]", numeric, "Answer: 1e3"),
        ("[12]", numeric, "User: 3 Answer: 12"),
        ("['12']", numeric, "Answer: 11"),  # a string gold in a numeric item
        ("[12]", numeric, "Answer: 12\n\nThat is all."),
        ('["won\'t"]', "ANSWER_TYPE.LABEL", "Label: won't"),
        ("['spam']", "ANSWER_TYPE.LABEL", "Label: spam :"),
        ("['spam']", "ANSWER_TYPE.LABEL", ":spam"),
        ("['spam']", "ANSWER_TYPE.LABEL", "x" * 25),
        ("['more common than']", "ANSWER_TYPE.COMPARISON", "Answer: **More common** than"),
        ("['same frequency as']", "ANSWER_TYPE.COMPARISON", "same frequency"),
    ]


def _others() -> list[tuple[str, str, str]]:
    """Answer types the scorer has no branch for: only an exact string or a comparison scores."""
    cases = []
    for gold in ("January 2023", "March 2021"):
        for reply in (f"Answer: {gold}", "Answer: February 2023", f"{gold}", f"Date: {gold}"):
            cases.append((repr([gold]), "ANSWER_TYPE.MONTH_YEAR", reply))
    return cases


def synth_cases() -> list[dict[str, Any]]:
    """Reply x gold pairs for OOLONG-synth's scorer: numbers near and far, labels, comparisons,
    users, dates in many formats, types without a branch."""
    rng = random.Random(SEED)
    rows = (
        _numeric(rng)
        + _labels(rng)
        + _comparisons()
        + _users(rng)
        + _dates()
        + _others()
        + _edges()
    )
    return [
        {"id": i, "answer": a, "answer_type": t, "reply": r} for i, (a, t, r) in enumerate(rows)
    ]


_DND_GOLDS: tuple[Any, ...] = (
    12,
    "12",
    0,
    "Fireball",
    "Cure Wounds",
    "Fireball, Bless, Cure Wounds",
    "Bless, Bless, Shield",
    "20, 1",
    "Percy, Vex'ahlia",
)


def _dnd_replies(gold: Any) -> list[str]:
    text = str(gold)
    first = text.split(",")[0].strip()
    return [
        f"\\boxed{{{text}}}",
        f"So the answer is \\boxed{{{text}}}.",
        f"\\boxed{{\\text{{{text}}}}}",
        f"\\boxed{{{{{text}}}}}",
        f"\\boxed{{ {text.lower()} }}",
        f"\\boxed{{{text.upper()}}}",
        f"\\boxed{{{first}}}",
        f"\\boxed{{{first}, Shield}}",
        f"\\boxed{{{text},}}",
        text,
        f"The answer is {text}",
        "\\boxed{13}",
        "\\boxed{11}",
        "\\boxed{40}",
        "\\boxed{12.0}",
        "\\boxed{-3}",
        "\\boxed{1,200}",
        "\\boxed{}",
        f"\\boxed{{\\textbf{{{text}}}}}",
        f"First \\boxed{{{first}}} then \\boxed{{13}}",
        f"\\boxed{{\\text{{{first}}}}} and \\boxed{{{text}}}",
        f"\\boxed{{{text}",
    ]


def dnd_cases() -> list[dict[str, Any]]:
    """Reply x gold pairs for OOLONG-real's scorer: ints near and far, strings, lists, the
    ``\\boxed{}`` variants."""
    rows = [(g, r) for g in _DND_GOLDS for r in _dnd_replies(g)]
    return [{"id": i, "answer": g, "reply": r} for i, (g, r) in enumerate(rows)]


#: OOLONG-synth's task groups and some task / answer-type pairs of each, for the prompt rows.
SYNTH_TASKS = (
    ("counting", "TASK_TYPE.MOST_FREQ", "ANSWER_TYPE.LABEL", "['spam']"),
    ("counting", "TASK_TYPE.RELATIVE_FREQ", "ANSWER_TYPE.COMPARISON", "['more common than']"),
    ("counting", "TASK_TYPE.NUMERIC_ONE_CLASS", "ANSWER_TYPE.NUMERIC", "[17]"),
    ("user", "TASK_TYPE.SECOND_MOST_FREQ", "ANSWER_TYPE.USER", "[44106]"),
    (
        "timeline",
        "TASK_TYPE.REPRESENTED_N_TIMES",
        "ANSWER_TYPE.DATE",
        "[datetime.date(2023, 1, 5)]",
    ),
)
#: The three context lengths the prompt parity is checked at (``context_len`` of the rows).
CONTEXT_LENGTHS = (2048, 8192, 32768)


def _window(rng: random.Random, tokens: int, labels: bool) -> tuple[str, str]:
    lines, with_labels = [], []
    size = 0
    while size < tokens * 4:
        user = rng.randint(10_000, 99_999)
        words = " ".join(
            rng.choice(("free", "call", "win", "now", "ok", "meet", "won't")) for _ in range(8)
        )
        label = rng.choice(_LABELS[:2])
        line = f"Date: Jan {rng.randint(1, 28):02d}, 2023 || User: {user} || Instance: {words}"
        lines.append(line)
        with_labels.append(f"{line} || Label: {label}")
        size += len(line)
    head = "The following lines contain instances, one per line, each with a date and a user.\n"
    return head + "\n".join(lines), head + "\n".join(with_labels) if labels else ""


def synth_rows() -> list[dict[str, Any]]:
    """OOLONG-synth-shaped rows (every field of the hub's schema): each task at three context
    lengths, two windows per length, questions ending with the answer-format instruction."""
    rng = random.Random(SEED)
    rows: list[dict[str, Any]] = []
    for n, length in enumerate(CONTEXT_LENGTHS):
        for w in range(2):
            window_id = 1000 * (n + 1) + w
            text, with_labels = _window(rng, length // 16, labels=True)
            for k, (group, task, answer_type, answer) in enumerate(SYNTH_TASKS):
                rows.append(
                    {
                        "id": 10 * window_id + k,
                        "context_len": length,
                        "dataset": ("spam", "trec_coarse")[w],
                        "context_window_text": text,
                        "context_window_text_with_labels": with_labels,
                        "question": f"In the above data, which is the answer to {task} ({n}, {w})? "
                        "Give your final answer in the form 'Answer: X'.",
                        "task_group": group,
                        "task": task,
                        "answer": answer,
                        "answer_type": answer_type,
                        "input_subset": "False",
                        "num_labels": 2,
                        "context_window_id": window_id,
                    }
                )
    return rows


def dnd_rows() -> list[dict[str, Any]]:
    """OOLONG-real-shaped rows (the ``dnd`` config's fields) over three transcript lengths."""
    rng = random.Random(SEED + 1)
    rows: list[dict[str, Any]] = []
    for n, episodes in enumerate((1, 2, 4)):
        parts = []
        for e in range(episodes):
            names = ("MATT", "LAURA", "SAM", "TRAVIS")
            said = "\n".join(
                f"{rng.choice(names)}: roll {rng.randint(1, 20)} {'ok ' * 40}"
                for _ in range(60 * (n + 1))
            )
            parts.append(f"[START OF EPISODE]\n{said}\n[END OF EPISODE]")
        text = (
            "The following lines contains episode transcripts. "
            "Return the final answer in \\boxed{}. \n\n" + "\n\n".join(parts)
        )
        window = hashlib.sha256(f"w{n}".encode()).hexdigest()[:32]
        for k, (question, answer) in enumerate(
            (
                ("Total number of rolls in this episode?", 31),
                ("What is the first spell cast?", "Fireball"),
                (
                    "List the last spell cast in each episode? Return a comma separated list.",
                    "Bless, Shield",
                ),
            )
        ):
            rows.append(
                {
                    "id": hashlib.sha256(f"q{n}{k}".encode()).hexdigest()[:32],
                    "context_window_id": window,
                    "context_window_text": text,
                    "question": question,
                    "answer": answer,
                    "question_type": ("singledoc_rolls", "multidoc_spells")[n > 0],
                    "episodes": list(range(1, episodes + 1)),
                    "campaign": "campaign1",
                }
            )
    return rows


def digest(value: Any) -> str:
    """sha256 of ``value`` as canonical JSON (what the prompt fixture records per request)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def replies_for(rows: list[dict[str, Any]], *, dnd: bool) -> dict[str, str]:
    """A canned reply per row (keyed by :func:`reply_key`): the scoring cases' replies of its
    answer type in turn, so a run's overall mixes full, partial and no credit."""
    pool: dict[str, list[str]] = {}
    for case in dnd_cases() if dnd else synth_cases():
        pool.setdefault("dnd" if dnd else case["answer_type"], []).append(case["reply"])
    out = {}
    for i, row in enumerate(rows):
        replies = pool["dnd" if dnd else row["answer_type"]]
        out[reply_key(row["context_window_text"], row["question"])] = replies[
            (7 * i) % len(replies)
        ]
    return out


def reply_key(context: str, question: str) -> str:
    """The key of a canned reply: the window's text and the question (a question recurs across
    windows)."""
    return digest([context, question])


def export_lines() -> list[dict[str, Any]]:
    """``longctx export``'s ``full_output.jsonl`` lines (strategy ``full_context``) for the synth
    rows answered with :func:`replies_for`, the first row's call failed."""
    import tempfile
    from pathlib import Path

    from longctx.experiments.benchmarks import load_benchmark
    from longctx.experiments.reports.export import Answered, _write_oolong

    rows = synth_rows()
    replies = replies_for(rows, dnd=False)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "synth" / "test.jsonl"
        path.parent.mkdir()
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        samples = load_benchmark("oolong", scratch, datasets=["synth"])
        texts = {r["id"]: replies[reply_key(r["context_window_text"], r["question"])] for r in rows}
        pairs = [
            (s, Answered(None if i == 0 else texts[s.metadata["id"]]))
            for i, s in enumerate(samples)
        ]
        _write_oolong(pairs, Path(scratch) / "out", "full_context")
        out = Path(scratch) / "out" / "results" / "synth" / "full_context" / "full_output.jsonl"
        return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
