"""BABILong: official prompts, official answer check, loader layouts and errors, the table, the
request, the export.

The goldens in ``tests/golden/babilong/`` were written by booydar/babilong @ 7a6efee's own code, run
unchanged outside this repository (see that folder's README): ``prompts.json`` holds the SHA-256 of
``get_formatted_input`` for every task and switch combination; ``verdicts.jsonl.gz`` holds
``compare_answers``' verdict on 2,609 pairs: 1,800 real replies from the official ``babilong_evals``
folder (Gemini 3 Flash, Phi-3-mini; chatty ones such as "Answer: The garden\\n\\nQuestion: ...") and
809 chatty replies for all 20 tasks.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import itertools
import json
import re
from pathlib import Path

import pytest

from longctx import make_chat_model
from longctx.experiments.benchmarks import (
    BENCHMARKS,
    BenchmarkDataError,
    Prediction,
    load_benchmark,
    score,
)
from longctx.experiments.benchmarks import babilong as bl
from longctx.experiments.metrics import babilong as m
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from tests.recording_server import RecordingServer

DATA = Path(__file__).parent / "fixtures" / "benchmarks" / "babilong"
GOLDEN = Path(__file__).parent / "golden" / "babilong"


def _verdicts() -> list[dict]:
    with gzip.open(GOLDEN / "verdicts.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_answer_check_agrees_with_the_official_compare_answers_on_2609_pairs():
    rows = _verdicts()
    assert len(rows) >= 2000 and {r["task"] for r in rows} == set(bl.TASKS)
    disagree = [
        r
        for r in rows
        if m.compare_answers(r["target"], r["output"], r["question"], m.TASK_LABELS[r["task"]])
        != r["official"]
    ]
    assert disagree == []
    assert 0 < sum(r["official"] for r in rows) < len(rows)  # both verdicts occur


@pytest.mark.parametrize(
    "task, target, output, question, expected",
    [
        (
            "qa1",
            "hallway",
            "The most recent location of John is the hallway.",
            "Where is John?",
            True,
        ),
        ("qa5", "football", "- ai: A football", "What did Fred give to Bill?", True),
        (
            "qa1",
            "hallway",
            "hallway. Then the kitchen",
            "Where is John?",
            True,
        ),  # first sentence only
        ("qa1", "hallway", "hallway or kitchen", "Where is John?", False),  # two labels
        (
            "qa3",
            "garden",
            "Before the kitchen the apple was in the garden.",
            "Where was the apple before the kitchen?",
            True,
        ),  # question's label left aside
        ("qa8", "apple,milk", "milk and apple", "What is Daniel carrying?", True),
        ("qa8", "apple,milk", "apple, milk, football", "What is Daniel carrying?", False),
        (
            "qa19",
            "n,w",
            "n,w",
            "How do you go from the kitchen to the hallway?",
            True,
        ),  # "n,w" is one label (len 3)
        (
            "qa7",
            "none",
            "none",
            "How many objects is Mary carrying?",
            False,
        ),  # "one" is inside "none": two labels, as official
        ("qa6", "no", "nothing", "Is Mary in the office?", True),  # "no" is inside "nothing"
    ],
)
def test_compare_answers_cases(task, target, output, question, expected):
    assert m.compare_answers(target, output, question, m.TASK_LABELS[task]) is expected


def test_prompts_are_the_official_ones_for_every_task_and_switch_combination():
    golden = json.loads((GOLDEN / "prompts.json").read_text(encoding="utf-8"))
    seen = 0
    for task, (ins, ex, post) in itertools.product(
        bl.TASKS, itertools.product([True, False], repeat=3)
    ):
        text = bl.formatted_input(
            golden["context"],
            golden["question"],
            **{
                k: bl.DEFAULT_PROMPTS[task][k] if on else ""
                for k, on in zip(bl.SWITCHES, (ins, ex, post), strict=True)
            },
        )
        yes = ["yes" if on else "no" for on in (ins, ex, post)]
        key = f"{task}_instruction_{yes[0]}_examples_{yes[1]}_post_prompt_{yes[2]}"
        assert hashlib.sha256(text.encode()).hexdigest() == golden["sha256"][key], key
        seen += 1
    assert seen == len(golden["sha256"]) == 160


def test_loader_reads_every_layout_and_switches_reach_the_prompt():
    samples = load_benchmark("babilong", DATA)
    assert [s.sample_id for s in samples] == [
        "qa1-1k-0",
        "qa1-1k-1",
        "qa7-2k-0",
        "qa7-2k-1",
        "qa8-0k-0",
        "qa8-0k-1",
    ]
    first = samples[0]
    assert (
        first.question.text == "Where is Mary?"
        and first.answers == ("bathroom",)
        and first.dataset == "qa1"
    )
    assert (
        first.metadata["length"] == "1k"
        and first.question.instruction == bl.DEFAULT_PROMPTS["qa1"]["post_prompt"]
    )
    prompt = BENCHMARKS.get("babilong").prompt(first)
    assert prompt.startswith(
        bl.DEFAULT_PROMPTS["qa1"]["instruction"] + "\n\n<example>"
    ) and prompt.endswith("</context>\n\nQuestion: Where is Mary?")
    bare = load_benchmark(
        "babilong",
        DATA,
        datasets=["qa1"],
        lengths=["1k"],
        instruction=False,
        examples=False,
        post_prompt=False,
        chat_template=False,
    )
    assert (
        len(bare) == 2
        and bare[0].question.instruction is None
        and not bare[0].question.protocol.chat_template
    )
    assert (
        BENCHMARKS.get("babilong").prompt(bare[0])
        == f"<context>\n{bare[0].corpus[0].text.strip()}\n</context>\n\nQuestion: Where is Mary?"
    )
    assert BENCHMARKS.get("babilong").protocol(first) == {
        "max_new_tokens": 20,
        "temperature": 0.0,
        "chat_template": True,
    }


@pytest.mark.parametrize(
    "content, message",
    [
        (
            '{"input": "Mary went home.", "question": "Where is Mary?"}\n',
            "record 0: field 'target' is missing",
        ),
        (
            '{"input": "Mary went home.", "question": "Where is Mary?", "target": 3}\n',
            "field 'target' is not a non-empty string (int)",
        ),
        (
            '{"input": "", "question": "Where is Mary?", "target": "home"}\n',
            "field 'input' is not a non-empty string",
        ),
        ('["a"]\n', "record 0: expected an object"),
        ("{not json\n", "unreadable"),
        (
            '{"input": "M.", "question": "Where?", "target": "home", "supporting_facts": "M."}\n',
            "field 'supporting_facts' is not a list",
        ),
        *(
            (
                '{"input": "Mary went home.", "question": "Where?", "target": "home", '
                f'"supporting_facts": ["home."], "supporting_spans": [{span}]}}\n',
                "field 'supporting_spans' is not one [start, end] of 'input'",
            )
            for span in (
                "[-5, 15]",
                "[10, 1000]",
                "[10, 15.0]",
                "[true, 15]",
            )  # slices that take them
        ),
        ("", "holds no record"),
        ("\n\n", "holds no record"),
    ],
)
def test_loader_refuses_malformed_files_in_one_line_naming_file_and_field(
    tmp_path, content, message
):
    (tmp_path / "1k").mkdir()
    (tmp_path / "1k" / "qa2.jsonl").write_text(content)
    with pytest.raises(BenchmarkDataError, match=re.escape(message)) as info:
        load_benchmark("babilong", tmp_path)
    assert str(tmp_path / "1k" / "qa2.jsonl") in str(info.value) and "\n" not in str(info.value)


def test_loader_errors_for_nothing_and_unknown_names(tmp_path):
    with pytest.raises(BenchmarkDataError, match=str(tmp_path)):
        load_benchmark("babilong", tmp_path)
    with pytest.raises(KeyError, match="known"):
        load_benchmark("babilong", DATA, datasets=["qa21"])
    with pytest.raises(KeyError, match="known"):
        load_benchmark("babilong", DATA, lengths=["3x"])


def test_score_is_accuracy_with_the_official_table():
    samples = load_benchmark("babilong", DATA)
    preds = [
        Prediction("qa1-1k-0", "The most recent location of Mary is bathroom."),
        Prediction("qa1-1k-1", "garden"),
        Prediction("qa7-2k-0", "Two"),
        Prediction("qa7-2k-1", None, "timeout"),
        Prediction("qa8-0k-0", "apple, milk"),
        Prediction("qa8-0k-1", "Nothing"),
    ]
    result = score("babilong", preds, samples=samples)
    assert result["per_sample"] == {
        "qa1-1k-0": 100.0,
        "qa1-1k-1": 0.0,
        "qa7-2k-0": 100.0,
        "qa7-2k-1": 0.0,
        "qa8-0k-0": 100.0,
        "qa8-0k-1": 100.0,
    }
    assert result["overall"] == round(400 / 6, 2) and result["n"] == 6 and result["n_failed"] == 1
    assert result["tasks"] == {"qa1": {"1k": 50.0}, "qa7": {"2k": 50.0}, "qa8": {"0k": 100.0}}
    assert result["lengths"] == {"0k": 100.0, "1k": 50.0, "2k": 50.0}
    assert result["avg_qa1_qa5"] == {
        "0k": None,
        "1k": None,
        "2k": None,
    }  # the official -1: qa2-qa5 missing


def test_score_of_nothing_and_of_one_answer():
    samples = load_benchmark("babilong", DATA, datasets=["qa8"])
    with pytest.raises(ValueError, match="No predictions"):
        score("babilong", [], samples=samples)
    empty = BENCHMARKS.get("babilong").score([])
    assert empty["overall"] is None and empty["tasks"] == {} and empty["n"] == 0
    one = score("babilong", [Prediction("qa8-0k-1", "nothing")], samples=samples)
    assert (
        one["overall"] == 100.0
        and one["tasks"] == {"qa8": {"0k": 100.0}}
        and one["task_means"] == {"qa8": 100.0}
    )


def test_a_reply_pandas_reads_as_missing_scores_as_the_official_table_reads_it():
    samples = load_benchmark("babilong", DATA, datasets=["qa1"])
    result = score(
        "babilong",
        [Prediction("qa1-1k-0", "  None "), Prediction("qa1-1k-1", "NA")],
        samples=samples,
    )
    assert result["n_read_as_missing"] == 2 and result["overall"] == 0.0
    assert m.as_read_back(" office ") == "office" and m.as_read_back("None") == ""


def test_full_context_sends_the_official_prompt_budget_and_temperature(tmp_path):
    with RecordingServer(lambda request: "The most recent location of Mary is bathroom.") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="babilong",
            strategies=("full_context",),
            data_path=str(DATA),
            datasets=("qa1",),
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path, llm=llm, show_progress=False)
    samples = load_benchmark("babilong", DATA, datasets=["qa1"])
    assert sorted(r["messages"][0]["content"] for r in server.requests) == sorted(
        bl.prompt(s) for s in samples
    )
    assert all(
        len(r["messages"]) == 1 and r["messages"][0]["role"] == "user" for r in server.requests
    )
    assert {r.get("max_tokens", r.get("max_completion_tokens")) for r in server.requests} == {20}
    assert {r["temperature"] for r in server.requests} == {0.0}
    assert {r["prediction"] for r in read_rows(tmp_path)} == {
        "The most recent location of Mary is bathroom."
    }


def test_export_writes_the_csv_the_official_collect_results_reads(tmp_path):
    """The CSV, read back with pandas as ``collect_results.get_model_results`` reads it, scores what
    ``score`` says."""
    import pandas as pd

    replies = {
        "Where is Mary?": "The most recent location of Mary is bathroom.",
        "Where is Daniel?": "None",
        "How many objects is Sandra carrying?": " two ",
        "How many objects is Mary carrying?": "nothing, none",
        "What is Daniel carrying?": "apple,milk",
        "What is Sandra carrying?": "nothing",
    }
    with RecordingServer(
        lambda request: replies[request["messages"][0]["content"].rsplit("Question: ", 1)[1]]
    ) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        run_experiment(
            RunConfig(
                benchmark="babilong",
                strategies=("full_context",),
                data_path=str(DATA),
                llm_cache=False,
            ),
            tmp_path / "run",
            llm=llm,
            show_progress=False,
        )
    from longctx.experiments.reports.export import export_official

    written = export_official(tmp_path / "run", tmp_path / "official")["full_context"]
    folder = tmp_path / "official" / "babilong_evals" / "longctx" / "full_context"
    suffix = "instruction_yes_examples_yes_post_prompt_yes_chat_template_yes_system_prompt_no"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        f"{s}_{suffix}.{e}" for s in ("qa1_1k", "qa7_2k", "qa8_0k") for e in ("csv", "json")
    )
    assert sum(f.lines for f in written) == 6
    with (folder / f"qa7_2k_{suffix}.csv").open(newline="") as f:
        assert list(csv.reader(f)) == [
            ["", "target", "output", "question"],
            ["0", "two", "two", "How many objects is Sandra carrying?"],
            ["1", "none", "nothing, none", "How many objects is Mary carrying?"],
        ]
    settings = json.loads((folder / f"qa1_1k_{suffix}.json").read_text())
    assert (
        settings["prompt"]["template"] == bl.DEFAULT_TEMPLATE
        and settings["generate_kwargs"]["max_new_tokens"] == 20
    )
    correct = total = 0
    for path in folder.glob("*.csv"):
        task = path.stem.split("_")[0]
        df = pd.read_csv(path)
        if df["output"].dtype != object:
            df["output"] = df["output"].astype(str)
        df["output"] = df["output"].fillna("")
        correct += sum(
            m.compare_answers(r["target"], r["output"], r["question"], m.TASK_LABELS[task])
            for _, r in df.iterrows()
        )
        total += len(df)
    samples = load_benchmark("babilong", DATA)
    ours = score(
        "babilong", {s.sample_id: replies[s.question.text] for s in samples}, samples=samples
    )
    assert (
        ours["overall"] == round(100 * correct / total, 2) == 66.67
    )  # "None" read back as "", as the official table reads it


def test_the_documented_cli_chain_with_loader_options_runs_reports_and_exports(
    tmp_path, monkeypatch
):
    """``longctx run --benchmark babilong --loader-option examples=false ...``, then ``report``
    and ``export``."""
    from longctx.experiments.cli.app import main

    run = tmp_path / "run"
    with RecordingServer(lambda request: "bathroom") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        argv = [
            "run",
            "--benchmark",
            "babilong",
            "--data",
            str(DATA),
            "--strategies",
            "full_context",
            "--llm",
            "openai:rec",
            "--out",
            str(run),
            "--loader-option",
            "examples=false",
            "--loader-option",
            'lengths=["1k"]',
        ]
        assert main(argv) == 0
    sent = server.requests[0]["messages"][0]["content"]
    assert "<example>" not in sent and sent.startswith(
        bl.DEFAULT_PROMPTS["qa1"]["instruction"]
        + "\n\n\n\n"
        + bl.DEFAULT_PROMPTS["qa1"]["post_prompt"]
    )
    assert main(["report", str(run), "--no-plots", "--no-html"]) == 0
    scores = json.loads((run / "report" / "scores.json").read_text())["full_context"]
    assert scores["tasks"] == {"qa1": {"1k": 50.0}} and scores["overall"] == 50.0
    assert main(["export", str(run)]) == 0
    name = (
        "qa1_1k_instruction_yes_examples_no_post_prompt_yes_chat_template_yes_system_prompt_no.csv"
    )
    assert (run / "official" / "babilong_evals" / "longctx" / "full_context" / name).is_file()
