"""Same-size corruption of a cached index (flipped, zeroed or edited bytes) is caught by the
checksums recorded while it was written: the index is named, set aside and rebuilt, and the
answer after it is right."""

import json
import logging
import re
from pathlib import Path

import faiss
import numpy as np
import pytest

from longctx import answer, answer_many
from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval.bm25 import BM25Retriever
from longctx.retrieval.checksums import (
    ALGORITHM,
    ChecksumMismatch,
    Checksums,
    digest_file,
    verify_folder,
)
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.faiss_index import VectorIndex
from tests.scripted import ScriptedChatModel
from tests.test_index_cache import CountingEmbedder, fresh_process
from tests.test_index_trust import damage_chunks_missing_lines, dense

QUESTION = "What is the museum vault code?"


def corpus_with_needle() -> Corpus:
    texts = [f"Document number {i} talks about topic {i % 7} and the harbour." for i in range(40)]
    texts[23] = "The museum vault code is 7421, said the curator."
    return Corpus.from_texts(texts)


def reader(prompt: str) -> str:
    """A reader that answers with the vault code it finds in the evidence it is given."""
    found = re.search(r"vault code is (\d+)", prompt)
    return found.group(1) if found else "unknown"


_EMBEDDER: list[CountingEmbedder] = []


def shared_embedder() -> CountingEmbedder:
    """One MiniLM embedder for the module (loading one per call would take seconds)."""
    if not _EMBEDDER:
        _EMBEDDER.append(CountingEmbedder())
    return _EMBEDDER[0]


def ask(retriever: str):
    """Answer the question through rag: BM25 as a user would call it; dense on an index built
    with one shared MiniLM embedder (loading it for every call would take seconds)."""
    llm = ScriptedChatModel(reply_fn=reader)
    if retriever == "bm25":
        return answer(
            corpus_with_needle(), QUESTION, llm=llm, retriever=retriever, chunk_size=16, top_k=1
        )
    index = build_index(
        corpus_with_needle(),
        DenseRetriever(shared_embedder()),
        chunking=ChunkingConfig(unit="words", size=16),
    )
    return answer_many(
        corpus_with_needle(),
        [QUESTION],
        strategy="rag",
        llm=llm,
        index=index,
        chunk_size=16,
        top_k=1,
    )[0]


def the_index(cache: Path) -> Path:
    (meta,) = (cache / "indexes").glob("*/meta.json")
    return meta.parent


def payload(path: Path) -> tuple[bytearray, int]:
    """A .npy file's bytes and where its array data starts (format 1.0 and 2.0/3.0 headers)."""
    data = bytearray(path.read_bytes())
    major = data[6]
    start = (
        10 + int.from_bytes(data[8:10], "little")
        if major == 1
        else 12 + int.from_bytes(data[8:12], "little")
    )
    return data, start


def flip_npy(name: str):
    def damage(folder: Path) -> None:
        data, start = payload(folder / "bm25s" / name)
        data[start:] = bytes(b ^ 0xFF for b in data[start:])
        (folder / "bm25s" / name).write_bytes(bytes(data))

    damage.__name__ = f"flipped_bytes_in_{name.split('.')[0]}"
    return damage


def zeroed_scores(folder: Path) -> None:
    data, start = payload(folder / "bm25s" / "data.csc.index.npy")
    data[start:] = bytes(len(data) - start)
    (folder / "bm25s" / "data.csc.index.npy").write_bytes(bytes(data))


def edited_vocabulary(folder: Path) -> None:
    """Every two-digit token id becomes 99: bm25s then fails each query on a "maximum token ID"."""
    path = folder / "bm25s" / "vocab.index.json"
    path.write_text(re.sub(r'(":\s*)\d\d([,}])', r"\g<1>99\2", path.read_text()))


def edited_chunk_text(folder: Path) -> None:
    path = folder / "chunks.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace("7421", "1111"), encoding="utf-8")


def garbled_vectors(folder: Path) -> None:
    path = folder / VectorIndex.FILENAME
    data = bytearray(path.read_bytes())
    tail = len(data) // 4  # the header is a few dozen bytes; the float vectors follow
    data[tail:] = (
        np.random.default_rng(0).integers(0, 256, len(data) - tail, dtype=np.uint8).tobytes()
    )
    path.write_bytes(bytes(data))


def edited_tokens(folder: Path) -> None:
    path = folder / "bm25_tokens.json"
    path.write_text(
        path.read_text(encoding="utf-8").replace('"vault"', '"vaulx"'), encoding="utf-8"
    )


CASES = [
    ("bm25", flip_npy("data.csc.index.npy"), "bm25s/data.csc.index.npy"),
    ("bm25", flip_npy("indices.csc.index.npy"), "bm25s/indices.csc.index.npy"),
    ("bm25", zeroed_scores, "bm25s/data.csc.index.npy"),
    ("bm25", edited_vocabulary, "bm25s/vocab.index.json"),
    ("bm25", edited_chunk_text, "chunks.jsonl"),
    ("dense", garbled_vectors, "vectors.faiss"),
    ("dense", edited_chunk_text, "chunks.jsonl"),
]


@pytest.mark.parametrize(
    ("retriever", "damage", "file"), CASES, ids=[f"{r}-{d.__name__}" for r, d, _ in CASES]
)
def test_a_same_size_corruption_is_named_set_aside_and_rebuilt(
    retriever, damage, file, isolated_cache, caplog
):
    first = ask(retriever)
    assert first.answer == "7421"
    folder = the_index(isolated_cache)
    size = {p: p.stat().st_size for p in folder.rglob("*") if p.is_file()}
    damage(folder)
    assert {
        p: p.stat().st_size for p in folder.rglob("*") if p.is_file()
    } == size  # same size: no truncation
    fresh_process()
    caplog.set_level(logging.WARNING, logger="longctx.retrieval.index")
    after = ask(retriever)
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "longctx.retrieval.index"
    ]
    assert any(str(folder) in w and file in w and "checksum" in w for w in warnings), warnings
    assert after.answer == "7421" and "7421" in after.evidence[0].text
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted(
        [folder.name, folder.name + ".lock"]
    )  # set aside, gone
    caplog.clear()
    fresh_process()
    assert ask(retriever).answer == "7421"
    assert not [
        r
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name == "longctx.retrieval.index"
    ]  # rebuilt sound


def test_rank_bm25_tokens_are_checked_too(caplog):
    corpus = corpus_with_needle()
    chunking = ChunkingConfig(size=16)
    first = build_index(corpus, "bm25", engine="rank_bm25", chunking=chunking)
    edited_tokens(first.path)
    fresh_process()
    rebuilt = build_index(corpus, "bm25", engine="rank_bm25", chunking=chunking)
    assert any(
        "bm25_tokens.json" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )
    assert rebuilt.search("vault code", 1)[0].chunk.doc_index == 23


def without_checksums(folder: Path) -> None:
    """The index as written before checksums existed: no ``files`` in its meta."""
    meta = json.loads((folder / "meta.json").read_text())
    del meta["files"]
    (folder / "meta.json").write_text(json.dumps(meta))


def test_an_index_written_before_checksums_gets_them_without_a_rebuild(caplog):
    caplog.set_level(logging.INFO, logger="longctx.retrieval.index")
    corpus = corpus_with_needle()
    chunking = ChunkingConfig(size=16)
    embedder = shared_embedder()
    first = build_index(corpus, dense(embedder), chunking=chunking)
    recorded = json.loads((first.path / "meta.json").read_text())["files"]
    without_checksums(first.path)
    fresh_process()
    before = embedder.embedded
    loaded = build_index(corpus, dense(embedder), chunking=chunking)
    assert embedder.embedded == before and loaded.path == first.path  # loaded, not re-embedded
    assert json.loads((first.path / "meta.json").read_text())["files"] == recorded
    assert any("Recorded the checksums" in r.getMessage() for r in caplog.records)
    assert sorted(p.name for p in first.path.iterdir()) == [
        "chunks.jsonl",
        "documents.json",
        "meta.json",
        "vectors.faiss",
    ]
    garbled_vectors(first.path)  # and from now on it is verified
    fresh_process()
    rebuilt = build_index(corpus, dense(embedder), chunking=chunking)
    assert embedder.embedded == before + len(rebuilt)  # rebuilt in full
    assert any(
        "vectors.faiss fails" in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
    )


def test_an_index_written_before_checksums_is_still_checked_otherwise(caplog):
    corpus = corpus_with_needle()
    first = build_index(corpus, "bm25", chunking=ChunkingConfig(size=16))
    without_checksums(first.path)
    damage_chunks_missing_lines(first.path)
    fresh_process()
    rebuilt = build_index(corpus, "bm25", chunking=ChunkingConfig(size=16))
    assert any(
        "chunks.jsonl holds" in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
    )
    assert rebuilt.search("vault code", 1)[0].chunk.doc_index == 23
    assert "files" in json.loads((rebuilt.path / "meta.json").read_text())


def test_a_meta_with_a_malformed_checksum_list_is_not_taken_for_an_old_index(caplog):
    corpus = corpus_with_needle()
    first = build_index(corpus, "bm25", chunking=ChunkingConfig(size=16))
    meta = json.loads((first.path / "meta.json").read_text())
    meta["files"] = {}
    (first.path / "meta.json").write_text(json.dumps(meta))
    fresh_process()
    build_index(corpus, "bm25", chunking=ChunkingConfig(size=16))
    assert any(
        "no file checksums" in r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING
    )


class PlainSaveBM25(BM25Retriever):
    """A retriever whose ``save`` knows nothing of checksums (as a third-party one): its files are
    hashed after writing."""

    def save(self, folder: Path) -> None:
        super().save(folder)


def test_files_of_a_retriever_without_checksum_support_are_hashed_after_writing(caplog):
    corpus = corpus_with_needle()
    first = build_index(corpus, PlainSaveBM25(engine="rank_bm25"), chunking=ChunkingConfig(size=16))
    recorded = json.loads((first.path / "meta.json").read_text())["files"]
    assert sorted(recorded) == ["bm25_tokens.json", "chunks.jsonl", "documents.json"]
    edited_tokens(first.path)
    fresh_process()
    rebuilt = build_index(
        corpus, PlainSaveBM25(engine="rank_bm25"), chunking=ChunkingConfig(size=16)
    )
    assert any(
        "bm25_tokens.json" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )
    assert rebuilt.search("vault code", 1)[0].chunk.doc_index == 23


# ---- the checksums themselves ----


def write_binary(f):
    f.write(b"\x00\x01" * 100_000)
    f.write(memoryview(np.arange(1000, dtype=np.float32)))


def write_text(f):
    f.writelines(
        json.dumps({"t": "été 東京\u2028"}, ensure_ascii=False) + "\n" for _ in range(10_000)
    )


def write_npy(f):
    np.save(f, np.arange(300_000, dtype=np.int32), allow_pickle=False)


def write_faiss(f):
    index = faiss.IndexFlatIP(8)
    index.add(np.random.default_rng(0).random((5000, 8), dtype=np.float32))
    writer = faiss.PyCallbackIOWriter(f.write)
    faiss.write_index(index, writer)
    del writer


@pytest.mark.parametrize(
    ("write", "text"),
    [(write_binary, False), (write_text, True), (write_npy, False), (write_faiss, False)],
)
def test_the_digest_taken_while_writing_is_the_digest_of_the_file(write, text, tmp_path):
    checksums = Checksums(tmp_path)
    with checksums.open(tmp_path / "f", text=text) as f:
        write(f)
    assert checksums.as_dict() == {
        "f": dict(zip(("bytes", ALGORITHM), digest_file(tmp_path / "f")))
    }
    verify_folder(tmp_path, checksums.as_dict())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.write_bytes(b"X" + p.read_bytes()[1:]), "fails its xxh3_128 checksum"),
        (lambda p: p.write_bytes(p.read_bytes()[:-1]), "holds 9 bytes, meta.json records 10"),
        (lambda p: p.unlink(), "f is missing"),
    ],
)
def test_verification_names_the_file_and_what_is_wrong(change, message, tmp_path):
    checksums = Checksums(tmp_path)
    with checksums.open(tmp_path / "f") as f:
        f.write(b"0123456789")
    change(tmp_path / "f")
    with pytest.raises(ChecksumMismatch, match=message):
        verify_folder(tmp_path, checksums.as_dict())


@pytest.mark.parametrize(
    "recorded", [None, {}, {"../f": {"bytes": 1, ALGORITHM: "0"}}, {"f": {"bytes": 1}}]
)
def test_missing_or_malformed_records_fail_verification(recorded, tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(ChecksumMismatch):
        verify_folder(tmp_path, recorded)
