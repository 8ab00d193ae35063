"""The structured strategy's schema store under concurrent writers, a killed writer and a
corrupt file.

A lost schema costs a corpus a second reading of every document (a later question no longer
finds the table it could reuse), so none may be lost however the writers interleave.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
import threading

from longctx import answer
from longctx.graphs.structured.stores import store_root
from longctx.memory.records.cache import SchemaStore
from longctx.retrieval.contract import Corpus
from tests.scripted_tools import ToolScriptedChatModel

FINGERPRINT = "f" * 64


def _schema(name: str) -> dict:
    return {
        "table": "facts",
        "entity": "company",
        "time": None,
        "attributes": [
            {
                "name": name,
                "type": "number",
                "unit": "USD million",
                "description": name,
                "static": False,
            }
        ],
    }


def _add_many(root: str, prefix: str, n: int, barrier) -> None:
    barrier.wait()
    store = SchemaStore(root, FINGERPRINT)
    for i in range(n):
        store.add(_schema(f"{prefix}_{i}"))


def _killed_before_replace(root: str) -> None:
    """Write the new list to the temporary file, then die (SIGKILL) before renaming it."""
    os.replace = lambda *args: os.kill(os.getpid(), signal.SIGKILL)
    SchemaStore(root, FINGERPRINT).add(_schema("never_stored"))


def test_concurrent_writers_in_threads_and_processes_lose_no_schema(tmp_path):
    spawn = multiprocessing.get_context("spawn")  # no fork of a process with threads
    barrier = spawn.Barrier(3 + 1)
    procs = [
        spawn.Process(target=_add_many, args=(str(tmp_path), f"p{k}", 6, barrier)) for k in range(3)
    ]
    for p in procs:
        p.start()
    thread_barrier = threading.Barrier(6)
    threads = [
        threading.Thread(target=_add_many, args=(str(tmp_path), f"t{k}", 4, thread_barrier))
        for k in range(6)
    ]
    barrier.wait()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    names = [s["attributes"][0]["name"] for s in SchemaStore(tmp_path, FINGERPRINT).load()]
    expected = {f"p{k}_{i}" for k in range(3) for i in range(6)} | {
        f"t{k}_{i}" for k in range(6) for i in range(4)
    }
    assert sorted(names) == sorted(expected)  # every schema, each once


def test_a_writer_killed_before_its_rename_leaves_the_store_as_it_was(tmp_path):
    store = SchemaStore(tmp_path, FINGERPRINT)
    store.add(_schema("revenue"))
    proc = multiprocessing.get_context("spawn").Process(
        target=_killed_before_replace, args=(str(tmp_path),)
    )
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == -signal.SIGKILL
    leftovers = list(store.path.parent.glob(f".{store.path.name}.*.tmp"))
    assert leftovers  # the killed writer's temporary file, with the list it never renamed
    assert store.load() == [_schema("revenue")]
    store.add(
        _schema("employees")
    )  # the next writer (holding the lock) clears what killed writers left
    assert store.load() == [_schema("revenue"), _schema("employees")]
    assert not list(store.path.parent.glob(f".{store.path.name}.*.tmp"))


def test_a_corrupt_store_reads_as_empty_and_only_a_writer_sets_it_aside(tmp_path, caplog):
    store = SchemaStore(tmp_path, FINGERPRINT)
    store.add(_schema("revenue"))
    for garbage in ('[{"table": "facts", "entity"', '{"not": "a list"}'):
        store.path.write_text(garbage)
        with caplog.at_level(logging.WARNING, logger="longctx.memory.records.cache"):
            assert store.load() == []
        assert (
            "unreadable" in caplog.text and store.path.read_text() == garbage
        )  # a reader moves nothing
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="longctx.memory.records.cache"):
            store.add(_schema("employees"))
        assert "moved aside" in caplog.text
        assert store.load() == [_schema("employees")]
        store.path.write_text(json.dumps([_schema("revenue")]))
    aside = sorted(p.read_text() for p in store.path.parent.glob(f"{store.path.name}.corrupt-*"))
    assert aside == sorted(
        ['[{"table": "facts", "entity"', '{"not": "a list"}']
    )  # each kept for a look, none overwritten


def test_a_question_on_a_corpus_whose_store_is_corrupt_plans_and_answers(tmp_path):
    corpus = Corpus.from_texts(["Acme Corp had revenue of $5 million in FY2023."], titles=["Acme"])

    def reply(prompt: str, tools):
        if prompt.startswith("A question will be answered"):
            return [
                {
                    "table": "facts",
                    "entity": "company",
                    "entity_description": "a company",
                    "time": None,
                    "attributes": [
                        {
                            "name": "revenue",
                            "type": "number",
                            "unit": "USD million",
                            "description": "revenue",
                            "static": False,
                        }
                    ],
                }
            ]
        if prompt.startswith("Extract rows"):
            return [
                {
                    "records": [
                        {
                            "entity": "Acme Corp",
                            "period": None,
                            "values": {
                                "revenue": {"value": "$5 million", "quote": "revenue of $5 million"}
                            },
                        }
                    ]
                }
            ]
        if prompt.startswith("Every document"):
            return "SELECT revenue FROM facts"
        return "5"

    store = SchemaStore(
        store_root(tmp_path), corpus.fingerprint
    )  # where answer() keeps the corpus's schemas
    store.path.parent.mkdir(parents=True)
    store.path.write_text("\x00\x00 not json")
    a = answer(
        corpus,
        "What was Acme's revenue?",
        strategy="structured",
        llm=ToolScriptedChatModel(reply_fn=reply),
        cache_dir=tmp_path,
    )
    assert a.answer == "5"
    assert [s["attributes"][0]["name"] for s in store.load()] == ["revenue"]
