"""Data files never make a loader read outside its data root (crafted Loong fixtures)."""

import json
import shutil
from pathlib import Path

import pytest

from experiments.benchmarks import load_benchmark
from experiments.benchmarks.base import BenchmarkDataError, resolve_inside

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks" / "loong"


def crafted(tmp_path: Path, item: dict) -> Path:
    root = tmp_path / "loong"
    shutil.copytree(FIXTURES, root)
    base = {"id": "evil", "level": 1, "set": 1, "question": "q?", "instruction": "i", "prompt_template": "{docs}\n{question}", "answer": "x"}
    (root / "loong.jsonl").write_text(json.dumps({**base, **item}) + "\n")
    return root


@pytest.mark.parametrize(
    "item",
    [
        {"type": "paper", "doc": ["/etc/hostname"]},
        {"type": "paper", "doc": ["../../../../../../../../etc/hostname"]},
        {"type": "paper", "doc": ["../outside.txt"]},
        {"type": "financial", "doc": ["/../../outside"]},
        {"type": "financial", "doc": ["../../outside"]},
    ],
)
def test_loong_rejects_document_paths_outside_its_data_root(tmp_path, item):
    root = crafted(tmp_path, item)
    (root / "doc" / "outside.txt").write_text("secret outside paper")  # doc/outside.txt: outside doc/paper
    (root.parent / "2024-outside-j.txt").write_text("secret outside report")
    (root.parent / "outside-j.txt").write_text("secret outside report")
    with pytest.raises(BenchmarkDataError) as info:
        load_benchmark("loong", root)
    assert repr(item["doc"][0]) in str(info.value) and "outside the data root" in str(info.value)


def test_loong_still_loads_documents_inside_its_root(tmp_path):
    root = crafted(tmp_path, {"type": "paper", "doc": ["p1.txt"]})
    (sample,) = load_benchmark("loong", root)
    assert sample.corpus.documents[0].text == (root / "doc" / "paper" / "p1.txt").read_text(encoding="utf-8")


def test_resolve_inside_rejects_symlink_escapes(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (tmp_path / "root" / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert resolve_inside(tmp_path / "root", "a/../b.txt", what="T") == (tmp_path / "root" / "b.txt").resolve()
    with pytest.raises(BenchmarkDataError, match="link.txt"):
        resolve_inside(tmp_path / "root", "link.txt", what="T")
