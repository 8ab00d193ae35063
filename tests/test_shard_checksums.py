"""Embedding shards of an interrupted dense build carry their checksum and source: a resumed
build re-embeds a shard whose bytes changed, one computed from other texts or by another
embedder, and one written before shards had records, and its index equals an uninterrupted
build's."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval import index as index_module
from longctx.retrieval.chunking import chunk_corpus
from longctx.retrieval.dense import (
    DenseRetriever,
    read_shard,
    shard_path,
    shard_record_path,
    shard_source,
    write_shard,
)
from tests.test_index_cache import CountingEmbedder, fresh_process

CHUNKING = ChunkingConfig(size=16)
_EMBEDDER: list[CountingEmbedder] = []


def embedder(fail_after: int | None = None) -> CountingEmbedder:
    """One real MiniLM embedder for the module (loading one per build takes seconds),
    counter reset."""
    if not _EMBEDDER:
        _EMBEDDER.append(CountingEmbedder())
    e = _EMBEDDER[0]
    e.embedded, e.fail_after = 0, fail_after
    return e


def corpus() -> Corpus:
    texts = [f"Document number {i} talks about topic {i % 7} and the harbour." for i in range(40)]
    texts[13] = "The museum vault code is 7421, said the curator."
    return Corpus.from_texts(texts)


def all_vectors(index) -> np.ndarray:
    return index.retriever._index.vectors(0, len(index))


def interrupted_build_shards() -> Path:
    """Build with shards of 10 chunks, killed after three shards; the folder of those shards."""
    with pytest.raises(KeyboardInterrupt):
        build_index(
            corpus(), DenseRetriever(embedder(fail_after=30), shard_size=10), chunking=CHUNKING
        )
    retriever = DenseRetriever(embedder(), shard_size=10)
    folder = index_module.index_folder(None, index_module.index_key(corpus(), CHUNKING, retriever))
    shards = index_module.shards_folder(folder)
    assert sorted(p.name for p in shards.glob("*.npy")) == [
        "000000.npy",
        "000001.npy",
        "000002.npy",
    ]
    return shards


def flip_sign_of_one_float(path: Path) -> None:
    """Flip one byte inside the float data (the sign of one value): same size, still a finite
    float matrix."""
    before = np.load(path)
    data = bytearray(path.read_bytes())
    offset = (
        len(data) - before.nbytes + 4 * 5 + 3
    )  # the most significant byte of float 5 (little-endian)
    data[offset] ^= 0x80
    path.write_bytes(bytes(data))
    after = np.load(path)
    assert after.shape == before.shape and after.dtype == before.dtype and np.isfinite(after).all()
    assert after.flat[5] == -before.flat[5] != 0


def write_as_earlier_version(path: Path) -> None:
    """The shard as the previous version left it: the same vectors, no record beside it."""
    shard_record_path(path).unlink()
    np.save(path, np.load(path), allow_pickle=False)


@pytest.mark.parametrize("damage", [flip_sign_of_one_float, write_as_earlier_version])
def test_a_resumed_build_re_embeds_a_shard_without_a_sound_checksum(damage, caplog):
    shards = interrupted_build_shards()
    damage(shards / "000001.npy")
    fresh_process()
    caplog.set_level(logging.WARNING, logger="longctx.retrieval.dense")
    resumed_embedder = embedder()
    resumed = build_index(
        corpus(), DenseRetriever(resumed_embedder, shard_size=10), chunking=CHUNKING
    )
    assert (
        resumed_embedder.embedded == len(resumed) - 20
    )  # shards 0 and 2 reused, shard 1 re-embedded
    assert [r.getMessage() for r in caplog.records if "000001.npy" in r.getMessage()], caplog.text
    reference = build_index(
        corpus(), DenseRetriever(embedder(), shard_size=10), chunking=CHUNKING, use_cache=False
    )
    assert [c.text for c in resumed.chunks] == [c.text for c in reference.chunks]
    np.testing.assert_allclose(all_vectors(resumed), all_vectors(reference), rtol=1e-5, atol=1e-6)
    assert resumed.search("vault code", 1)[0].chunk.doc_index == 13


def test_a_shard_of_another_shard_size_with_as_many_rows_is_not_reused(tmp_path, caplog):
    """25 chunks in shards of 20 leave shard 1 with chunks 20-24; in shards of 5, shard 1 is
    chunks 5-9."""
    chunks = chunk_corpus(corpus(), CHUNKING)[:25]
    DenseRetriever(embedder(), shard_size=20).build(chunks, work_dir=tmp_path)
    assert np.load(shard_path(tmp_path / "shards", 1)).shape[0] == 5
    resumed_embedder = embedder()
    resumed = DenseRetriever(resumed_embedder, shard_size=5)
    resumed.build(chunks, work_dir=tmp_path)
    assert resumed_embedder.embedded == 25
    assert "other texts or another embedder" in caplog.text
    reference = DenseRetriever(embedder(), shard_size=5)
    reference.build(chunks, work_dir=tmp_path / "fresh")
    np.testing.assert_allclose(
        resumed._index.vectors(0, 25), reference._index.vectors(0, 25), rtol=1e-5, atol=1e-6
    )


def test_shard_records_name_what_is_wrong(tmp_path, caplog):
    path = shard_path(tmp_path, 0)
    vectors = np.random.default_rng(0).random((3, 4), dtype=np.float32)
    source = shard_source(["a", "b", "c"], {"retriever": "dense", "model": "m"})
    write_shard(path, vectors, source)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "000000.json",
        "000000.npy",
    ]  # no temporary file left
    assert json.loads(shard_record_path(path).read_text())["source"] == source
    np.testing.assert_array_equal(read_shard(path, source), vectors)
    for other in (
        shard_source(["a", "b", "x"], {"retriever": "dense", "model": "m"}),  # other texts, as many
        shard_source(["a", "b", "c"], {"retriever": "dense", "model": "other"}),  # another embedder
    ):
        assert read_shard(path, other) is None
        assert not path.exists() and not shard_record_path(path).exists()
        write_shard(path, vectors, source)
    path.write_bytes(path.read_bytes()[:-1])
    assert read_shard(path, source) is None
    assert "holds 175 bytes, 000000.json records 176" in caplog.text


def test_shards_written_from_vectors_embedded_elsewhere_are_resumed_from(tmp_path):
    """The Ray path: vectors embedded elsewhere become shards with records a local build reuses."""
    chunks = chunk_corpus(corpus(), CHUNKING)[:25]
    reference = DenseRetriever(embedder(), shard_size=10)
    reference.build(chunks, work_dir=tmp_path / "reference")
    DenseRetriever(embedder(), shard_size=10).write_shards(
        [c.text for c in chunks], reference._index.vectors(0, 25), work_dir=tmp_path
    )
    resumed_embedder = embedder()
    resumed = DenseRetriever(resumed_embedder, shard_size=10)
    resumed.build(chunks, work_dir=tmp_path)
    assert resumed_embedder.embedded == 0
    np.testing.assert_array_equal(resumed._index.vectors(0, 25), reference._index.vectors(0, 25))
