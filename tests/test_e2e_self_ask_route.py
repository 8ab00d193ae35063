"""Self-Ask and Self-Route end to end on the embedded model (SmolLM2-135M, in-process),
kept short."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from longctx import answer, make_chat_model

pytestmark = pytest.mark.e2e
QUESTION = "What is the secret code of the museum vault?"


@pytest.fixture(scope="module")
def embedded():
    return make_chat_model("embedded")


class DecliningRag(BaseChatModel):
    """The embedded model, except that it declines every RAG prompt (SmolLM2-135M never declines on
    its own)."""

    inner: Any

    @property
    def _llm_type(self) -> str:
        return "declining-rag"

    @property
    def context_window(self) -> int:
        return self.inner.context_window

    def tokenize(self, text: str) -> list[int]:
        return self.inner.tokenize(text)

    def detokenize(self, ids: list[int]) -> str:
        return self.inner.detokenize(ids)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if str(messages[-1].content).startswith("Please read the following retrieved text chunks"):
            usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}
            return ChatResult(
                generations=[
                    ChatGeneration(message=AIMessage(content="Unanswerable.", usage_metadata=usage))
                ]
            )
        return self.inner._generate(messages, stop=stop, **kwargs)


def test_self_route_answers_from_rag_on_the_embedded_model(planted_corpus, embedded):
    result = answer(
        planted_corpus, QUESTION, strategy="self_route", llm=embedded, top_k=2, chunk_size=60
    )
    route = next(s for s in result.steps if "route" in s)
    assert (
        route["route"] == "rag" and result.usage.llm_calls == 1
    )  # SmolLM2-135M answers rather than declines
    assert result.evidence[0].title == "Vault" and "7421" in result.answer
    assert not result.usage.estimated and result.usage.failed_calls == 0


@pytest.mark.slow  # minutes on 2 cores: run by make test-all
def test_self_route_memagent_leg_on_the_embedded_model(planted_corpus, embedded):
    """Declined (scripted) and larger than a 2,000-token window: memagent reads the corpus on the
    real model."""
    llm = DecliningRag(inner=embedded)
    options = {"chunk_tokens": 1500, "max_new_tokens": 48, "temperature": 0.0}
    result = answer(
        planted_corpus,
        QUESTION,
        strategy="self_route",
        llm=llm,
        top_k=2,
        chunk_size=60,
        context_window=2000,
        fallback="memagent",
        fallback_options=options,
    )
    route = next(s for s in result.steps if "route" in s)
    leg = next(s for s in result.steps if s["node"] == "fallback")
    assert route["route"] == "memagent" and leg["chunks"] >= 2 and result.evidence == []
    assert (
        result.usage.llm_calls == 1 + leg["chunks"] + 1 and not result.usage.estimated
    )  # both legs counted
    assert result.usage.prompt_tokens > 1500 * leg["chunks"] // 2 and result.answer


@pytest.mark.slow  # the Self-Ask loop on the embedded model: ~4-14 s
def test_self_ask_runs_its_loop_on_the_embedded_model(planted_corpus, embedded, capsys):
    """The FlashRAG loop completes within its cap of generator calls and every call is counted."""
    result = answer(
        planted_corpus,
        QUESTION,
        strategy="self_ask",
        llm=embedded,
        top_k=2,
        chunk_size=60,
        max_iterations=2,
    )
    finish = result.steps[-1]
    nodes = [s["node"] for s in result.steps]
    assert finish["node"] == "finish" and finish["generator_calls"] == nodes.count("generate") <= 2
    assert result.usage.llm_calls == nodes.count("generate") and not result.usage.estimated
    assert nodes.count("retrieve") == 1 and nodes.count("retrieve_follow_up") <= 1
    assert result.raw == result.answer and (not result.raw or finish["final_answer_found"])
    with capsys.disabled():
        print(
            "\n[self_ask e2e] follow-ups: "
            f"{[s['query'] for s in result.steps if s['node'] == 'retrieve_follow_up']}, exit: "
            f"{finish['exit']}, answer: {result.answer[:80]!r}, {result.usage.llm_calls} calls"
        )
