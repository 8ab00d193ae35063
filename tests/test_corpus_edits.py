"""A corpus that changes: remove / update / rescan keep the cached index (tombstones) and rank
exactly as a rebuild."""

import json
import os
import random
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from langchain_openai import ChatOpenAI

from longctx import answer
from longctx.experiments.synth import SynthConfig, generate, load_samples
from longctx.retrieval import ChunkingConfig, Corpus, Document, build_index
from longctx.retrieval import bm25 as bm25_module
from longctx.retrieval.bm25 import BM25Retriever, tokenize
from longctx.retrieval.chunking import Chunk
from longctx.retrieval.contract import CorpusError
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.index import CompactionPolicy
from longctx.retrieval.term_counting import count_terms
from longctx.retrieval.term_counts import TermCounts, bm25_scores
from tests.conftest import filler_document
from tests.recording_server import RecordingServer, prompt_of
from tests.test_index_cache import CountingEmbedder
from tests.test_index_grow import CHUNKING, QUESTIONS, VOCABULARY, fresh_process, make_texts

TEXTS = make_texts(120)


def meta_of(index) -> dict:
    return json.loads((index.path / "meta.json").read_text())


def assert_same_as_a_rebuild(
    index, corpus: Corpus, questions, *, retriever="bm25", k: int = 10, **options
) -> None:
    """Chunks, and every question's top-k (chunks, scores) equal a fresh build's; BM25's scores of
    every chunk bit for bit."""
    fresh = build_index(corpus, retriever, chunking=index.chunking, use_cache=False, **options)
    assert index.chunks == fresh.chunks
    for question in questions:
        got, want = index.search(question, k), fresh.search(question, k)
        assert [(h.chunk, h.score, h.rank) for h in got] == [
            (h.chunk, h.score, h.rank) for h in want
        ], question
        if retriever == "bm25":
            np.testing.assert_array_equal(
                index.retriever.scores(question), fresh.retriever.scores(question)
            )


def edited(corpus: Corpus, share: float, seed: int) -> tuple[Corpus, list[str], list[str]]:
    """``corpus`` with ``share`` of its documents edited (a sentence appended: update) and as many
    others removed."""
    rng = random.Random(seed)
    n = max(1, round(share * len(corpus)))
    picked = rng.sample([d.doc_id for d in corpus], 2 * n)
    edit, gone = picked[:n], picked[n:]
    by_id = {d.doc_id: d for d in corpus}
    changed = [
        replace(
            by_id[i],
            text=by_id[i].text + "\nRestated: the figures above were revised after the audit.",
        )
        for i in edit
    ]
    return corpus.remove(*gone).update(*changed), edit, gone


# -- the corpus -------------------------------------------------------------------------------
def test_remove_and_update_return_new_corpora_in_delete_plus_add_order():
    corpus = Corpus.from_texts(["a text", "b text", "c text"])  # n=3
    removed = corpus.remove("1")
    assert [d.doc_id for d in removed] == ["0", "2"] and [d.doc_id for d in corpus] == [
        "0",
        "1",
        "2",
    ]
    updated = corpus.update(Document(doc_id="0", text="a text, edited", title="Document 1"))
    assert [(d.doc_id, d.text) for d in updated] == [
        ("1", "b text"),
        ("2", "c text"),
        ("0", "a text, edited"),
    ]  # moved to the end
    assert corpus.update(corpus[1]) is corpus  # unchanged: stays in place
    assert removed.add(["d text"])[-1].doc_id == "3"  # "2" is taken: plain strings get a free id
    assert [d.doc_id for d in corpus.remove("0", "2")] == ["1"]  # n=1 left
    with pytest.raises(CorpusError, match="empty"):
        Corpus.from_texts(["only"]).remove("0")
    with pytest.raises(CorpusError, match=r"no document with id \['9'\]"):
        corpus.remove("9")
    with pytest.raises(CorpusError, match="use add"):
        corpus.update(Document(doc_id="new", text="x"))
    with pytest.raises(CorpusError, match="Nothing to"):
        corpus.remove()


def test_rescan_notices_edited_and_deleted_files(tmp_path):
    for name in ("a", "b", "c", "d"):
        (tmp_path / f"{name}.txt").write_text(f"{name} text")
    old = Corpus.from_path(tmp_path)
    assert old.rescan(tmp_path) is old
    (tmp_path / "b.txt").write_text("b text, edited")
    (tmp_path / "c.txt").unlink()
    (tmp_path / "0.txt").write_text("a new file, sorted first")
    new = old.rescan(tmp_path)
    assert [d.doc_id for d in new] == ["a.txt", "d.txt", "0.txt", "b.txt"]
    assert [d.text for d in new][-1] == "b text, edited"
    policy = CompactionPolicy(max_deleted=0.5)  # 2 of 4 documents deleted: kept as tombstones here
    build_index(old, "bm25", chunking=CHUNKING, compaction=policy)
    fresh_process()
    index = build_index(new, "bm25", chunking=CHUNKING, compaction=policy)
    assert meta_of(index)["deleted_documents"] == [1, 2]  # b's old version and c: tombstones
    assert_same_as_a_rebuild(index, new, ["b text edited", "new file", "d text"])


# -- BM25: bit-identical to a rebuild ------------------------------------------------------------
def test_scores_over_live_chunks_are_bit_identical_to_bm25s_over_them_alone():
    texts = make_texts(200) + ["", "vault"]  # an empty chunk and a one-word chunk
    tokens = [tokenize(t) for t in texts]
    rng = random.Random(11)
    for dead in ([], [0], [201], [5, 6, 7, 100, 200], list(range(0, 202, 2))):
        live = np.asarray([i for i in range(202) if i not in set(dead)])
        reference = BM25Retriever()
        reference.build([Chunk(j, j, str(j), "", 0, texts[i], 0) for j, i in enumerate(live)])
        segments = [count_terms(tokens[:150]), count_terms(tokens[150:])]
        selected = TermCounts.concat(segments).select(live)
        fresh = count_terms([tokens[i] for i in live])
        assert sorted(selected.terms) == sorted(fresh.terms) and len(selected) == len(fresh)
        for _ in range(20):
            query = tokenize(" ".join(rng.choices(VOCABULARY, k=rng.randint(1, 6))))
            want = reference.scores(" ".join(query))
            np.testing.assert_array_equal(
                bm25_scores(segments, query, k1=1.5, b=0.75, live=live), want
            )
            np.testing.assert_array_equal(bm25_scores([selected], query, k1=1.5, b=0.75), want)


def test_an_edited_corpus_tokenizes_only_the_updated_documents_and_ranks_as_a_rebuild(monkeypatch):
    old = Corpus.from_texts(TEXTS)
    build_index(old, "bm25", chunking=CHUNKING)
    new = old.remove("3", "77").update(
        Document(
            doc_id="40",
            text="The curator moved the vault code to the museum archive.",
            title="Doc 41",
        )
    )
    fresh_process()
    tokenized: list[str] = []
    with monkeypatch.context() as patched:
        patched.setattr(
            bm25_module, "tokenize", lambda text: tokenized.append(text) or tokenize(text)
        )
        index = build_index(new, "bm25", chunking=CHUNKING)
    assert tokenized == [
        "The curator moved the vault code to the museum archive."
    ]  # nothing else was tokenized
    meta = meta_of(index)
    assert meta["deleted_documents"] == [3, 40, 77] and meta["num_documents"] == 118 == len(new)
    assert [s["path"] for s in meta["segments"]] == [".", "segments/001"] and meta["segments"][1][
        "documents"
    ] == [120, 121]
    assert_same_as_a_rebuild(index, new, QUESTIONS)  # in the process that derived it
    assert (
        index.search("vault code museum curator archive", 1)[0].chunk.doc_index == 117
    )  # the updated document, last
    fresh_process()
    assert_same_as_a_rebuild(
        build_index(new, "bm25", chunking=CHUNKING), new, QUESTIONS
    )  # loaded from disk
    fresh_process()
    again = new.remove("10").add(
        ["A new report on the comet and the telescope."]
    )  # edits of an edited corpus
    index = build_index(again, "bm25", chunking=CHUNKING)
    assert meta_of(index)["deleted_documents"] == [3, 10, 40, 77]
    assert_same_as_a_rebuild(index, again, QUESTIONS)


def test_a_removal_alone_writes_no_segment_and_shares_every_file():
    old = Corpus.from_texts(TEXTS[:30])
    base = build_index(old, "bm25", chunking=CHUNKING)
    fresh_process()
    index = build_index(
        old.remove("0"), "bm25", chunking=CHUNKING
    )  # the first document: every chunk id shifts
    assert [s["path"] for s in meta_of(index)["segments"]] == ["."]
    assert all(
        os.path.samefile(index.path / name, base.path / name) for name in meta_of(base)["files"]
    )  # hard links
    assert_same_as_a_rebuild(index, old.remove("0"), QUESTIONS)


@pytest.mark.parametrize("tokens", [128_000, pytest.param(1_000_000, marks=pytest.mark.slow)])
def test_after_one_percent_edits_and_deletions_every_synthetic_question_ranks_as_a_rebuild(
    tmp_path, tokens
):
    generate(SynthConfig(domain="finance", target_tokens=tokens, seed=0), tmp_path / "synth")
    samples = load_samples(tmp_path / "synth")
    corpus, questions = samples[0].corpus, [s.question.text for s in samples]
    chunking = ChunkingConfig(unit="words", size=200)  # the RAG default
    build_index(corpus, "bm25", chunking=chunking)
    new, edits, gone = edited(corpus, 0.01, seed=1)
    fresh_process()
    index = build_index(new, "bm25", chunking=chunking)
    assert len(meta_of(index)["deleted_documents"]) == len(edits) + len(gone) and len(new) == len(
        corpus
    ) - len(gone)
    assert_same_as_a_rebuild(index, new, questions)
    with (
        RecordingServer() as server
    ):  # dense: real FAISS over the server's deterministic embeddings
        options = {"model": "rec", "base_url": server.url, "api_key": "x"}
        build_index(corpus, "openai", chunking=chunking, **options)
        requests = len(server.embedding_requests)
        fresh_process()
        dense = build_index(new, "openai", chunking=chunking, **options)
        embedded = [t for r in server.embedding_requests[requests:] for t in r["input"]]
        assert embedded == [
            c.text for c in dense.chunks if c.doc_id in edits
        ]  # only the edited documents' chunks
        assert_same_as_a_rebuild(dense, new, questions, retriever="openai", **options)


# -- dense -------------------------------------------------------------------------------------
# MiniLM embeds the corpus twice (~30-50 s on 2 busy cores); the FAISS path runs by default over the
# server's embeddings above
@pytest.mark.slow
def test_dense_index_of_an_edited_corpus_embeds_only_the_update_and_skips_deleted_chunks():
    old = Corpus.from_texts(TEXTS[:20])
    build_index(old, DenseRetriever(CountingEmbedder()), chunking=CHUNKING)
    new = old.remove("2").update(
        Document(
            doc_id="5", text="The museum curator changed the vault code to 5930.", title="Doc 6"
        )
    )
    fresh_process()
    embedder = CountingEmbedder()
    index = build_index(new, DenseRetriever(embedder), chunking=CHUNKING)
    assert embedder.embedded == 1
    rebuilt = build_index(
        new, DenseRetriever(CountingEmbedder()), chunking=CHUNKING, use_cache=False
    )
    fresh_process()
    reloaded = build_index(new, DenseRetriever(CountingEmbedder()), chunking=CHUNKING)
    for question in QUESTIONS:
        hits = index.search(question, 10)
        assert [(h.chunk, h.score) for h in hits] == [
            (h.chunk, h.score) for h in reloaded.search(question, 10)
        ], question
        # the kept chunks keep the vectors they were embedded with; a rebuild embeds them in other
        # batches (other padding), which moves bfloat16 scores by ~1e-4 and can swap near-ties: each
        # hit is checked by its score there
        rebuilt_score = {h.chunk: h.score for h in rebuilt.search(question, len(rebuilt))}
        np.testing.assert_allclose(
            [h.score for h in hits], [rebuilt_score[h.chunk] for h in hits], atol=2e-3
        )
        np.testing.assert_allclose(
            [h.score for h in hits], [h.score for h in rebuilt.search(question, 10)], atol=2e-3
        )
    assert {h.chunk.doc_id for h in index.search(QUESTIONS[0], 1000)} == {
        d.doc_id for d in new
    }  # every live chunk, no deleted one
    assert index.search("What is the code of the museum vault?", 1)[0].chunk.doc_id == "5"


# -- compaction folds tombstones ------------------------------------------------------------------
def test_deletions_past_the_policy_are_folded_into_one_segment_that_scores_as_a_fresh_build():
    policy = CompactionPolicy(max_deleted=0.05)
    old = Corpus.from_texts(TEXTS)
    build_index(old, "bm25", chunking=CHUNKING, compaction=policy)
    fresh_process()
    few = old.remove("1", "2")  # under 5% of the chunks: tombstones
    assert meta_of(build_index(few, "bm25", chunking=CHUNKING, compaction=policy))[
        "deleted_documents"
    ] == [1, 2]
    fresh_process()
    many = few.remove(*[str(i) for i in range(10, 20)])  # past 5%: compacted
    index = build_index(many, "bm25", chunking=CHUNKING, compaction=policy)
    meta = meta_of(index)
    assert (
        "deleted_documents" not in meta
        and [s["path"] for s in meta["segments"]] == ["."]
        and len(index.stored) == len(index)
    )
    assert (
        meta["compacted_segments"] == 1 and index.retriever._model is not None
    )  # scored by a bm25s matrix again
    assert_same_as_a_rebuild(index, many, QUESTIONS)
    fresh_process()
    assert_same_as_a_rebuild(
        build_index(many, "bm25", chunking=CHUNKING, compaction=policy), many, QUESTIONS
    )


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.2"])
def test_compaction_policy_refuses_a_bad_deleted_share(bad):
    with pytest.raises(ValueError, match="max_deleted must be a share"):
        CompactionPolicy(max_deleted=bad)


def test_ten_thousand_documents_with_ties_and_one_percent_removed():
    texts = [
        f"report {i % 7} on the harbour" for i in range(10_000)
    ]  # many equal chunks: ties everywhere
    old = Corpus.from_texts(texts, duplicates="keep")
    build_index(old, "bm25", chunking=CHUNKING)
    new = old.remove(*[str(i) for i in range(0, 10_000, 100)])
    fresh_process()
    index = build_index(new, "bm25", chunking=CHUNKING)
    assert len(meta_of(index)["deleted_documents"]) == 100
    assert_same_as_a_rebuild(index, new, ["report 3 harbour", "harbour", "nothing matches"], k=50)


# -- a killed update ------------------------------------------------------------------------------
_KILLED_CHILD = """
import json, os, sys
from longctx.retrieval import ChunkingConfig, Corpus, Document, build_index
from longctx.retrieval.index import store
# killed with the edited index written, before its rename
store.fsync_tree = lambda folder: os._exit(9)
old = Corpus.from_texts(json.loads(open(sys.argv[1]).read()))
new = old.remove("3").update(Document(doc_id="7", text="edited text", title="Doc 8"))
build_index(new, "bm25", chunking=ChunkingConfig(unit="words", size=40))
"""


def test_a_killed_update_leaves_the_previous_index_usable(isolated_cache, tmp_path):
    old = Corpus.from_texts(TEXTS[:50])
    first = build_index(old, "bm25", chunking=CHUNKING)
    files = {p: p.read_bytes() for p in first.path.rglob("*") if p.is_file()}
    (tmp_path / "texts.json").write_text(json.dumps(TEXTS[:50]))
    root_dir = Path(__file__).resolve().parents[1]
    env = {**os.environ, "LONGCTX_CACHE_DIR": str(isolated_cache), "PYTHONPATH": str(root_dir)}
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_CHILD, str(tmp_path / "texts.json")],
        env=env,
        cwd=root_dir,
        timeout=120,
    )
    assert child.returncode == 9
    assert (
        len(list(first.path.parent.glob("*.build-*"))) == 1
    )  # the killed update's output, never renamed into place
    assert {
        p: p.read_bytes() for p in first.path.rglob("*") if p.is_file()
    } == files  # the previous index untouched
    fresh_process()
    previous = build_index(old, "bm25", chunking=CHUNKING)
    assert previous.path == first.path
    assert_same_as_a_rebuild(previous, old, QUESTIONS)
    new = old.remove("3").update(Document(doc_id="7", text="edited text", title="Doc 8"))
    index = build_index(new, "bm25", chunking=CHUNKING)
    assert meta_of(index)["deleted_documents"] == [3, 7] and not list(
        first.path.parent.glob("*.build-*")
    )
    assert_same_as_a_rebuild(index, new, QUESTIONS)


# -- what reaches a prompt -------------------------------------------------------------------------
MARKED = [
    "The harbour log records the ferry schedule for the spring season and the cargo manifests.",
    "The vault marker is DELETEDMARKER and the vault code was kept in the museum archive.",
    "The vault marker is OLDMARKER according to the first edition of the museum guide.",
    *(
        filler_document(i, sentences=3) for i in range(17)
    ),  # 20 documents: 2 edits stay under the compaction policy's 20%
]


@pytest.mark.parametrize("retriever", ["bm25", "openai"])
def test_deleted_and_replaced_text_never_reaches_a_prompt(tmp_path, retriever):
    old = Corpus.from_texts(MARKED)
    new = old.remove("1").update(
        Document(
            doc_id="2",
            text="The vault marker is NEWMARKER in the revised museum guide.",
            title="Guide",
        )
    )
    with RecordingServer(lambda request: "NEWMARKER") as server:
        options = (
            {"retriever_options": {"model": "rec", "base_url": server.url, "api_key": "x"}}
            if retriever == "openai"
            else {}
        )
        llm = ChatOpenAI(model="m", base_url=server.url, api_key="x", max_retries=0)
        for corpus in (old, new):
            fresh_process()
            answer(
                corpus,
                "What is the vault marker?",
                strategy="rag",
                llm=llm,
                retriever=retriever,
                top_k=7,
                cache_dir=tmp_path,
                **options,
            )
    before, after = prompt_of(server.requests[0]), prompt_of(server.requests[1])
    assert "DELETEDMARKER" in before and "OLDMARKER" in before  # the old corpus's prompt held them
    assert "NEWMARKER" in after
    assert not re.search("DELETEDMARKER|OLDMARKER", after)
    index = build_index(
        new,
        retriever,
        chunking=ChunkingConfig(unit="words", size=200),
        cache_dir=tmp_path,
        **(options.get("retriever_options") or {}),
    )
    assert meta_of(index)["deleted_documents"] == [
        1,
        2,
    ]  # the answer ran over the tombstoned index, not a rebuild


def test_structured_records_follow_updates_and_removals(tmp_path):
    from tests.test_structured import DOCS, SCHEMA, recording_extractions

    titles = list(DOCS)
    old = Corpus.from_texts([DOCS[t] for t in titles], titles=titles)
    extracted: list[str] = []

    def model():
        return recording_extractions(extracted)

    question = "What was the revenue of each company?"
    before = answer(
        old, question, strategy="structured", llm=model(), cache_dir=tmp_path, schema=SCHEMA
    )
    assert any(
        "Birch" in str(r[0]) for r in next(s for s in before.steps if s["node"] == "query")["rows"]
    )
    extracted.clear()
    new = old.remove("1").update(
        Document(doc_id="0", text=DOCS[titles[0]] + " Audited.", title=titles[0])
    )
    after = answer(
        new, question, strategy="structured", llm=model(), cache_dir=tmp_path, schema=SCHEMA
    )
    assert extracted == [
        titles[0]
    ]  # the edited document only; the unchanged one from the record cache
    mapped = next(s for s in after.steps if s["node"] == "map")
    assert (mapped["cached"], mapped["to_extract"]) == (1, 1)
    rows = next(s for s in after.steps if s["node"] == "query")["rows"]
    assert rows and not any(
        "Birch" in str(r[0]) for r in rows
    )  # the removed document's rows are gone
