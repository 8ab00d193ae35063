"""Graph logic of the rag and full_context strategies, driven by a scripted chat model."""

import re

import pytest

from longctx import Question, answer
from longctx.graphs.full_context import truncate_prompt
from longctx.graphs.prompts import DEFAULT_INSTRUCTION
from longctx.retrieval import Corpus, count_tokens, middle_truncate
from longctx.retrieval.tokens import decode, encode
from tests.scripted import ScriptedChatModel


def numbered_corpus() -> Corpus:
    """Ten documents; the query words appear in documents 8, 2 and 5 with falling strength."""
    texts = [f"Unrelated filler paragraph number {i} about gardens and weather." for i in range(10)]
    texts[8] = "zebra stripes"  # both terms, shortest: ranked first
    texts[2] = "zebra stripes and some more words in this one"
    texts[5] = "zebra and many other words about gardens and weather here"
    return Corpus.from_texts(texts, titles=[f"Doc{i}" for i in range(10)])


def chunk_order_in_prompt(prompt: str) -> list[str]:
    return re.findall(r'Retrieved chunk \d+ \(from "(Doc\d+)"\)', prompt)


def test_rag_prompt_holds_top_k_chunks_in_document_order():
    llm = ScriptedChatModel(replies=["stripes"])
    result = answer(numbered_corpus(), "zebra stripes", llm=llm, top_k=3, order="document")
    assert result.answer == "stripes"
    assert [e.title for e in result.evidence] == ["Doc8", "Doc2", "Doc5"]  # evidence stays ranked
    assert chunk_order_in_prompt(llm.calls[0]["prompt"]) == [
        "Doc2",
        "Doc5",
        "Doc8",
    ]  # prompt in corpus order
    assert llm.calls[0]["max_tokens"] == 128 and llm.calls[0]["temperature"] == 0.0


def test_rag_rank_order_is_the_default():
    llm = ScriptedChatModel(replies=["x"])
    answer(numbered_corpus(), "zebra stripes", llm=llm, top_k=3)
    assert chunk_order_in_prompt(llm.calls[0]["prompt"]) == ["Doc8", "Doc2", "Doc5"]


@pytest.mark.parametrize("top_k", [1, 2, 7])
def test_rag_top_k_is_what_the_config_says(top_k):
    corpus = Corpus.from_texts([f"zebra note {i} " + "filler " * i for i in range(10)])
    llm = ScriptedChatModel(replies=["x"])
    result = answer(corpus, "zebra", llm=llm, top_k=top_k)
    assert len(result.evidence) == top_k
    assert len(chunk_order_in_prompt(llm.calls[0]["prompt"].replace("Document ", "Doc"))) == top_k
    assert result.steps[0] == {**result.steps[0], "node": "retrieve", "top_k": top_k}


def test_question_choices_and_instruction_reach_the_prompt():
    llm = ScriptedChatModel(replies=["The correct answer is (B)"])
    question = Question(
        text="Which animal has stripes?",
        choices={"A": "lion", "B": "zebra"},
        instruction=(
            'Format your response as follows: "The correct answer is (insert answer here)".'
        ),
    )
    result = answer(numbered_corpus(), question, llm=llm, top_k=2)
    prompt = llm.calls[0]["prompt"]
    assert "Which animal has stripes?\nChoices:\n(A) lion\n(B) zebra" in prompt
    assert prompt.endswith(question.instruction) and DEFAULT_INSTRUCTION not in prompt
    assert result.raw == "The correct answer is (B)"


def test_usage_is_counted_from_the_model_report():
    llm = ScriptedChatModel(replies=["one two three"])
    result = answer(numbered_corpus(), "zebra", llm=llm, top_k=2)
    u = result.usage
    assert (u.llm_calls, u.failed_calls, u.completion_tokens, u.estimated) == (1, 0, 3, False)
    assert u.prompt_tokens == len(llm.calls[0]["prompt"].split())
    assert u.seconds >= u.index_seconds >= 0


def test_usage_is_estimated_when_the_model_reports_none():
    llm = ScriptedChatModel(replies=["seven"], report_usage=False)
    result = answer(numbered_corpus(), "zebra", llm=llm, top_k=2)
    assert result.usage.estimated
    assert result.usage.completion_tokens == 1
    assert result.usage.prompt_tokens == count_tokens(llm.calls[0]["prompt"])


def test_full_context_sends_every_document_when_it_fits():
    llm = ScriptedChatModel(replies=["ok"], context_window=8000)
    corpus = numbered_corpus()
    result = answer(corpus, "What is there?", strategy="full_context", llm=llm)
    prompt = llm.calls[0]["prompt"]
    assert all(d.text in prompt for d in corpus)
    assert result.evidence == [] and result.steps[0]["truncated"] is False


def test_full_context_middle_truncates_to_window_minus_output_budget():
    corpus = Corpus.from_texts(
        [f"Paragraph {i}: " + "lorem ipsum dolor sit amet " * 40 for i in range(30)]
    )
    llm = ScriptedChatModel(replies=["ok"], context_window=2000)
    result = answer(
        corpus,
        "What is the last paragraph number?",
        strategy="full_context",
        llm=llm,
        max_new_tokens=100,
    )
    prompt = llm.calls[0]["prompt"]
    budget = 2000 - 100 - 64
    assert result.steps[0]["max_input_tokens"] == budget and result.steps[0]["truncated"]
    assert (
        budget - 2 <= count_tokens(prompt) <= budget + 2
    )  # re-tokenizing the seam may merge a pair
    assert prompt.startswith("Please read the following text")  # head survives
    assert (
        prompt.endswith(DEFAULT_INSTRUCTION) and "What is the last paragraph number?" in prompt
    )  # tail survives
    assert "Paragraph 0:" in prompt and "Paragraph 29:" in prompt and "Paragraph 15:" not in prompt


def test_context_window_config_overrides_the_model():
    llm = ScriptedChatModel(replies=["ok"], context_window=100_000)
    corpus = Corpus.from_texts(["word " * 3000])
    result = answer(corpus, "q?", strategy="full_context", llm=llm, context_window=1000)
    assert result.steps[0]["max_input_tokens"] == 1000 - 128 - 64


@pytest.mark.parametrize("budget", [50, 51, 400])
def test_truncating_only_the_ends_of_a_huge_prompt_equals_truncating_everything(budget):
    prompt = " ".join(f"token{i}" for i in range(4000))
    assert len(prompt) > 2 * 16 * budget  # takes the fast path
    fast, truncated = truncate_prompt(prompt, budget, encode, decode)
    kept = middle_truncate(encode(prompt), budget)
    assert truncated and fast == decode(kept[: budget // 2]) + decode(kept[budget // 2 :])


def test_unknown_config_key_fails_before_any_call():
    llm = ScriptedChatModel(replies=[])
    with pytest.raises(TypeError, match="did you mean 'top_k'"):
        answer(numbered_corpus(), "zebra", llm=llm, topk=3)
    assert llm.calls == []


def test_answer_rejects_non_corpus_input():
    with pytest.raises(TypeError, match="Corpus.from_path"):
        answer("some/path", "q", llm=ScriptedChatModel(replies=["x"]))


def test_answer_to_dict_is_json_ready():
    import json

    result = answer(numbered_corpus(), "zebra", llm=ScriptedChatModel(replies=["x"]), top_k=1)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["strategy"] == "rag" and data["usage"]["total_tokens"] == result.usage.total_tokens
    assert data["config"]["top_k"] == 1 and data["config"]["llm"] == "ScriptedChatModel"
