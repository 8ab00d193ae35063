"""The BABILong-style generator: bAbI files read as the official ``get_dataset_df`` cuts them,
statements hidden in background at any length, seeded, and read back by the ``babilong`` loader.
Fixtures in ``tests/fixtures/babi`` are ours."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from longctx.experiments.babilong_gen import generate, length_tokens, read_babi, task_file
from longctx.experiments.babilong_gen.__main__ import main
from longctx.experiments.babilong_gen.babi import BabiFormatError
from longctx.experiments.babilong_gen.haystack import placed
from longctx.experiments.benchmarks import BENCHMARKS, load_benchmark
from longctx.retrieval.tokenizers import tiktoken_tokenizer

BABI = Path(__file__).parent / "fixtures" / "babi"
BACKGROUND = [(BABI / "background.txt").read_text(encoding="utf-8")]


def test_babi_file_gives_one_sample_per_question_without_earlier_questions():
    samples = read_babi(task_file(BABI, "qa1"))
    assert [(s.question, s.answer) for s in samples] == [
        ("Where is Mary?", "bathroom"),
        ("Where is Daniel?", "hallway"),
        ("Where is John?", "office"),
        ("Where is John?", "garden"),
    ]
    second = samples[1]
    assert second.facts == (
        "Mary moved to the bathroom.",
        "John went to the hallway.",
        "Daniel went back to the hallway.",
        "Sandra moved to the garden.",
    )
    assert second.supporting == ("Daniel went back to the hallway.",)
    two = read_babi(task_file(BABI, "qa2"))
    assert two[0].supporting == ("Mary got the milk there.", "Mary travelled to the hallway.")
    # create_tasks.py's max_n_facts: statements plus the question; 4 + 1 > 4 is dropped, 2 + 1 kept
    assert [len(s.facts) for s in read_babi(task_file(BABI, "qa1"), max_n_facts=4)] == [2, 2]


@pytest.mark.parametrize(
    "line, message",
    [
        ("Mary moved.", "expected 'N text'"),
        ("3 Where is Mary?\t\t1", "needs 'question<TAB>answer<TAB>ids'"),
        ("3 Where?\tbath\tone", "supporting ids"),
    ],
)
def test_malformed_babi_line_is_named_by_file_and_line(tmp_path, line, message):
    path = tmp_path / "qa1_x_train.txt"
    path.write_text(f"1 John went to the office.\n{line}\n")
    with pytest.raises(BabiFormatError, match=message) as info:
        read_babi(path)
    assert f"{path}:2" in str(info.value)


def test_an_empty_babi_file_has_no_samples_and_generates_an_empty_file(tmp_path):
    (tmp_path / "qa4_two-arg-relations_train.txt").write_text("\n")
    assert read_babi(task_file(tmp_path, "qa4")) == []
    assert generate(
        tmp_path, tmp_path / "out", tasks=["qa4"], lengths=["1k"], samples=5, background=BACKGROUND
    ).samples == {"qa4/1k": 0}
    assert (tmp_path / "out" / "1k" / "qa4.jsonl").read_text() == ""


def test_missing_task_file_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        task_file(tmp_path, "qa3")


@pytest.mark.parametrize(
    "name, tokens",
    [("0k", 0), ("16k", 16_000), ("1M", 1_000_000), ("4M", 4_000_000), ("10M", 10_000_000)],
)
def test_length_names(name, tokens):
    assert length_tokens(name) == tokens


def test_a_bad_length_name_is_refused():
    with pytest.raises(ValueError, match="<N>k or <N>M"):
        length_tokens("4G")


@pytest.mark.parametrize("n_facts, n_background", [(0, 5), (1, 0), (3, 5), (10_000, 50)])
def test_placement_keeps_every_statement_and_sentence_in_order(n_facts, n_background):
    facts = [[-i - 1] for i in range(n_facts)]
    background = [[i] for i in range(n_background)]
    out = placed(facts, background, np.random.default_rng(1))
    assert [p for p in out if p[0] < 0] == facts and [p for p in out if p[0] >= 0] == background


def test_generated_haystacks_have_the_length_the_facts_in_order_and_load(tmp_path):
    tok = tiktoken_tokenizer("cl100k_base")
    result = generate(
        BABI,
        tmp_path,
        tasks=["qa1", "qa2"],
        lengths=["0k", "1k", "2k"],
        samples=3,
        background=BACKGROUND,
        seed=7,
    )
    assert result.samples == {
        "qa1/0k": 3,
        "qa1/1k": 3,
        "qa1/2k": 3,
        "qa2/0k": 2,
        "qa2/1k": 2,
        "qa2/2k": 2,
    }
    pool = {
        (s.question, s.answer): s
        for s in read_babi(task_file(BABI, "qa1")) + read_babi(task_file(BABI, "qa2"))
    }
    for length, message in (("0k", None), ("1k", 700), ("2k", 1700)):
        records = [
            json.loads(line) for line in (tmp_path / length / "qa1.jsonl").read_text().splitlines()
        ]
        assert len({(r["question"], r["target"]) for r in records}) == 3  # drawn without repeats
        for r in records:
            sample = pool[(r["question"], r["target"])]
            assert r["supporting_facts"] == list(sample.supporting)
            at = [r["input"].find(f) for f in sample.facts]
            assert -1 not in at and at == sorted(at)  # every statement, in story order
            if message is None:
                assert r["input"] == " ".join(sample.facts)  # 0k: the statements alone
            else:
                assert (
                    abs(tok.count(r["input"]) - message) <= 3
                )  # the message: statements plus cut background
    samples = load_benchmark("babilong", tmp_path, lengths=["2k"])
    assert all(
        s.metadata["supporting_facts"] == pool[(s.question.text, s.answers[0])].supporting
        for s in samples
    )
    assert len(samples) == 5 and BENCHMARKS.get("babilong").prompt(samples[0]).endswith(
        f"Question: {samples[0].question.text}"
    )


def test_generation_is_seeded(tmp_path):
    def run(seed: int, out: Path) -> str:
        generate(
            BABI, out, tasks=["qa1"], lengths=["1k"], samples=4, background=BACKGROUND, seed=seed
        )
        return (out / "1k" / "qa1.jsonl").read_text()

    assert run(3, tmp_path / "a") == run(3, tmp_path / "b") != run(4, tmp_path / "c")


def test_default_background_is_our_synthetic_prose_and_the_cli_writes_the_layout(tmp_path, capsys):
    assert (
        main(
            [
                "--tasks-dir",
                str(BABI),
                "--out",
                str(tmp_path),
                "--tasks",
                "qa2",
                "--lengths",
                "4k",
                "--samples",
                "1",
            ]
        )
        == 0
    )
    record = json.loads((tmp_path / "4k" / "qa2.jsonl").read_text())
    facts = next(s.facts for s in read_babi(task_file(BABI, "qa2")) if s.answer == record["target"])
    assert abs(tiktoken_tokenizer("cl100k_base").count(record["input"]) - 3700) <= 3 and all(
        f in record["input"] for f in facts
    )
    assert (
        "During the year" in record["input"] or "approach to" in record["input"]
    )  # experiments.synth.filler's prose
    assert f"{tmp_path / '4k' / 'qa2.jsonl'}: 1 samples of 4k" in capsys.readouterr().out
    assert main(["--tasks-dir", str(tmp_path), "--out", str(tmp_path), "--tasks", "qa9"]) == 2


def test_help_documents_every_argument(capsys):
    from longctx.experiments.babilong_gen.__main__ import build_parser

    options = [a for a in build_parser()._actions if a.option_strings and a.dest != "help"]
    assert {a.dest for a in options} >= {"tasks_dir", "out", "tasks", "lengths", "samples", "seed"}
    assert all(a.help and len(a.help) > 20 for a in options), [
        a.dest for a in options if not a.help
    ]
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "{out}/{length}/{task}.jsonl" in text and "(default: 100)" in text
