"""Killed and corrupted index-time builds (issue #37): RAPTOR's tree and HippoRAG's graph.

A child process builds the artifact through ``answer(...)`` against the recording stub and is
killed with SIGKILL during the LLM map (the stub holds every request after the first few, so the
kill lands with calls in flight), during the clustering of RAPTOR's layer 2, and while the
artifact's files are written (the child tears a file and kills itself: scaffolding in the child
script, no hook in the library). The next process resumes: no request whose body the stub had
answered is sent again, the artifact equals one built without a kill, and no torn file is
trusted. A flipped byte in each stored file, and a log cut in the middle of its last line, are
named in a warning and rebuilt from the logs without asking a finished call again. The answer
that built an artifact carries its wall seconds in ``Usage.index_seconds``; one that reused it, 0.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from longctx import answer, make_chat_model
from longctx.graphs.hipporag import prompts as HP
from longctx.graphs.hipporag.build import forget_graphs
from longctx.graphs.raptor import graph as raptor_graph
from longctx.graphs.raptor.prompts import SUMMARY_SYSTEM
from longctx.graphs.raptor.tree import SummaryLog
from longctx.retrieval import Corpus
from tests.recording_server import RecordingServer

ROOT = Path(__file__).resolve().parents[1]
#: The embedder both strategies use here: the stub's ``/v1/embeddings`` (bag-of-words vectors; no
#: model to load).
EMBEDDER = {"embedder": "openai", "embedder_model": "kill-test-stub"}

# -- the stub's replies ---------------------------------------------------------------------------
WORDS = (
    "harbour engine flour yeast orbit fuel string bow ice melt bean roast market river mountain "
    "signal copper forest lamp garden".split()
)
TOPICS = ["ships", "bread", "rockets", "violins", "glaciers", "coffee"]
PLACES = "Arden Belmont Corvin Dunmore Elston Farrow Glenby Harlow Ingram Jessop".split()


def raptor_texts(n: int = 16) -> list[str]:
    """``n`` one-leaf documents of varied words."""
    rng = random.Random(3)
    return [
        f"Report {i} about {TOPICS[i % 6]}. "
        + " ".join(rng.choice(WORDS) for _ in range(40))
        + f". The team in city {i} measured value {i * 7}."
        for i in range(n)
    ]


def hipporag_texts(n: int = 10) -> list[str]:
    """``n`` passages, each naming three places (the stub's entities) with a measured value."""
    return [
        f"{PLACES[i % 10]} trades with {PLACES[(i + 3) % 10]} and {PLACES[(i + 7) % 10]}. The "
        f"market there measured value {i * 7}."
        for i in range(n)
    ]


def is_map_call(request: dict[str, Any]) -> bool:
    """A summary (RAPTOR) or OpenIE (HippoRAG) request: the index-time map."""
    return request["messages"][0]["content"] in (SUMMARY_SYSTEM, HP.NER_SYSTEM, HP.TRIPLE_SYSTEM)


def reply_to(request: dict[str, Any]) -> str:
    """A reply made from the request's content: a summary, NER and triples of the places named,
    the filter keeping the first candidate fact, an answer."""
    system, last = request["messages"][0]["content"], request["messages"][-1]["content"]
    places = [p for p in PLACES if p in last]
    if system == SUMMARY_SYSTEM:
        return "Summary of " + " ".join(last.split()[10:30])
    if system == HP.NER_SYSTEM:
        return json.dumps({"named_entities": places})
    if system == HP.TRIPLE_SYSTEM:
        return json.dumps({"triples": [[a, "trades with", b] for a, b in zip(places, places[1:])]})
    if system == HP.FILTER_SYSTEM:
        candidates = json.loads(
            last.split("[[ ## fact_before_filter ## ]]")[1].strip().split("\n")[0]
        )
        kept = json.dumps({"fact": candidates["fact"][:1]})
        return f"[[ ## fact_after_filter ## ]]\n{kept}\n\n[[ ## completed ## ]]"
    return "Answer: value 14"


def body(request: dict[str, Any]) -> str:
    return json.dumps(request, sort_keys=True)


class Stub:
    """The stub's replies; after :meth:`hold` ``n``, the map requests beyond the first ``n`` wait
    unanswered until :meth:`release` (the child is killed while they wait). ``answered``: the body
    of every map request answered so far."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.limit: int | None = None
        self.seen = 0
        self.answered: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def hold(self, n: int) -> None:
        with self.lock:
            self.limit, self.seen = n, 0
            self.gate.clear()

    def release(self) -> None:
        with self.lock:
            self.limit = None
            self.gate.set()

    def __call__(self, request: dict[str, Any]) -> str:
        if is_map_call(request):
            with self.lock:
                self.seen += 1
                held = self.limit is not None and self.seen > self.limit
            if held:
                self.gate.wait(300)
                return "held: its caller was killed"  # never counted as answered
            with self.lock:
                self.answered.append(body(request))
        return reply_to(request)


@pytest.fixture(scope="module")
def server():
    """One stub for the module (the embedder reads its address from the environment once
    per process)."""
    stub = Stub()
    saved = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    with RecordingServer(stub) as s:
        os.environ.update(OPENAI_BASE_URL=s.url, OPENAI_API_KEY="unused")
        s.stub = stub  # type: ignore[attr-defined]
        yield s
        stub.release()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


pytestmark = pytest.mark.usefixtures("no_held_index_artifacts")


def map_bodies(server: RecordingServer, since: int = 0) -> list[str]:
    """The bodies of the map requests that reached the stub since request ``since``."""
    return [body(r) for r in server.requests[since:] if is_map_call(r)]


# -- the child process -----------------------------------------------------------------------------
CHILD = r"""
import contextlib, json, os, signal, sys, time
from pathlib import Path
job = json.loads(Path(sys.argv[1]).read_text())
if job["kill"] == "clustering":  # layer 2's clustering: say so, then wait for the SIGKILL
    import longctx.graphs.raptor.tree as tree
    real_cluster, calls = tree.cluster_nodes, []
    def cluster_nodes(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            Path(job["marker"]).write_text("clustering layer 2")
            time.sleep(600)
        return real_cluster(*args, **kwargs)
    tree.cluster_nodes = cluster_nodes
# half of the first write to the named file reaches the disk, then SIGKILL
if job["kill"] == "writing":
    from longctx.retrieval.checksums import Checksums
    real_open = Checksums.open
    class Torn:
        def __init__(self, f):
            self.f = f
        def write(self, data):
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        def __getattr__(self, name):
            return getattr(self.f, name)
    @contextlib.contextmanager
    def torn_open(self, path, **kwargs):
        with real_open(self, path, **kwargs) as f:
            yield Torn(f) if Path(path).name == job["torn"] else f
    Checksums.open = torn_open
from longctx import answer, make_chat_model
from longctx.retrieval import Corpus
llm = make_chat_model("openai:gpt-3.5-turbo", base_url=job["url"], max_retries=0)
corpus = Corpus.from_texts(job["texts"], titles=job["titles"])
answer(corpus, job["question"], strategy=job["strategy"], llm=llm, cache_dir=job["cache"],
       **job["options"])
"""


def start_child(tmp_path: Path, name: str, job: dict[str, Any]) -> subprocess.Popen[bytes]:
    """The child building with ``job`` (its output in ``<name>.log``)."""
    (tmp_path / f"{name}.json").write_text(json.dumps(job))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    with open(tmp_path / f"{name}.log", "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path / f"{name}.json")],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_for(
    ready: Callable[[], bool], child: subprocess.Popen[bytes], log: Path, what: str
) -> None:
    """Wait until ``ready()`` (failing, not hanging, when the child ends first)."""
    deadline = time.monotonic() + 400
    while not ready():
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            pytest.fail(
                f"the child ended ({child.returncode}) before {what}:\n{log.read_text()[-3000:]}"
            )
        time.sleep(0.05)


def killed(child: subprocess.Popen[bytes]) -> int:
    """The child's exit status once it is gone (SIGKILLed by the test or by itself: -9)."""
    child.kill()
    return child.wait(60)


def lines(paths: list[Path]) -> int:
    """Complete lines in the logs."""
    return sum(p.read_bytes().count(b"\n") for p in paths if p.exists())


def job(
    server: RecordingServer,
    strategy: str,
    texts: list[str],
    cache: Path,
    options: dict[str, Any],
    **kill: str,
) -> dict[str, Any]:
    return {
        "url": server.url,
        "strategy": strategy,
        "texts": texts,
        "titles": [f"d{i}" for i in range(len(texts))],
        "question": QUESTION,
        "cache": str(cache),
        "options": options,
        "kill": None,
        **kill,
    }


QUESTION = "What did the team in city 2 measure?"
RAPTOR_OPTIONS = {**EMBEDDER, "reduction_dimension": 2, "num_layers": 2, "concurrency": 2}
HIPPORAG_OPTIONS = {**EMBEDDER, "concurrency": 2}


def ask(
    server: RecordingServer, strategy: str, texts: list[str], cache: Path, options: dict[str, Any]
) -> Any:
    """One answer in this process (nothing held in memory: what is on disk decides)."""
    raptor_graph._TREES.clear()
    forget_graphs()
    llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
    corpus = Corpus.from_texts(texts, titles=[f"d{i}" for i in range(len(texts))])
    return answer(corpus, QUESTION, strategy=strategy, llm=llm, cache_dir=cache, **options)


def step(a: Any, node: str) -> dict[str, Any]:
    return next(s for s in a.steps if s["node"] == node)


def tree_files(cache: Path) -> tuple[dict[str, Any], np.ndarray]:
    """The stored tree (but what its build paid: summaries asked or reused, texts embedded) and
    its embeddings."""
    (folder,) = (
        f for f in cache.glob("raptor/*") if f.name != "summaries"
    )  # the tree's; the log is shared
    data = json.loads((folder / "tree.json").read_text())
    for paid in ("summaries_asked", "summaries_reused", "leaves_embedded", "embeddings_computed"):
        data["facts"].pop(paid)
    for layer in data["facts"]["layers"]:
        layer.pop("summaries_asked")
    return data, np.load(folder / "embeddings.npy")


def graph_files(cache: Path) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """The stored graph (but what its build paid: OpenIE calls asked, texts embedded) and its two
    vector files."""
    (folder,) = cache.glob("hipporag/graphs/*")
    data = json.loads((folder / "graph.json").read_text())
    for paid in ("openie_calls_asked", "embedded", "embeddings_reused"):
        data["facts_of_build"].pop(paid)
    return data, np.load(folder / "facts.npy"), np.load(folder / "passages.npy")


def resumed_without_repeats(server: RecordingServer, since: int, answered: list[str]) -> list[str]:
    """The map requests sent since request ``since``, none of them one the stub had
    answered before."""
    sent = map_bodies(server, since)
    assert not set(sent) & set(answered), "a finished call was asked again"
    return sent


def killed_in_the_map(
    server,
    tmp_path: Path,
    strategy: str,
    texts: list[str],
    cache: Path,
    options: dict,
    logged: Callable[[], list[Path]],
    n: int,
    what: str,
) -> list[str]:
    """A child process building ``strategy`` into ``cache``, killed with SIGKILL once ``n`` map
    calls were answered and logged (in ``logged()``'s files) and the next ones held at the stub: the
    bodies answered, exactly ``n``."""
    stub = server.stub
    stub.answered.clear()
    stub.hold(n)
    child = start_child(tmp_path, "map", job(server, strategy, texts, cache, options))
    wait_for(lambda: lines(logged()) == n and stub.seen > n, child, tmp_path / "map.log", what)
    assert killed(child) == -signal.SIGKILL
    stub.release()
    answered = list(stub.answered)
    assert len(answered) == n
    return answered


# -- kills -----------------------------------------------------------------------------------------
# four builds, three in child processes each compiling UMAP (numba): 273 s at load 11 on 2 cores
@pytest.mark.slow
def test_a_raptor_build_killed_in_the_map_clustering_and_writing_resumes_asking_no_answered_call(
    server, tmp_path
):
    stub, texts = server.stub, raptor_texts()
    stub.answered.clear()
    reference = ask(server, "raptor", texts, tmp_path / "reference", RAPTOR_OPTIONS)
    ref_answered = list(stub.answered)
    # two summary layers (a layer 2 to kill), the build's seconds on the answer that built it
    assert step(reference, "build_tree")["nodes_per_layer"][2] > 0
    assert reference.usage.index_seconds > 0
    assert reference.usage.index_llm_calls == len(ref_answered)
    cache = tmp_path / "killed"
    summaries = lambda: list(cache.glob("raptor/summaries/*.jsonl"))  # noqa: E731
    # (a) in the map: 5 summaries answered, the next ones held at the stub, then SIGKILL
    answered = killed_in_the_map(
        server, tmp_path, "raptor", texts, cache, RAPTOR_OPTIONS, summaries, 5, "5 summaries"
    )
    assert not list(cache.glob("raptor/*/meta.json"))
    # (b) a fresh process resumes the map, then is killed while it clusters layer 2
    since, marker = len(server.requests), tmp_path / "clustering"
    child = start_child(
        tmp_path,
        "clustering",
        job(server, "raptor", texts, cache, RAPTOR_OPTIONS, kill="clustering", marker=str(marker)),
    )
    wait_for(marker.exists, child, tmp_path / "clustering.log", "layer 2's clustering")
    assert killed(child) == -signal.SIGKILL
    layer1 = resumed_without_repeats(server, since, answered)
    assert len(layer1) == step(reference, "build_tree")["nodes_per_layer"][1] - 5
    answered = list(stub.answered)
    assert lines(summaries()) == len(answered)
    # (c) a fresh process asks layer 2's summaries, then dies with tree.json half written
    since = len(server.requests)
    child = start_child(
        tmp_path,
        "writing",
        job(server, "raptor", texts, cache, RAPTOR_OPTIONS, kill="writing", torn="tree.json"),
    )
    assert child.wait(400) == -signal.SIGKILL, (tmp_path / "writing.log").read_text()[-3000:]
    layer2 = resumed_without_repeats(server, since, answered)
    assert len(layer2) == step(reference, "build_tree")["nodes_per_layer"][2]
    (torn,) = cache.glob("raptor/*/tree.json")
    # never trusted: no meta.json
    assert not list(cache.glob("raptor/*/meta.json")) and 0 < torn.stat().st_size
    # the next answer builds from the log alone: no summary asked, the tree and the retrieval
    # the reference's
    since, answered = len(server.requests), list(stub.answered)
    final = ask(server, "raptor", texts, cache, RAPTOR_OPTIONS)
    assert not map_bodies(server, since) and final.usage.index_llm_calls == 0
    assert step(final, "build_tree")["source"] == "built" and final.usage.index_seconds > 0
    # every summary answered once over the four processes
    assert sorted(answered) == sorted(ref_answered)
    ref_tree, ref_vectors = tree_files(tmp_path / "reference")
    tree, vectors = tree_files(cache)
    assert tree == ref_tree and np.array_equal(vectors, ref_vectors)
    assert step(final, "retrieve")["nodes"] == step(reference, "retrieve")["nodes"]
    assert final.answer == reference.answer
    # reused from disk, then from memory: no index time
    from_disk = ask(server, "raptor", texts, cache, RAPTOR_OPTIONS)
    llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
    corpus = Corpus.from_texts(texts, titles=[f"d{i}" for i in range(len(texts))])
    from_memory = answer(
        corpus, QUESTION, strategy="raptor", llm=llm, cache_dir=cache, **RAPTOR_OPTIONS
    )
    assert [step(a, "build_tree")["source"] for a in (from_disk, from_memory)] == ["disk", "memory"]
    assert from_disk.usage.index_seconds == from_memory.usage.index_seconds == 0


def test_a_hipporag_build_killed_in_openie_and_in_writing_resumes_asking_no_answered_call(
    server, tmp_path
):
    stub, texts = server.stub, hipporag_texts()
    stub.answered.clear()
    reference = ask(server, "hipporag", texts, tmp_path / "reference", HIPPORAG_OPTIONS)
    ref_answered = list(stub.answered)
    assert len(ref_answered) == 2 * len(texts) and reference.usage.index_seconds > 0
    cache = tmp_path / "killed"
    logs = lambda: list(cache.glob("hipporag/openie/records/*/*/records.jsonl"))  # noqa: E731
    # (a) in the OpenIE map: 7 calls answered, the next ones held at the stub, then SIGKILL
    answered = killed_in_the_map(
        server, tmp_path, "hipporag", texts, cache, HIPPORAG_OPTIONS, logs, 7, "7 OpenIE calls"
    )
    assert not list(cache.glob("hipporag/graphs/*/meta.json"))
    # (b) a fresh process resumes the map, then dies with facts.npy half written
    since = len(server.requests)
    child = start_child(
        tmp_path,
        "writing",
        job(server, "hipporag", texts, cache, HIPPORAG_OPTIONS, kill="writing", torn="facts.npy"),
    )
    assert child.wait(400) == -signal.SIGKILL, (tmp_path / "writing.log").read_text()[-3000:]
    assert len(resumed_without_repeats(server, since, answered)) == 2 * len(texts) - 7
    (folder,) = cache.glob("hipporag/graphs/*")
    assert (folder / "graph.json").exists() and (folder / "facts.npy").exists()
    assert not (folder / "meta.json").exists()  # the torn graph is never trusted
    # the next answer builds from the logs alone: no OpenIE call, the graph and the ranking
    # the reference's
    since, answered = len(server.requests), list(stub.answered)
    final = ask(server, "hipporag", texts, cache, HIPPORAG_OPTIONS)
    assert not map_bodies(server, since) and final.usage.index_llm_calls == 0
    assert step(final, "index")["source"] == "built" and final.usage.index_seconds > 0
    # every OpenIE call answered once over three processes
    assert sorted(answered) == sorted(ref_answered)
    ref_graph, *ref_vectors = graph_files(tmp_path / "reference")
    graph, *vectors = graph_files(cache)
    assert graph == ref_graph and all(np.array_equal(a, b) for a, b in zip(vectors, ref_vectors))
    assert step(final, "ppr")["mode"] == "ppr"
    assert step(final, "ppr")["top"] == step(reference, "ppr")["top"]
    from_disk = ask(server, "hipporag", texts, cache, HIPPORAG_OPTIONS)
    assert step(from_disk, "index")["source"] == "disk" and from_disk.usage.index_seconds == 0


# -- corruption ------------------------------------------------------------------------------------
def flip_byte(path: Path) -> None:
    """One byte of ``path`` inverted, in the middle (same size, other bytes)."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def cut_last_line(path: Path) -> None:
    """``path`` ends in the middle of its last line (a write torn by a kill or a full disk)."""
    data = path.read_bytes()
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    path.write_bytes(data[: start + (len(data) - start) // 2])


def corrupted_and_rebuilt(
    server: RecordingServer,
    strategy: str,
    texts: list[str],
    cache: Path,
    options: dict[str, Any],
    files: list[Path],
    caplog: pytest.LogCaptureFixture,
) -> list[Any]:
    """For each stored file: flip a byte, answer again; the warning names it, the artifact is built
    again and no map call is asked. Returns the answers."""
    node = "build_tree" if strategy == "raptor" else "index"
    out = []
    for path in files:
        flip_byte(path)
        caplog.clear()
        since = len(server.requests)
        a = ask(server, strategy, texts, cache, options)
        assert f"{path.name} fails its xxh3_128 checksum" in caplog.text
        assert step(a, node)["source"] == "built" and not map_bodies(server, since)
        assert a.usage.index_llm_calls == 0
        out.append(a)
    return out


@pytest.mark.slow  # five RAPTOR builds (UMAP) in this process: 66 s at load 11 on 2 cores
def test_corrupt_raptor_files_are_named_and_rebuilt_a_torn_summary_log_asks_its_torn_line(
    server, tmp_path, caplog
):
    caplog.set_level(logging.WARNING)
    texts, cache = raptor_texts(), tmp_path
    first = ask(server, "raptor", texts, cache, RAPTOR_OPTIONS)
    (folder,) = (
        f for f in cache.glob("raptor/*") if f.name != "summaries"
    )  # the tree's; the log is shared
    again = corrupted_and_rebuilt(
        server,
        "raptor",
        texts,
        cache,
        RAPTOR_OPTIONS,
        [folder / "tree.json", folder / "embeddings.npy"],
        caplog,
    )
    assert all(step(a, "retrieve")["nodes"] == step(first, "retrieve")["nodes"] for a in again)
    # the log cut mid-line: the torn summary is asked again, once; the ones before it never
    (log_path,) = cache.glob("raptor/summaries/*.jsonl")
    cut_last_line(log_path)
    flip_byte(folder / "tree.json")
    caplog.clear()
    since = len(server.requests)
    torn = ask(server, "raptor", texts, cache, RAPTOR_OPTIONS)
    assert str(log_path) in caplog.text and "tree.json fails its xxh3_128 checksum" in caplog.text
    assert len(map_bodies(server, since)) == 1 == torn.usage.index_llm_calls
    # the record asked again is readable: a later rebuild asks nothing
    flip_byte(folder / "tree.json")
    since = len(server.requests)
    after = ask(server, "raptor", texts, cache, RAPTOR_OPTIONS)
    assert step(after, "build_tree")["source"] == "built" and not map_bodies(server, since)
    assert step(after, "retrieve")["nodes"] == step(first, "retrieve")["nodes"]


def test_corrupt_hipporag_files_are_named_and_rebuilt_a_torn_openie_log_asks_its_torn_line(
    server, tmp_path, caplog
):
    caplog.set_level(logging.WARNING)
    texts, cache = hipporag_texts(), tmp_path
    first = ask(server, "hipporag", texts, cache, HIPPORAG_OPTIONS)
    (folder,) = cache.glob("hipporag/graphs/*")
    files = [folder / name for name in ("graph.json", "facts.npy", "passages.npy")]
    again = corrupted_and_rebuilt(server, "hipporag", texts, cache, HIPPORAG_OPTIONS, files, caplog)
    assert all(step(a, "ppr")["top"] == step(first, "ppr")["top"] for a in again)
    # each of them built the graph
    assert first.usage.index_seconds > 0 and all(a.usage.index_seconds > 0 for a in again)
    # each OpenIE log cut mid-line: its torn call is asked again, once; the ones before it never
    logs = sorted(cache.glob("hipporag/openie/records/*/*/records.jsonl"))
    assert len(logs) == 2  # NER, triples
    for log_path in logs:
        cut_last_line(log_path)
    flip_byte(folder / "graph.json")
    caplog.clear()
    since = len(server.requests)
    torn = ask(server, "hipporag", texts, cache, HIPPORAG_OPTIONS)
    assert all(str(p) in caplog.text for p in logs) and "graph.json fails" in caplog.text
    asked = map_bodies(server, since)
    # the torn NER call and the torn triple call
    assert torn.usage.index_llm_calls == len(asked) == 2
    # the records asked again are readable: a later rebuild asks nothing
    flip_byte(folder / "graph.json")
    since = len(server.requests)
    after = ask(server, "hipporag", texts, cache, HIPPORAG_OPTIONS)
    assert step(after, "index")["source"] == "built" and not map_bodies(server, since)
    assert step(after, "ppr")["top"] == step(first, "ppr")["top"]
    # the graph held in memory: no index time
    llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
    corpus = Corpus.from_texts(texts, titles=[f"d{i}" for i in range(len(texts))])
    held = answer(
        corpus, QUESTION, strategy="hipporag", llm=llm, cache_dir=cache, **HIPPORAG_OPTIONS
    )
    assert step(held, "index")["source"] == "memory" and held.usage.index_seconds == 0


def test_a_summary_log_cut_mid_line_is_named_and_the_next_record_survives(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    path = tmp_path / "summaries.jsonl"
    log = SummaryLog(path)
    for i in range(3):
        log.put(f"cluster {i}", f"summary {i}")
    cut_last_line(path)
    resumed = SummaryLog(path)
    assert str(path) in caplog.text and sorted(resumed.done) == ["cluster 0", "cluster 1"]
    resumed.put("cluster 2", "summary 2")  # asked again
    resumed.put("cluster 3", "summary 3")
    assert SummaryLog(path).done == {f"cluster {i}": f"summary {i}" for i in range(4)}


def test_a_tree_built_carries_its_seconds_and_one_reused_from_disk_or_memory_none(server, tmp_path):
    texts = raptor_texts(11)  # at most reduction_dimension + 1 leaves: no clustering, no summary
    built = ask(server, "raptor", texts, tmp_path, {**EMBEDDER})
    from_disk = ask(server, "raptor", texts, tmp_path, {**EMBEDDER})
    llm = make_chat_model("openai:gpt-3.5-turbo", base_url=server.url, max_retries=0)
    corpus = Corpus.from_texts(texts, titles=[f"d{i}" for i in range(len(texts))])
    held = answer(corpus, QUESTION, strategy="raptor", llm=llm, cache_dir=tmp_path, **EMBEDDER)
    sources = [step(a, "build_tree")["source"] for a in (built, from_disk, held)]
    assert sources == ["built", "disk", "memory"]
    assert 0 < built.usage.index_seconds <= built.usage.seconds
    assert from_disk.usage.index_seconds == held.usage.index_seconds == 0
