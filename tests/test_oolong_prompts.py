"""OOLONG's loader and requests against the official ``eval_script_batched.py``: the rows of
``tests/oolong_cases.py`` written in the hub's layouts and loaded by ours give, run for run, the
requests the official ``launch`` sent (kind, messages byte for byte, arguments, order) for every
task type at three context lengths, and the official ``overall.txt`` line
(``tests/fixtures/oolong/prompts.json``, written by ``tests/oolong_official.py``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from longctx.experiments.benchmarks import BenchmarkDataError, load_benchmark
from longctx.experiments.benchmarks import oolong as o
from longctx.experiments.benchmarks.predictions import Prediction
from tests import oolong_cases as cases

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "oolong" / "prompts.json").read_text(encoding="utf-8")
)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("oolong")
    (root / "oolong-synth" / "data").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(cases.synth_rows()),
        root / "oolong-synth" / "data" / "test-00000-of-00001.parquet",
        row_group_size=7,
    )
    (root / "oolong-real" / "dnd").mkdir(parents=True)
    with (root / "oolong-real" / "dnd" / "test.jsonl").open("w", encoding="utf-8") as f:
        for row in cases.dnd_rows():
            f.write(json.dumps(row) + "\n")
    return root


def _ours(requests: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [
        (
            r["kind"],
            r["messages"][1]["content"],
            cases.digest(r["messages"]),
            json.dumps(r["arguments"], sort_keys=True),
        )
        for r in requests
    ]


def _official(requests: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [
        (r["kind"], r["question"], r["messages_sha256"], json.dumps(r["arguments"], sort_keys=True))
        for r in requests
    ]


@pytest.mark.parametrize("run", FIXTURE["runs"], ids=lambda r: f"{r['dataset']}-{r['flags']}")
def test_requests_equal_the_official_run(data: Path, run: dict[str, Any]) -> None:
    samples = load_benchmark(
        "oolong", data, datasets=[run["dataset"]], labels=run["flags"].get("labels", False)
    )
    batched = run["flags"].get("batch_by_context_window", False)
    ours = _ours(o.official_requests(samples, FIXTURE["model"], batch_by_context_window=batched))
    official = _official(run["requests"])
    if run["dataset"] == "real" and batched:  # string window ids: set order is the hash seed's
        assert Counter(ours) == Counter(official)
    else:
        assert ours == official


@pytest.mark.parametrize("run", FIXTURE["runs"], ids=lambda r: f"{r['dataset']}-{r['flags']}")
def test_overall_line_equals_the_official(data: Path, run: dict[str, Any]) -> None:
    samples = load_benchmark(
        "oolong", data, datasets=[run["dataset"]], labels=run["flags"].get("labels", False)
    )
    replies = cases.replies_for(
        cases.synth_rows() if run["dataset"] == "synth" else cases.dnd_rows(),
        dnd=run["dataset"] == "real",
    )
    by_id = {str(r["id"]): r for r in cases.synth_rows() + cases.dnd_rows()}
    preds = [
        Prediction(
            s.sample_id,
            replies[
                cases.reply_key(
                    by_id[str(s.metadata["id"])]["context_window_text"], s.question.text
                )
            ],
        )
        for s in samples
    ]
    batched = run["flags"].get("batch_by_context_window", False)
    from longctx.experiments.benchmarks import score

    got = score("oolong", preds, samples=samples, batch_by_context_window=batched)
    official = got["variants"][run["dataset"]]["official"]
    line = official["line"].replace("MODEL", FIXTURE["model"])
    if run["dataset"] == "real" and batched:  # the sum's order follows the hash seed's set order
        assert official["overall"] == pytest.approx(float(run["overall"].rsplit(" ", 1)[1]))
    else:
        assert line == run["overall"]


def test_three_lengths_and_every_task_group_are_covered(data: Path) -> None:
    samples = load_benchmark("oolong", data, datasets=["synth"])
    assert {s.metadata["context_len"] for s in samples} == set(cases.CONTEXT_LENGTHS)
    assert {s.metadata["task_group"] for s in samples} == {"counting", "user", "timeline"}
    windows = {s.metadata["context_window_id"]: s.corpus for s in samples}
    assert all(s.corpus is windows[s.metadata["context_window_id"]] for s in samples)


def test_length_bounds_filter_as_the_official_script(data: Path) -> None:
    kept = load_benchmark("oolong", data, datasets=["synth"], max_context_len=8192)
    assert {s.metadata["context_len"] for s in kept} == {2048, 8192}
    kept = load_benchmark("oolong", data, datasets=["synth"], min_context_len=2048)
    assert {s.metadata["context_len"] for s in kept} == {8192, 32768}


def test_our_prompt_is_the_cards_input(data: Path) -> None:
    sample = load_benchmark("oolong", data, datasets=["synth"])[0]
    assert o.prompt(sample) == sample.corpus[0].text + "\n" + sample.question.text
    assert sample.question.protocol is not None
    assert sample.question.protocol.system == "You are a helpful assistant."


def test_absent_data_says_how_to_get_it(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkDataError, match="oolongbench/oolong-synth.*hub=True"):
        load_benchmark("oolong", tmp_path, datasets=["synth"])


def test_the_official_script_resumes_from_our_export_and_writes_our_overall() -> None:
    from longctx.experiments.metrics import oolong as m

    lines = cases.export_lines()
    assert lines[0]["attempted_parse"] == "ERROR" and lines[0]["score"] == 0  # the failed call
    official = FIXTURE["export_resume"]
    assert official["requests"] == 0  # every item already answered: nothing asked again
    assert m.official_summary("full_context", [x["score"] for x in lines]) == official["overall"]


def test_hub_needs_the_extra_and_says_so(tmp_path: Path) -> None:
    with pytest.raises(BenchmarkDataError, match="oolongbench/oolong-real"):
        load_benchmark("oolong", tmp_path, datasets=["real"], hub=True)
