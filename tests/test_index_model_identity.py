"""Index-time caches are keyed by the model, not by its server's address (issue 46, item 14).

The same model behind another port used to ask every RAPTOR summary and every HippoRAG extraction
again (27 summaries, 40 extraction calls in the review): the keys held ``name @ url``. They hold the
model's name and every setting its requests carry; another name or other settings still ask anew.
"""

from __future__ import annotations

import shutil

from longctx import answer, make_chat_model
from longctx.graphs.hipporag.build import forget_graphs
from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.store import graph_key, model_key
from longctx.graphs.raptor.config import RaptorConfig
from longctx.graphs.raptor.store import summary_key, tree_key
from longctx.graphs.structured.mapping import extraction_model
from longctx.retrieval import Corpus
from tests.recording_server import RecordingServer

DOCS = [
    "Radio City is India's first private FM radio station, started in Bangalore.",
    "Bangalore is a city in India with many radio stations.",
    "Oslo is the capital of Norway.",
]


def _reply(request: dict) -> str:
    system = request["messages"][0]["content"]
    if system.startswith("Your task is to extract named entities"):
        return '{"named_entities": ["Bangalore", "India"]}'
    if "RDF" in system:
        return '{"triples": [["Bangalore", "is a city in", "India"]]}'
    return "Bangalore"


def test_the_keys_name_the_model_and_its_settings_not_its_address():
    corpus = Corpus.from_texts(DOCS)
    here = make_chat_model("openai:m", base_url="http://127.0.0.1:8001/v1")
    there = make_chat_model("openai:m", base_url="http://10.0.0.7:9000/v1")
    other = make_chat_model("openai:m2", base_url="http://127.0.0.1:8001/v1")
    tuned = make_chat_model("openai:m", base_url="http://127.0.0.1:8001/v1", temperature=0.5)
    raptor, hippo = RaptorConfig(), HippoRAGConfig()
    keys = [
        lambda llm: tree_key(corpus, raptor, llm),
        lambda llm: summary_key(raptor, llm),
        lambda llm: graph_key(corpus, hippo, llm),
        model_key,
        extraction_model,
    ]
    for key in keys:
        assert key(here) == key(there)
        assert len({key(here), key(other), key(tuned)}) == 3


def test_hipporag_on_another_port_asks_no_index_call_again(tmp_path):
    """Built at one port; the same model at another port finds the graph, and without the graph the
    OpenIE logs: no extraction call is asked again, only the question's own calls."""
    corpus = Corpus.from_texts(DOCS)
    question = "Where was Radio City started?"
    index_calls = []
    with RecordingServer(_reply) as a, RecordingServer(_reply) as b, RecordingServer(_reply) as c:
        assert len({a.url, b.url, c.url}) == 3
        for server in (a, b, c):
            if server is c:  # the graph gone: rebuilt from the OpenIE logs
                shutil.rmtree(tmp_path / "hipporag" / "graphs")
            forget_graphs()
            llm = make_chat_model("openai:gpt-4o-mini", base_url=server.url, max_retries=0)
            result = answer(corpus, question, strategy="hipporag", llm=llm, cache_dir=tmp_path)
            index_calls.append(result.usage.index_llm_calls)
            assert result.usage.llm_calls - result.usage.index_llm_calls == len(
                [
                    r
                    for r in server.requests
                    if "RDF" not in r["messages"][0]["content"]
                    and "named entities" not in r["messages"][0]["content"]
                ]
            )
    forget_graphs()
    assert index_calls == [2 * len(DOCS), 0, 0]
    assert len(b.requests) == len(c.requests) < len(a.requests)
