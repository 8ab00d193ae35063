"""RAPTOR's summaries and HippoRAG's OpenIE as Ray tasks (``map_executor="ray"``), against the
recording server: a Ray build sends exactly the requests a local build sends and builds the same
tree / graph (so the same nodes, ranking and answer), the answer's usage holds the workers' calls
as the server counted them, and a call that fails on a worker fails the answer with every
finished call kept (the rerun asks only the rest, counted at the server)."""

import json
import os
import re

import pytest

if os.environ.get("LONGCTX_REQUIRE_RAY") == "1":  # make test-ray (CI): a missing Ray is a failure
    import ray  # noqa: F401
else:
    pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("no_held_index_artifacts")]

from longctx import ChatModelError, answer, estimate, make_chat_model  # noqa: E402
from longctx.experiments.runner.changed_settings import changed_fields  # noqa: E402
from longctx.graphs.hipporag.build import forget_graphs  # noqa: E402
from longctx.graphs.hipporag.config import HippoRAGConfig  # noqa: E402
from longctx.graphs.plugin.config import ConfigError  # noqa: E402
from longctx.graphs.plugin.registry import STRATEGIES  # noqa: E402
from longctx.graphs.raptor import graph as raptor_graph  # noqa: E402
from longctx.graphs.raptor.config import RaptorConfig  # noqa: E402
from longctx.graphs.raptor.prompts import SUMMARY_SYSTEM  # noqa: E402
from longctx.retrieval import Corpus  # noqa: E402
from tests.recording_server import RecordingServer, prompt_of  # noqa: E402
from tests.test_raptor import QUESTIONS, corpus  # noqa: E402
from tests.test_raptor import reply as raptor_reply  # noqa: E402
from tests.test_ray import DriverOnlyModel, local_ray  # noqa: E402, F401  # local_ray: the module's 2-CPU Ray instance


class FailingServer(RecordingServer):
    """The recording server whose ``fail_at``-th request (counted from 1) matching ``which`` breaks
    its connection."""

    def __init__(self, reply, which, fail_at: int = 0):
        self.which, self.fail_at, self.seen = which, fail_at, 0
        super().__init__(lambda request: self._reply(reply, request))

    def _reply(self, reply, request: dict) -> str:
        if self.which(request):
            self.seen += 1
            if self.seen == self.fail_at:
                raise ConnectionAbortedError(
                    "the server went away"
                )  # the client sees a dropped connection
        return reply(request)


def bodies(requests: list[dict]) -> list[str]:
    """The request bodies (prompts, max_tokens, temperature, ...), sorted: the same set whatever
    the order."""
    return sorted(json.dumps(r, sort_keys=True) for r in requests)


def step(a, node: str) -> dict:
    return next(s for s in a.steps if s["node"] == node)


def without_key(facts: dict) -> dict:
    """A build step's facts less the artifact's key (it digests the model's base URL: each test
    server's own)."""
    return {k: v for k, v in facts.items() if k != "key"}


# -- RAPTOR ------------------------------------------------------------------------------------
def is_summary(request: dict) -> bool:
    return request["messages"][0]["content"] == SUMMARY_SYSTEM


def raptor_answer(url: str, cache, **options):
    llm = make_chat_model("openai:gpt-3.5-turbo", base_url=url, max_retries=0)
    return answer(
        corpus(),
        QUESTIONS[0],
        strategy="raptor",
        preset="paper",
        llm=llm,
        cache_dir=cache,
        **options,
    )


@pytest.mark.slow  # ~80 s on 2 shared cores: two trees (UMAP's numba compilation, MiniLM)
def test_raptor_summaries_on_ray_send_the_local_requests_and_build_the_same_tree(tmp_path):
    with RecordingServer(raptor_reply) as local_server, RecordingServer(raptor_reply) as ray_server:
        local = raptor_answer(local_server.url, tmp_path / "local", concurrency=2)
        local_tree = next(iter(raptor_graph._TREES.values()))
        raptor_graph._TREES.clear()
        remote = raptor_answer(
            ray_server.url,
            tmp_path / "ray",
            concurrency=2,
            map_executor="ray",
            ray_batch_clusters=2,
        )
        remote_tree = next(iter(raptor_graph._TREES.values()))
    asked = [r for r in ray_server.requests if is_summary(r)]
    assert len(asked) > 2  # more than one task's batch
    assert bodies(ray_server.requests) == bodies(local_server.requests)
    shape = [(n.index, n.layer, n.text, n.children, n.docs) for n in local_tree.nodes]
    assert [(n.index, n.layer, n.text, n.children, n.docs) for n in remote_tree.nodes] == shape
    assert step(remote, "retrieve")["nodes"] == step(local, "retrieve")["nodes"]
    assert remote.answer == local.answer
    build = step(remote, "build_tree")
    assert build["source"] == "built" and build["summaries_asked"] == len(asked)
    # the workers' calls are on the answer, as index-time work, as the server counted them
    u = remote.usage
    assert (u.llm_calls, u.index_llm_calls) == (len(ray_server.requests), len(asked))
    assert u.index_prompt_tokens == sum(len(prompt_of(r).split()) for r in asked)
    assert u.prompt_tokens == sum(len(prompt_of(r).split()) for r in ray_server.requests)
    assert (u.index_prompt_tokens, u.index_completion_tokens) == (
        local.usage.index_prompt_tokens,
        local.usage.index_completion_tokens,
    )


@pytest.mark.slow  # ~15 s: two tree builds
def test_a_summary_failing_on_a_worker_fails_the_answer_and_the_rerun_asks_only_the_rest(tmp_path):
    options = dict(concurrency=1, map_executor="ray", ray_batch_clusters=2, ray_max_in_flight=1)
    with FailingServer(raptor_reply, is_summary, fail_at=4) as server:
        with pytest.raises(ChatModelError):  # the worker's error, raised in the caller
            raptor_answer(server.url, tmp_path, **options)
        first = [prompt_of(r) for r in server.requests if is_summary(r)]
        finished = first[
            :-1
        ]  # the 4th broke: the first task's two and the second task's first are logged
        a = raptor_answer(server.url, tmp_path, **options)
    again = [prompt_of(r) for r in server.requests if is_summary(r)][len(first) :]
    total = step(a, "build_tree")["nodes_per_layer"][1]
    assert len(finished) == 3 and total > 4
    assert len(again) == total - 3 and not set(again) & set(
        finished
    )  # nothing finished asked twice
    assert a.usage.index_llm_calls == step(a, "build_tree")["summaries_asked"] == total - 3


# -- HippoRAG ----------------------------------------------------------------------------------
N_PASSAGES = 12
NAME = re.compile(r"Person \d+|City \d+|Topic \d+")
FACT = re.compile(r'\["[^"]*", "[^"]*", "[^"]*"\]')


PASSAGES = [
    f"Person {i} lives in City {i % 4} and works on Topic {i % 3}." for i in range(N_PASSAGES)
]


def passages() -> Corpus:
    return Corpus.from_texts(PASSAGES, titles=[f"p{i}" for i in range(N_PASSAGES)])


def hipporag_reply(request: dict) -> str:
    """NER: the passage's names; triples: where each person lives and works; the filter keeps the
    first candidate fact; the answer names a city."""
    system, last = request["messages"][0]["content"], request["messages"][-1]["content"]
    if system.startswith("Your task is to extract named entities"):
        return json.dumps({"named_entities": list(dict.fromkeys(NAME.findall(last)))})
    if "RDF" in system:
        p, c, t = NAME.findall(last.rsplit("Paragraph:", 1)[-1])[:3]
        return json.dumps({"triples": [[p, "lives in", c], [p, "works on", t]]})
    if "fact_before_filter" in last:
        facts = FACT.findall(last.rsplit("fact_before_filter", 1)[-1])
        return (
            f'[[ ## fact_after_filter ## ]]\n{{"fact": [{facts[0] if facts else ""}]}}\n\n'
            "[[ ## completed ## ]]"
        )
    return "Answer: City 3"


def is_openie(request: dict) -> bool:
    system = request["messages"][0]["content"]
    return system.startswith("Your task is to extract named entities") or "RDF" in system


def is_triples(request: dict) -> bool:
    return "RDF" in request["messages"][0]["content"]


def hipporag_answer(url: str, cache, **options):
    llm = make_chat_model("openai:gpt-4o-mini", base_url=url, max_retries=0)
    return answer(
        passages(),
        "Where does Person 7 live?",
        strategy="hipporag",
        llm=llm,
        cache_dir=cache,
        **options,
    )


@pytest.mark.slow  # ~12 s: two graph builds with MiniLM
def test_hipporag_openie_on_ray_sends_the_local_requests_and_builds_the_same_graph(tmp_path):
    with (
        RecordingServer(hipporag_reply) as local_server,
        RecordingServer(hipporag_reply) as ray_server,
    ):
        local = hipporag_answer(local_server.url, tmp_path / "local", concurrency=2)
        forget_graphs()
        remote = hipporag_answer(
            ray_server.url,
            tmp_path / "ray",
            concurrency=2,
            map_executor="ray",
            ray_batch_passages=5,
        )
    openie = [r for r in ray_server.requests if is_openie(r)]
    assert len(openie) == 2 * N_PASSAGES
    assert bodies(ray_server.requests) == bodies(local_server.requests)
    for node in ("index", "ppr"):  # the graph's facts and the ranking (its key names the server)
        assert without_key(step(remote, node)) == without_key(step(local, node))
    assert step(local, "ppr")["mode"] == "ppr"  # a graph with facts, ranked by PageRank
    assert [(e.doc_id, e.score) for e in remote.evidence] == [
        (e.doc_id, e.score) for e in local.evidence
    ]
    assert remote.answer == local.answer
    u = remote.usage
    assert (u.llm_calls, u.index_llm_calls) == (len(ray_server.requests), len(openie))
    assert u.index_prompt_tokens == sum(len(prompt_of(r).split()) for r in openie)
    assert (u.index_prompt_tokens, u.index_completion_tokens) == (
        local.usage.index_prompt_tokens,
        local.usage.index_completion_tokens,
    )


def test_an_openie_call_failing_on_a_worker_keeps_its_passages_ner_and_the_rerun_asks_only_the_rest(
    tmp_path,
):
    options = dict(concurrency=1, map_executor="ray", ray_batch_passages=3, ray_max_in_flight=1)
    # passages one at a time, NER then triples: the 8th triple call is passage 7's, after its NER
    with FailingServer(hipporag_reply, is_triples, fail_at=8) as server:
        with pytest.raises(ChatModelError):
            hipporag_answer(server.url, tmp_path, **options)
        first = [json.dumps(r, sort_keys=True) for r in server.requests if is_openie(r)]
        finished = first[:-1]
        a = hipporag_answer(server.url, tmp_path, **options)
    again = [json.dumps(r, sort_keys=True) for r in server.requests if is_openie(r)][len(first) :]
    assert len(finished) == 15  # passages 0-6 (two calls each) and passage 7's NER
    assert len(again) == 2 * N_PASSAGES - 15 and not set(again) & set(finished)
    assert "Person 7" in json.loads(again[0])["messages"][-1]["content"] and is_triples(
        json.loads(again[0])
    )
    assert a.usage.index_llm_calls == len(again)


def test_a_lost_ray_task_fails_the_build_naming_it(tmp_path):
    """A task Ray lost (here: a model that does not unpickle on a worker) fails the build: an index
    cannot be built without its calls (the structured Map stage degrades its documents instead)."""
    with pytest.raises(RuntimeError, match="HippoRAG OpenIE passages was lost"):
        answer(
            passages(),
            "Where?",
            strategy="hipporag",
            llm=DriverOnlyModel(),
            cache_dir=tmp_path,
            map_executor="ray",
        )


# -- options, plan, --ray ----------------------------------------------------------------------
@pytest.mark.parametrize("cls", [RaptorConfig, HippoRAGConfig])
def test_the_ray_options_are_validated_and_leave_the_estimate_unchanged(cls):
    with pytest.raises(ConfigError, match="needs map_executor='ray'"):
        cls(ray_address="auto")
    with pytest.raises(ConfigError, match="http"):
        cls(map_executor="ray", ray_endpoints=("gpu1:8000",))
    with pytest.raises(ConfigError):
        cls(ray_max_in_flight=0)
    name = "raptor" if cls is RaptorConfig else "hipporag"
    docs, llm = passages(), make_chat_model("openai:gpt-4o-mini", base_url="http://127.0.0.1:9/v1")
    local = estimate(docs, "q?", strategy=name, llm=llm)
    on_ray = estimate(docs, "q?", strategy=name, llm=llm, map_executor="ray", ray_max_in_flight=2)
    assert on_ray == local
    # where the stage runs is not a changed setting: a resumed run does not answer its rows again
    recorded = {"map_executor": "local", "ray_max_in_flight": 4, "top_k": 5}
    moved = {
        "map_executor": "ray",
        "ray_max_in_flight": 2,
        "ray_endpoints": ["http://a/v1"],
        "top_k": 5,
    }
    assert changed_fields(recorded, moved, name) == []
    assert changed_fields(recorded, {**moved, "top_k": 6}, name) == ["top_k: 5 -> 6"]
    stage = STRATEGIES.get(name).ray_stage  # longctx answer --ray / run --ray --endpoints
    assert stage is not None and stage.options("auto") == {
        "map_executor": "ray",
        "ray_address": "auto",
    }
    assert stage.spread({"map_executor": "ray"}, ["http://a/v1", "http://b/v1"])[
        "ray_endpoints"
    ] == ["http://a/v1", "http://b/v1"]
