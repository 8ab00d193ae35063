"""Self-Route graph logic with a scripted chat model: the three routes, decline detection,
usage, checkpoints."""

import asyncio
import math

import pytest

from longctx import Budget, aanswer, answer
from longctx.graphs import STRATEGIES, ConfigError, SelfRouteConfig, StrategyContext
from longctx.graphs.prompts import DEFAULT_INSTRUCTION, format_documents
from longctx.graphs.self_route import UNANSWERABLE_INSTRUCTION, find_decline
from longctx.retrieval import build_index, count_tokens
from longctx.retrieval.contract import Question
from tests.scripted import ScriptedChatModel

QUESTION = "What is the secret code of the museum vault?"


def is_rag(prompt: str) -> bool:
    return prompt.startswith("Please read the following retrieved text chunks")


def is_full(prompt: str) -> bool:
    return prompt.startswith("Please read the following text and")


def route_step(result) -> dict:
    return next(s for s in result.steps if "route" in s)


@pytest.mark.parametrize(
    "reply,declined",
    [
        ("unanswerable", True),
        ("Unanswerable.", True),
        ("**UNANSWERABLE**", True),
        ('"unanswerable"', True),
        ("The query is unanswerable based on the provided text.", True),
        ("Un-answerable!", True),
        ("", True),
        ("   \n", True),
        ("7421", False),
        ("The code is 7421.", False),
        ("The question is not unanswerable: the code is 7421.", False),
        ("It is answerable: 7421.", False),
    ],
)
def test_decline_detection_is_tolerant(reply, declined):
    assert (find_decline(reply) is not None) is declined


def test_defaults_are_li_et_al():
    cfg = STRATEGIES.get("self_route").make_config()
    assert (cfg.chunk_size, cfg.chunk_unit, cfg.top_k, cfg.fallback) == (
        300,
        "words",
        5,
        "full_context",
    )
    assert STRATEGIES.get("self_route").make_config("beyond-window").fallback == "memagent"
    assert STRATEGIES.get("self_route").make_config("paper").retriever == "contriever"


def test_route_1_rag_answers(planted_corpus):
    llm = ScriptedChatModel(replies=["7421"], context_window=100_000)
    result = answer(planted_corpus, QUESTION, strategy="self_route", llm=llm)
    prompt = llm.calls[0]["prompt"]
    assert len(llm.calls) == 1 and is_rag(prompt)
    assert prompt.endswith(f"{DEFAULT_INSTRUCTION}\n{UNANSWERABLE_INSTRUCTION}")
    assert result.answer == "7421" and result.evidence and len(result.evidence) <= 5
    assert route_step(result)["route"] == "rag"
    assert result.usage.llm_calls == 1


def test_route_2_declined_and_fits_goes_to_full_context(planted_corpus):
    llm = ScriptedChatModel(replies=["The query is Unanswerable.", "7421"], context_window=100_000)
    result = answer(planted_corpus, QUESTION, strategy="self_route", llm=llm)
    assert (
        len(llm.calls) == 2 and is_rag(llm.calls[0]["prompt"]) and is_full(llm.calls[1]["prompt"])
    )
    assert all(d.text in llm.calls[1]["prompt"] for d in planted_corpus)  # nothing truncated
    assert UNANSWERABLE_INSTRUCTION not in llm.calls[1]["prompt"]
    step = route_step(result)
    assert (
        step["route"] == "full_context"
        and "fits" in step["reason"]
        and step["prompt_tokens"] <= step["max_input_tokens"]
    )
    assert (
        next(s for s in result.steps if s["node"] == "check_answer")["reason"]
        == "reply says 'unanswerable'"
    )
    assert result.answer == "7421" and result.raw == "7421"
    assert result.evidence == []  # the declined RAG chunks are not the answer's evidence
    u = result.usage
    assert u.llm_calls == 2
    assert u.prompt_tokens == sum(len(c["prompt"].split()) for c in llm.calls)  # both legs summed
    assert u.completion_tokens == 4 + 1


def memagent_model(fact_reply: str = "Therefore, the answer is 7421.") -> ScriptedChatModel:
    def reply(prompt: str) -> str:
        if is_rag(prompt):
            return "unanswerable"
        if prompt.endswith("Updated memory:\n"):
            return "vault code 7421" if "7421" in prompt else "nothing yet"
        return fact_reply

    return ScriptedChatModel(reply_fn=reply, context_window=1000)


def test_route_3_declined_and_too_big_goes_to_memagent(planted_corpus):
    llm = memagent_model()
    options = {"chunk_tokens": 1000, "max_new_tokens": 64}
    result = answer(
        planted_corpus,
        QUESTION,
        strategy="self_route",
        llm=llm,
        fallback="memagent",
        fallback_options=options,
    )
    n_chunks = math.ceil(count_tokens(format_documents(planted_corpus.documents)) / 1000)
    assert count_tokens(format_documents(planted_corpus.documents)) > 1000 and n_chunks >= 3
    assert len(llm.calls) == 1 + n_chunks + 1
    assert not any(is_full(c["prompt"]) for c in llm.calls)
    step = route_step(result)
    assert step["route"] == "memagent" and "exceeds" in step["reason"]
    assert (
        result.answer == result.raw == "7421"
    )  # MemAgent's own format: scored as its extract_answer keeps it
    legs = [s for s in result.steps if s.get("leg") == "memagent"]
    assert (
        legs[0]["node"] == "fallback" and legs[0]["chunks"] == n_chunks and not legs[0]["replayed"]
    )
    assert sum(s["node"] == "update_memory" for s in legs) == n_chunks
    assert (
        llm.calls[1]["max_tokens"] == 64 and llm.calls[1]["temperature"] == 0.7
    )  # memagent's own sampling
    u = result.usage
    assert u.llm_calls == len(llm.calls) and u.failed_calls == 0
    assert u.prompt_tokens == sum(len(c["prompt"].split()) for c in llm.calls)


def test_memagent_fallback_is_checkpointed_and_replays(planted_corpus):
    options = {"chunk_tokens": 1000}
    first = answer(
        planted_corpus,
        QUESTION,
        strategy="self_route",
        llm=memagent_model(),
        fallback="memagent",
        fallback_options=options,
    )
    llm = memagent_model(fact_reply="never asked")
    again = answer(
        planted_corpus,
        QUESTION,
        strategy="self_route",
        llm=llm,
        fallback="memagent",
        fallback_options=options,
    )
    assert len(llm.calls) == 1 and is_rag(llm.calls[0]["prompt"])  # only the RAG leg runs again
    assert again.answer == first.answer == "7421"
    assert next(s for s in again.steps if s["node"] == "fallback")["replayed"]
    assert again.usage.llm_calls == 1


def test_memagent_fallback_without_resume_leaves_no_checkpoint(planted_corpus, isolated_cache):
    options = {"chunk_tokens": 1000, "resume": False}
    result = answer(
        planted_corpus,
        QUESTION,
        strategy="self_route",
        llm=memagent_model(),
        fallback="memagent",
        fallback_options=options,
    )
    assert result.answer == "7421"
    assert not (isolated_cache / "self_route").exists()


def test_full_context_fallback_truncates_like_li_et_al(planted_corpus):
    llm = ScriptedChatModel(replies=["unanswerable", "7421"], context_window=1000)
    result = answer(
        planted_corpus, QUESTION, strategy="self_route", llm=llm, fallback="full_context"
    )
    assert len(llm.calls) == 2 and is_full(llm.calls[1]["prompt"])
    assert (
        route_step(result)["route"] == "full_context" and "exceeds" in route_step(result)["reason"]
    )
    leg = next(
        s for s in result.steps if s.get("leg") == "full_context" and s["node"] == "build_prompt"
    )
    assert leg["truncated"] and result.answer == "7421" and result.usage.llm_calls == 2


def test_the_fallback_is_a_subgraph_of_self_route(planted_corpus):
    """The fallback strategy's own nodes are drawn, and streamed with subgraphs, under the
    ``fallback`` node."""
    spec = STRATEGIES.get("self_route")
    cfg = spec.make_config(fallback="full_context")
    graph = spec.build_graph(cfg)
    assert [name for name, _ in graph.get_subgraphs()] == ["fallback"]
    assert {"fallback:build_prompt", "fallback:generate"} <= set(graph.get_graph(xray=True).nodes)
    llm = ScriptedChatModel(replies=["unanswerable", "7421"], context_window=1000)
    index = build_index(planted_corpus, cfg.retriever, chunking=cfg.chunking())
    context = StrategyContext(llm=llm, config=cfg, corpus=planted_corpus, index=index)
    stream = graph.stream(
        {"question": Question(text=QUESTION), "steps": []},
        context=context,
        stream_mode="updates",
        subgraphs=True,
    )
    updates = list(stream)
    nested = [(namespace, update) for namespace, update in updates if namespace]
    assert {namespace[0].split(":")[0] for namespace, _ in nested} == {"fallback"}
    assert [node for _, update in nested for node in update] == [
        "build_prompt",
        "generate",
    ]  # full_context's graph
    assert [node for namespace, update in updates if not namespace for node in update][
        -1
    ] == "fallback"
    assert len(llm.calls) == 2


def test_the_fallback_subgraph_stops_at_the_budget(planted_corpus):
    llm = ScriptedChatModel(replies=["unanswerable", "7421"], context_window=1000)
    result = answer(
        planted_corpus,
        QUESTION,
        strategy="self_route",
        llm=llm,
        fallback="full_context",
        budget=Budget(max_llm_calls=1),
    )
    assert len(llm.calls) == 1 and result.stopped == "budget" and result.answer == ""
    assert (
        "full_context fallback" in next(s for s in result.steps if s["node"] == "stopped")["reason"]
    )


def test_the_fallback_subgraph_runs_under_aanswer(planted_corpus):
    llm = ScriptedChatModel(replies=["unanswerable", "7421"], context_window=1000)
    result = asyncio.run(
        aanswer(planted_corpus, QUESTION, strategy="self_route", llm=llm, fallback="full_context")
    )
    assert (
        result.answer == "7421" and result.usage.llm_calls == 2 and is_full(llm.calls[1]["prompt"])
    )
    assert [s["node"] for s in result.steps if s.get("leg") == "full_context"] == [
        "fallback",
        "build_prompt",
        "generate",
    ]


def test_unknown_fallback_fails_before_any_call(planted_corpus):
    llm = ScriptedChatModel(replies=[])
    with pytest.raises(ConfigError, match="memagent"):
        answer(planted_corpus, QUESTION, strategy="self_route", llm=llm, fallback="memagnet")
    with pytest.raises(ConfigError, match="did you mean 'chunk_tokens'"):
        answer(
            planted_corpus,
            QUESTION,
            strategy="self_route",
            llm=llm,
            fallback="memagent",
            fallback_options={"chunk_token": 10},
        )
    with pytest.raises(ValueError, match="own fallback"):
        answer(planted_corpus, QUESTION, strategy="self_route", llm=llm, fallback="self_route")
    assert llm.calls == []


def test_config_fields_carry_sources():
    import dataclasses

    fields = {f.name: f for f in dataclasses.fields(SelfRouteConfig)}
    assert (
        "Li et al." in fields["chunk_size"].metadata["source"]
        and "Li et al." in fields["top_k"].metadata["source"]
    )
