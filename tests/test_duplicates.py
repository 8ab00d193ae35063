"""Exact duplicate documents (issue 46, item 15): a corpus the user builds from their own files or
strings drops a document whose text equals an earlier one's, with a warning naming both
(``duplicates="keep"`` keeps them); a benchmark's corpus (``Corpus(...)``, ``from_documents``) is
never changed; ``Workspace.add`` skips an exact copy under a new name, as the README says."""

from __future__ import annotations

import logging

import pytest

from longctx import Workspace
from longctx.agents.corpus_merge import merged
from longctx.retrieval import Corpus
from longctx.retrieval.contract.document import Document
from tests.scripted import ScriptedChatModel

REPORT = "Kestrel Aviation is based in Tampere. Its chief executive is Aino Virtanen."
OTHERS = [
    f"Report {i}: the {w} cooperative sold {i * 13} tonnes of grain in Tampere."
    for i, w in enumerate(["north", "south", "east", "west", "river", "hill"])
]


@pytest.fixture
def folder(tmp_path):
    """``a.txt`` and its two exact copies ``b.txt``, ``sub/c.txt``, then six other reports."""
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(REPORT, encoding="utf-8")
    for i, text in enumerate(OTHERS):
        (tmp_path / f"r{i}.md").write_text(text, encoding="utf-8")
    return tmp_path


def test_from_path_drops_exact_copies_with_a_warning_naming_them(folder, caplog):
    with caplog.at_level(logging.WARNING, logger="longctx.retrieval.duplicates"):
        corpus = Corpus.from_path(folder)
    assert [d.doc_id for d in corpus].count("a.txt") == 1 and len(corpus) == 1 + len(OTHERS)
    assert [d.text for d in corpus].count(REPORT) == 1
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "2 exact duplicate" in warning and "'b.txt' (= 'a.txt')" in warning
    assert "'sub/c.txt' (= 'a.txt')" in warning and "duplicates='keep'" in warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="longctx.retrieval.duplicates"):
        kept = Corpus.from_path(folder, duplicates="keep")
    assert len(kept) == 3 + len(OTHERS) and not caplog.records


def test_rag_spends_no_slot_on_a_copy(folder, tmp_path_factory):
    """Top 7 of BM25 over the folder: every retrieved text is a different one (three slots went to
    one report and its copies)."""
    retriever = Corpus.from_path(folder).as_retriever(
        k=7, cache_dir=tmp_path_factory.mktemp("cache")
    )
    texts = [d.page_content for d in retriever.invoke("Where is Kestrel Aviation based?")]
    assert len(texts) == 7 and len(set(texts)) == 7 and texts[0] == REPORT


def test_from_texts_and_rescan_drop_copies_and_benchmark_corpora_keep_them(folder):
    texts = ["one", "two", "one", "  ", "  "]
    assert [d.doc_id for d in Corpus.from_texts(texts)] == ["0", "1", "3", "4"]  # blanks left alone
    assert len(Corpus.from_texts(texts, duplicates="keep")) == 5
    with pytest.raises(ValueError, match="duplicates must be 'drop' or 'keep'"):
        Corpus.from_texts(texts, duplicates="skip")
    docs = [Document("q1", "same"), Document("q2", "same")]  # a benchmark's official input
    assert len(Corpus(docs)) == len(Corpus.from_documents(docs)) == 2
    corpus = Corpus.from_path(folder)
    (folder / "d.txt").write_text(REPORT, encoding="utf-8")  # one more copy: nothing new
    assert corpus.rescan(folder) is corpus


def test_workspace_add_skips_an_exact_copy_under_a_new_name(folder, tmp_path_factory, caplog):
    llm = ScriptedChatModel(reply_fn=lambda prompt: "Tampere")
    ws = Workspace(folder, llm=llm, cache_dir=tmp_path_factory.mktemp("cache"))
    assert len(ws.corpus) == 1 + len(OTHERS)
    copy = tmp_path_factory.mktemp("new") / "kestrel-copy.txt"
    copy.write_text(REPORT, encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="longctx.retrieval.duplicates"):
        assert ws.add(copy) == []
        assert ws.add(Document("memo", REPORT, title="Memo")) == []
    assert len(ws.corpus) == 1 + len(OTHERS)
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2 and "Workspace.add: 1 exact duplicate" in warned[0]
    assert "'kestrel-copy.txt' (= 'a.txt')" in warned[0] and "'memo' (= 'a.txt')" in warned[1]
    kept = Workspace(folder, llm=llm, cache_dir=ws.cache_dir, duplicates="keep")
    assert len(kept.corpus) == 3 + len(OTHERS) and kept.add(copy) == ["kestrel-copy.txt"]


def test_merged_skips_a_copy_within_the_batch_too():
    docs, changed = merged([Document("a", "A")], [Document("b", "B"), Document("c", "B")])
    assert [d.doc_id for d in docs] == ["a", "b"] and changed == ["b"]
    docs, changed = merged([Document("a", "A")], [Document("c", "A")], "keep")
    assert changed == ["c"]


def test_the_cli_index_drops_copies_unless_told_to_keep_them(folder, tmp_path_factory, capsys):
    from longctx.experiments.cli.app import main

    cache = tmp_path_factory.mktemp("cache")
    for flags, documents in (([], 1 + len(OTHERS)), (["--keep-duplicates"], 3 + len(OTHERS))):
        assert main(["index", str(folder), "--cache-dir", str(cache), *flags]) == 0
        assert capsys.readouterr().out.startswith(f"{documents} documents")
