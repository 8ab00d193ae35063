"""Data files never make a loader read outside its data root (crafted Loong fixtures), and corpus
folders never follow a symlink out of themselves."""

import json
import shutil
from pathlib import Path

import pytest

from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.benchmarks.base import BenchmarkDataError, resolve_inside
from longctx.retrieval import Corpus

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks" / "loong"


def crafted(tmp_path: Path, item: dict) -> Path:
    root = tmp_path / "loong"
    shutil.copytree(FIXTURES, root)
    base = {
        "id": "evil",
        "level": 1,
        "set": 1,
        "question": "q?",
        "instruction": "i",
        "prompt_template": "{docs}\n{question}",
        "answer": "x",
    }
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
    (root / "doc" / "outside.txt").write_text(
        "secret outside paper"
    )  # doc/outside.txt: outside doc/paper
    (root.parent / "2024-outside-j.txt").write_text("secret outside report")
    (root.parent / "outside-j.txt").write_text("secret outside report")
    with pytest.raises(BenchmarkDataError) as info:
        load_benchmark("loong", root)
    assert repr(item["doc"][0]) in str(info.value) and "outside the data root" in str(info.value)


def test_loong_still_loads_documents_inside_its_root(tmp_path):
    root = crafted(tmp_path, {"type": "paper", "doc": ["p1.txt"]})
    (sample,) = load_benchmark("loong", root)
    assert sample.corpus.documents[0].text == (root / "doc" / "paper" / "p1.txt").read_text(
        encoding="utf-8"
    )


def test_resolve_inside_rejects_symlink_escapes(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (tmp_path / "root" / "link.txt").symlink_to(tmp_path / "secret.txt")
    assert (
        resolve_inside(tmp_path / "root", "a/../b.txt", what="T")
        == (tmp_path / "root" / "b.txt").resolve()
    )
    with pytest.raises(BenchmarkDataError, match="link.txt"):
        resolve_inside(tmp_path / "root", "link.txt", what="T")


def _folder_with_escapes(tmp_path):
    """A corpus folder holding one real file, a link to a file outside, a link to a folder outside
    and a link to its own file; the outside text must never be read."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text("OUTSIDE-SECRET-TEXT")
    (outside / "dir" / "more.txt").write_text("OUTSIDE-DIR-TEXT")
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "real.txt").write_text("inside text")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "leakdir").symlink_to(outside / "dir", target_is_directory=True)
    (root / "alias.txt").symlink_to(root / "real.txt")
    return root


def test_a_corpus_folder_skips_links_leading_outside_it_with_a_warning(tmp_path, caplog):
    root = _folder_with_escapes(tmp_path)
    with caplog.at_level("WARNING", logger="longctx.retrieval.readers"):
        corpus = Corpus.from_path(root, duplicates="keep")  # the alias is a copy of real.txt
    assert sorted(d.doc_id for d in corpus) == [
        "alias.txt",
        "real.txt",
    ]  # a link inside the folder is kept
    assert not any("OUTSIDE" in d.text for d in corpus)
    assert "leak.txt" in caplog.text and "outside the corpus folder" in caplog.text


def test_the_synth_benchmark_docs_folder_stays_inside_too(tmp_path):
    from longctx.experiments.synth.samples import DOCS_DIR, QUESTIONS_FILE, load_samples

    data = tmp_path / "synth"
    data.mkdir()
    docs = _folder_with_escapes(tmp_path)
    docs.rename(data / DOCS_DIR)
    record = {
        "id": "q1",
        "question": "?",
        "answer": "1",
        "answer_type": "number",
        "difficulty": "easy",
        "domain": "finance",
        "evidence_doc_ids": [],
    }
    (data / QUESTIONS_FILE).write_text(json.dumps(record) + "\n")
    (sample,) = load_samples(data)
    assert not any("OUTSIDE" in d.text for d in sample.corpus)
