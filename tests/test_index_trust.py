"""Index cache you can trust: one builder per key (threads and processes), corrupt
indexes rebuilt."""

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval import index as index_module
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.paths import default_cache_dir
from tests.conftest import filler_document
from tests.test_index_cache import CountingEmbedder, fresh_process

ROOT = Path(__file__).resolve().parent.parent


def built_messages(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "longctx.retrieval.index" and r.getMessage().startswith("Built ")
    ]


def test_threads_building_one_key_share_a_single_build(caplog):
    caplog.set_level(logging.INFO, logger="longctx.retrieval.index")
    corpus = Corpus.from_texts(
        [filler_document(i, 40) for i in range(8)] + ["The vault code is 7421."],
        duplicates="keep",  # fillers 6 and 7 repeat 0 and 1
    )
    barrier = threading.Barrier(6)
    results, errors = [None] * 6, []

    def worker(n):
        try:
            barrier.wait()
            results[n] = build_index(corpus, "bm25", chunking=ChunkingConfig(size=64))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(r is results[0] for r in results)  # one index object for all
    assert len(built_messages(caplog)) == 1  # built once; the others waited and reused it
    assert results[0].search("vault code", 1)[0].chunk.doc_index == 8
    leftovers = [
        p.name
        for p in results[0].path.parent.iterdir()
        if p.name != results[0].key and not p.name.endswith(".lock")
    ]
    assert leftovers == []


def test_concurrent_index_commands_build_once(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(30):
        (docs / f"doc{i:02d}.txt").write_text(filler_document(i, 60) + f" Report {i} closes here.")
    env = {**os.environ, "LONGCTX_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "longctx.experiments.cli",
        "-v",
        "index",
        str(docs),
        "--retriever",
        "bm25",
    ]
    procs = [
        subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-2000:] for _, err in outs]
    builds = sum(err.count("INFO longctx.retrieval.index: Built ") for _, err in outs)
    assert builds == 1
    paths = {out.strip().rsplit(" at ", 1)[-1] for out, _ in outs}
    assert len(paths) == 1
    index_dir = Path(paths.pop())
    assert sorted(p.name for p in index_dir.parent.iterdir()) == sorted(
        [index_dir.name, index_dir.name + ".lock"]
    )


# ---- corruption: every damaged index is named in a warning, moved aside and rebuilt ----


def corpus_with_needle() -> Corpus:
    texts = [f"Document number {i} talks about topic {i % 7} and the harbour." for i in range(40)]
    texts[23] = "The museum vault code is 7421, said the curator."
    return Corpus.from_texts(texts)


def dense(embedder=None):
    return DenseRetriever(embedder or CountingEmbedder(), shard_size=10)


def damage_chunks_missing_lines(folder: Path) -> None:
    lines = (folder / "chunks.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "chunks.jsonl").write_text("".join(lines[:-3]), encoding="utf-8")


def damage_faiss_truncated(folder: Path) -> None:
    data = (folder / "vectors.faiss").read_bytes()
    (folder / "vectors.faiss").write_bytes(data[: len(data) // 2])


def damage_faiss_deleted(folder: Path) -> None:
    (folder / "vectors.faiss").unlink()


@pytest.mark.parametrize(
    "damage", [damage_chunks_missing_lines, damage_faiss_truncated, damage_faiss_deleted]
)
def test_a_damaged_dense_index_is_named_moved_aside_and_rebuilt(damage, caplog):
    chunking = ChunkingConfig(size=16)
    corpus = corpus_with_needle()
    first = build_index(corpus, dense(), chunking=chunking)
    damage(first.path)
    fresh_process()
    caplog.set_level(logging.INFO, logger="longctx.retrieval.index")
    embedder = CountingEmbedder()
    rebuilt = build_index(corpus, dense(embedder), chunking=chunking)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(first.path) in w for w in warnings), warnings
    assert embedder.embedded == len(rebuilt) == len(first)  # rebuilt in full
    assert rebuilt.search("vault code", 1)[0].chunk.doc_index == 23
    fresh_process()
    again = build_index(corpus, dense(CountingEmbedder()), chunking=chunking)
    assert again.retriever.embedder.embedded == 0 and len(again) == len(
        first
    )  # the rebuilt one is sound


def test_missing_chunk_lines_in_a_bm25_index_rebuild(caplog):
    corpus = corpus_with_needle()
    first = build_index(corpus, "bm25", chunking=ChunkingConfig(size=16))
    damage_chunks_missing_lines(first.path)
    fresh_process()
    rebuilt = build_index(corpus, "bm25", chunking=ChunkingConfig(size=16))
    assert len(rebuilt) == len(first) and rebuilt.search("vault code", 1)[0].chunk.doc_index == 23
    assert any(
        str(first.path) in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )


@pytest.mark.parametrize("garbage", [b"not a numpy file", None])
def test_a_corrupt_shard_of_an_interrupted_build_is_re_embedded(garbage, caplog):
    chunking = ChunkingConfig(size=16)
    corpus = corpus_with_needle()
    with pytest.raises(KeyboardInterrupt):
        build_index(corpus, dense(CountingEmbedder(fail_after=30)), chunking=chunking)
    folder = index_module.index_folder(
        default_cache_dir(), index_module.index_key(corpus, chunking, dense())
    )
    shard = index_module.shards_folder(folder) / "000001.npy"
    assert shard.exists()
    if garbage is None:  # truncated mid-array
        garbage = shard.read_bytes()[:200]
    shard.write_bytes(garbage)
    fresh_process()
    embedder = CountingEmbedder()
    resumed = build_index(corpus, dense(embedder), chunking=chunking)
    assert embedder.embedded == len(resumed) - 20  # shards 0 and 2 reused, the corrupt one redone
    assert any(
        "000001.npy" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )
    reference = build_index(corpus, dense(), chunking=chunking, use_cache=False)
    q = "vault code"
    np.testing.assert_allclose(
        [h.score for h in resumed.search(q, 5)],
        [h.score for h in reference.search(q, 5)],
        rtol=1e-5,
    )
