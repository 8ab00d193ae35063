"""PAI end to end on the embedded GGUF model (no tool calling: the JSON fallback path)."""

import pytest

from longctx import answer
from longctx.retrieval import Corpus

pytestmark = pytest.mark.e2e


@pytest.mark.slow  # PAI end to end on the embedded model: ~5 s
def test_pai_completes_on_the_embedded_model():
    corpus = Corpus.from_texts(
        [
            "The museum vault is in the basement. The secret code of the museum vault is 7421.",
            "The harbour authority repainted the lighthouse after the winter storms.",
        ],
        titles=["Vault", "Harbour"],
    )
    result = answer(
        corpus,
        "What is the secret code of the museum vault?",
        strategy="pai",
        llm="embedded",
        chunk_size=32,
        max_items=2,
        retries=1,
        judge_retries=0,
        extract_max_tokens=96,
        judge_max_tokens=16,
        sub_answer_max_tokens=48,
        summary_max_tokens=48,
        sub_answer_context_tokens=256,
        concurrency=2,
    )
    extraction = next(s for s in result.steps if s["node"] == "extract_properties")
    judged = next(s for s in result.steps if s["node"] == "judge")
    assert extraction["tool_mode"] == "json" and judged["mode"] == "exhaustive"
    assert 1 <= len(extraction["sub_questions"]) <= 2
    assert (
        sum(s["judged"] for s in judged["per_sub_question"]) == len(extraction["sub_questions"]) * 2
    )  # 2 chunks
    assert (
        "Conclusion:" in result.answer
        and result.usage.llm_calls >= 4
        and result.usage.failed_calls == 0
    )
