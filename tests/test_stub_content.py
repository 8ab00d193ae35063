"""The stub's content replies (``stub_server --content``) read by our own parsers, and its
embeddings route read by the ``openai`` embedder: what ``bench_index_build`` relies on for realistic
index builds."""

from __future__ import annotations

import numpy as np

from benchmarks.stub_content import (
    NER_SYSTEM_START,
    SUMMARY_PREFIX,
    TRIPLE_SYSTEM_START,
    content_reply,
    entities_of,
    hashed_vector,
)
from benchmarks.stub_server import stub_server
from longctx.graphs.hipporag import prompts as HP
from longctx.graphs.hipporag.openie import parse_entities, parse_triples
from longctx.graphs.hipporag.requests import ner_messages, triple_messages
from longctx.graphs.raptor import prompts as RP

PASSAGE = """Dalcrest Petroleum Corporation
Revenue at Dalcrest Petroleum Corporation rose to $459.0 million in FY2022 across Latin America.
Exposure to litigation remained a concern, and the board met Kingswell Biosciences on 2023-02-02."""


def test_requests_are_recognised_by_the_official_prompts_openings():
    assert RP.SUMMARY_TEMPLATE.format(context="X").startswith(SUMMARY_PREFIX)
    assert HP.NER_SYSTEM.startswith(NER_SYSTEM_START)
    assert HP.TRIPLE_SYSTEM.startswith(TRIPLE_SYSTEM_START)
    assert content_reply({"messages": [{"role": "user", "content": "Question: who?"}]}) is None


def test_ner_and_triple_replies_parse_with_our_parsers_into_the_passages_names():
    entities = parse_entities(content_reply({"messages": ner_messages(PASSAGE)}) or "")
    assert entities == entities_of(PASSAGE)
    assert {
        "Dalcrest Petroleum Corporation",
        "$459.0",
        "FY2022",
        "Latin America",
        "Kingswell Biosciences",
        "2023-02-02",
    } <= set(entities)
    assert (
        "Exposure" not in entities and "Revenue" not in entities
    )  # a sentence's first word is no name
    triples = parse_triples(content_reply({"messages": triple_messages(PASSAGE, entities)}) or "")
    assert triples and all(t[0] in entities and t[2] in entities for t in triples)
    assert ["Dalcrest Petroleum Corporation", "rose", "$459.0"] in triples


def test_a_summary_has_the_budgeted_length_in_the_clustered_nodes_own_words():
    nodes = [" ".join(f"alpha{i}" for i in range(100)), " ".join(f"beta{i}" for i in range(100))]
    turn = RP.SUMMARY_TEMPLATE.format(context=RP.node_context(nodes))
    reply = content_reply({"messages": [{"role": "user", "content": turn}], "max_tokens": 40}) or ""
    words = reply.split()
    assert len(words) == 30 and set(words) <= set(" ".join(nodes).split())
    assert (
        words[:8] == nodes[0].split()[:8] and words[8:16] == nodes[1].split()[:8]
    )  # every node in turn


def test_the_stub_serves_embeddings_to_the_openai_embedder_and_content_replies_to_chat():
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI

    from longctx.retrieval.embedders import OpenAIEmbedder

    texts = ["Dalcrest Petroleum Corporation", "Dalcrest Petroleum", "Kingswell Biosciences AG", ""]
    with stub_server(latency=0.0, content=True) as url:
        vectors = OpenAIEmbedder("stub-embedding", base_url=url, api_key="stub").embed_documents(
            texts
        )
        llm = ChatOpenAI(model="stub", base_url=url, api_key="stub", max_retries=0)  # type: ignore[arg-type]
        reply = llm.invoke(
            [SystemMessage(content=HP.NER_SYSTEM), HumanMessage(content=PASSAGE)]
        ).content
    assert vectors.shape == (4, 384)
    assert np.allclose(vectors, [hashed_vector(t) for t in texts], atol=1e-6)
    assert (
        float(vectors[0] @ vectors[1]) > 0.8 > float(vectors[0] @ vectors[2])
    )  # shared words are near
    assert parse_entities(str(reply)) == entities_of(PASSAGE)
