"""The OOLONG-synth-style generator: every gold answer equals a recount from the labelled window's
lines (read back from the text, counted here without the generator's code), windows fill their
length, the output loads as the ``oolong`` benchmark and the gold scores 1 by the official rules."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from longctx.experiments import oolong_gen as g
from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.metrics import oolong as m
from longctx.retrieval.tokens import count_tokens

LINE = re.compile(r"Date: (.+?) \|\| User: (\d+) \|\| Instance: (.*) \|\| Label: (.+)")


def _lines(labelled: str) -> list[tuple[datetime, int, str]]:
    out = []
    for line in labelled.splitlines()[1:]:
        found = LINE.fullmatch(line)
        assert found, line
        out.append((datetime.strptime(found[1], "%b %d, %Y"), int(found[2]), found[4]))
    return out


def _only_top(counts: Counter) -> Any:
    top = counts.most_common()
    return top[0][0] if len(top) == 1 or top[0][1] > top[1][1] else None


def _quoted(question: str) -> list[str]:
    return re.findall(r"'([^']+)'", question.split("?")[0])


def _recount(row: dict[str, Any], records: list[tuple[datetime, int, str]]) -> Any:
    task, q = row["task"].removeprefix("TASK_TYPE."), row["question"]
    labels = Counter(label for _, _, label in records)
    x = (_quoted(q) or [None])[0]
    mine = [(d, u) for d, u, label in records if label == x]
    if task == "MOST_FREQ":
        return _only_top(labels)
    if task == "LEAST_FREQ":
        return _only_top(Counter({k: -v for k, v in labels.items()}))
    if task == "NUMERIC_ONE_CLASS":
        return labels[x]
    if task == "RELATIVE_FREQ":
        a, b = labels[x], labels[_quoted(q)[1]]
        return "more common than" if a > b else "less common than" if a < b else "same frequency as"
    if task == "USER_MOST_FREQ":
        return _only_top(Counter(u for _, u in mine))
    if task == "USER_COUNT":
        user = int(re.search(r"user (\d+)", q)[1])
        return sum(1 for _, u in mine if u == user)
    if task == "MONTH_MOST_FREQ":
        return _only_top(Counter(d.strftime("%B %Y") for d, _ in mine))
    if task == "FIRST_DATE":
        return min(d for d, _ in mine)
    if task == "COUNT_AFTER_DATE":
        cut = datetime.strptime(re.search(r"after (.+?)\?", q)[1], "%b %d, %Y")
        return sum(1 for d, _ in mine if d > cut)
    raise AssertionError(task)


def _gold(row: dict[str, Any]) -> Any:
    return m.synth_gold(row["answer"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_gold_answer_equals_a_recount(seed: int) -> None:
    rows = g.generate(["8K", "32K"], windows=2, seed=seed)
    texts: dict[int, str] = {}
    tasks = set()
    for row in rows:
        texts.setdefault(row["context_window_id"], row["context_window_text_with_labels"])
        records = _lines(texts[row["context_window_id"]])
        tasks.add(row["task"])
        assert _gold(row) == _recount(row, records), (row["task"], row["question"])
    assert len(tasks) == 9 and {r["task_group"] for r in rows} == {"counting", "user", "timeline"}


def test_windows_fill_their_length_and_the_text_is_the_labelled_one_without_labels() -> None:
    rows = g.generate(["8K", "64K"], seed=3)
    for row in (r for r in rows if r["context_window_text"] is not None):
        used = count_tokens(row["context_window_text"])
        assert 0.97 * row["context_len"] <= used <= row["context_len"]
        plain = re.sub(r" \|\| Label: [^\n]*", "", row["context_window_text_with_labels"])
        assert plain == row["context_window_text"]


def test_the_users_own_records_and_the_loader(tmp_path: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    mine.write_text(
        "".join(
            json.dumps({"text": f"message {i} about {w}", "label": w}) + "\n"
            for i, w in enumerate(["spam", "ham", "ham", "spam", "ham", "promo"] * 5)
        )
    )
    rows = g.generate(["8K"], records=g.read_records(mine), seed=4, dataset="mine")
    g.write(rows, tmp_path / "data")
    samples = load_benchmark("oolong", tmp_path / "data", datasets=["synth"], labels=True)
    assert len(samples) == len(rows) and {s.metadata["source"] for s in samples} == {"mine"}
    assert len({id(s.corpus) for s in samples}) == 1
    for sample, row in zip(samples, rows, strict=True):  # the gold, said as asked, scores 1
        said = {
            "LABEL": "Label: {}",
            "NUMERIC": "Answer: {}",
            "USER": "User: {}",
            "COMPARISON": "Answer: {}",
            "MONTH_YEAR": "Answer: {}",
            "DATE": "Date: {}",
        }[row["answer_type"].removeprefix("ANSWER_TYPE.")]
        gold = _gold(row)
        reply = said.format(gold.strftime("%b %d, %Y") if isinstance(gold, datetime) else gold)
        assert m.synth_score(row["answer"], row["answer_type"], reply).score == 1, reply
    assert "spam" in samples[0].corpus[0].text and "|| Label:" in samples[0].corpus[0].text


def test_lengths_are_powers_of_two() -> None:
    assert g.length_tokens("128K") == 131_072 and g.length_tokens("4M") == 4_194_304
    with pytest.raises(ValueError, match="<N>K"):
        g.length_tokens("10k")
