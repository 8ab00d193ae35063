"""OOLONG's LLM-free ceiling: every record of a window is evidence for each of its questions (the
labels are not in the text), so a strategy's ceiling is whether it can see every record; tables
per task group x length."""

from __future__ import annotations

from pathlib import Path

import pytest

from longctx.experiments import oolong_gen as g
from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.benchmarks.oolong import record_spans
from longctx.experiments.ceilings.measure import compute_ceilings


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list:
    root = tmp_path_factory.mktemp("oolong")
    g.write(g.generate(["8K", "32K"], seed=5), root)
    return load_benchmark("oolong", root, datasets=["synth"])


def test_every_record_line_is_a_span_and_nothing_else(samples: list) -> None:
    for sample in samples:
        text = sample.corpus[0].text
        spans = sample.metadata["evidence_spans"]
        lines = [text[a:b] for _, a, b in spans]
        assert lines == text.split("\n")[1:]  # the header is not a record
        assert all(line.startswith("Date: ") and "|| User: " in line for line in lines)


def test_a_dnd_transcripts_utterances_are_its_records() -> None:
    text = "Return the final answer in \\boxed{}.\n\n[START OF EPISODE]\nMATT: Roll.\n\nSAM: 20!\n"
    spans = record_spans("d", text, "real")
    assert [text[a:b] for _, a, b in spans] == ["MATT: Roll.", "SAM: 20!"]


#: Speaker names as a CRD3 turn's NAMES may hold them: one, several words, a comma, brackets.
CRD3_NAMES = ("MATT", "ALL", "LIAM AND SAM", "LAURA, TRAVIS", "TALIESIN (AS CADUCEUS)", "O'BRIEN")


def test_every_line_the_official_transcript_script_writes_is_a_record() -> None:
    """abertsch72/oolong @ adbf1cb src/data_gen/prepare_cr_transcripts.py writes one line per name
    of each turn: the name through str.capitalize(), ': ', the turn's utterances joined by spaces
    (possibly none); each is a record, a marker line is not."""
    lines = [f"{n.capitalize()}: {' '.join(u)}" for n in CRD3_NAMES for u in (["Roll.", "ok"], [])]
    text = "[START OF EPISODE]\n" + "\n".join(lines) + "\n[END OF EPISODE]\n"
    spans = record_spans("d", text, "real")
    assert [text[a:b] for _, a, b in spans] == lines


def test_ceilings_by_task_group_and_length(samples: list, tmp_path: Path) -> None:
    ceilings = {
        c.strategy: c
        for c in compute_ceilings(
            samples, ["full_context", "rag", "structured"], {}, cache_dir=tmp_path
        )
    }
    full = ceilings["full_context"].by_task_length
    assert set(full) == {"counting", "user", "timeline"}
    assert all(row == {"8K": 1.0, "32K": 1.0} for row in full.values())  # both fit 128K
    assert ceilings["rag"].complete_share == 0.0  # 7 chunks of 200 words: a few records
    assert 0 < ceilings["rag"].mean_share < 0.5
    assert ceilings["structured"].complete_share == 1.0
