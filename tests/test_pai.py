"""PAI and PAI- graph logic, driven by a scripted tool-calling chat model."""

from __future__ import annotations

import re
import threading

import pytest

from longctx import Question, answer
from longctx.graphs.pai import PaiConfig, build_graph, choose_mode
from longctx.graphs.pai import prompts as P
from longctx.retrieval import ChunkingConfig, Corpus, chunk_corpus
from tests.scripted_tools import ToolScriptedChatModel, malformed_tool_call

FILLER = (
    "The annual report committee met on a rainy afternoon and discussed the parking rules at "
    "great length. " * 6
)
COMPANIES = {"Alpha Corp": "120 million", "Beta Ltd": "75 million", "Gamma Inc": "310 million"}
CHUNK = 64  # tokens per chunk in these tests (the default is the paper's 1,024)


def company_corpus() -> Corpus:
    """One report per company; the revenue sentence sits between filler, so each report spans
    several chunks."""
    texts = [
        f"{FILLER}In its annual report, {name} stated that its revenue was {value}. {FILLER}"
        for name, value in COMPANIES.items()
    ]
    return Corpus.from_texts(texts, titles=[f"{name} annual report" for name in COMPANIES])


def n_chunks(corpus: Corpus) -> int:
    return len(chunk_corpus(corpus, ChunkingConfig(unit="tokens", size=CHUNK)))


PROPERTIES = [{"metric": "revenue", "subject": f"{name} annual report"} for name in COMPANIES]


def world(prompt: str, tools) -> object:
    """A well-behaved model: properties, judge by content, sub-answers from the context,
    a conclusion."""
    if prompt.startswith("Identify the key properties"):
        return PROPERTIES
    if prompt.startswith("Break the query"):
        return [{"sub_question": f"What was the revenue of {name}?"} for name in COMPANIES]
    if prompt.startswith("Query: "):
        sub_question, chunk = prompt.split("\n", 1)
        name = next((n for n in COMPANIES if n in sub_question), "")  # "": the whole question
        return [{"keep_context": f"{name} stated that its revenue" in chunk}]
    if prompt.startswith("Answer the sub-question"):
        context = prompt.split("<context>")[1].split("</context>")[0]
        found = re.findall(r"(\w+ \w+) stated that its revenue was (\d+ million)", context)
        return (
            "; ".join(f"In {n} annual report, the revenue is {v}." for n, v in found) or "not found"
        )
    if prompt.startswith("Answer the question below"):
        return "Conclusion: Gamma Inc"
    raise AssertionError(f"unexpected prompt: {prompt[:80]}")


def model(reply_fn=world, **kw) -> ToolScriptedChatModel:
    return ToolScriptedChatModel(reply_fn=reply_fn, **kw)


def calls_of(llm: ToolScriptedChatModel, prefix: str) -> list[dict]:
    return [c for c in llm.calls if c["prompt"].startswith(prefix)]


def run(llm, question="Which company had the highest revenue?", strategy="pai", **config):
    return answer(
        company_corpus(), question, strategy=strategy, llm=llm, chunk_size=CHUNK, **config
    )


def step(result, node: str) -> dict:
    return next(s for s in result.steps if s["node"] == node)


def test_function_schemas_are_the_papers_with_domain_examples():
    keep = P.KEEP_CONTEXT_FUNCTION["function"]
    assert keep["name"] == "Query" and keep["strict"] is True
    assert keep["parameters"]["properties"]["keep_context"]["description"] == (
        "Does the provided context contain information needed to answer the query? Answer 'true' "
        "or 'false'"
    )
    finance = P.fill_schema(P.PROPERTY_FUNCTION, "finance")["function"]["parameters"]["properties"]
    assert 'Examples include "profit", "revenue", and "debt".' in finance["metric"]["description"]
    assert 'such as "financial document title".' in finance["subject"]["description"]
    assert (
        "{metric_example}"
        in P.PROPERTY_FUNCTION["function"]["parameters"]["properties"]["metric"]["description"]
    )
    assert (
        P.SUB_QUESTION_TEMPLATE.format(metric="revenue", subject="X report")
        == "What was the revenue of the X report?"
    )
    assert PaiConfig().chunk_size == 1024 and PaiConfig().chunk_unit == "tokens"


def test_exhaustive_judge_calls_are_properties_times_chunks():
    llm = model()
    result = run(llm)
    judge_calls = calls_of(llm, "Query: ")
    assert len(judge_calls) == len(PROPERTIES) * n_chunks(company_corpus())
    assert all(
        c["tool_choice"] == "Query" and c["tools"][0]["function"]["name"] == "Query"
        for c in judge_calls
    )
    assert step(result, "plan_judging")["mode"] == "exhaustive"
    judged = step(result, "judge")
    assert (
        judged["mode"] == "exhaustive"
        and [s["judged"] for s in judged["per_sub_question"]] == [n_chunks(company_corpus())] * 3
    )
    assert [s["kept"] for s in judged["per_sub_question"]] == [1, 1, 1] and judged[
        "malformed"
    ] == []


@pytest.mark.parametrize("top_k", [1, 4])
def test_prefiltered_judge_calls_are_properties_times_k(top_k):
    llm = model()
    result = run(llm, judge_mode="prefilter", top_k=top_k)
    assert len(calls_of(llm, "Query: ")) == len(PROPERTIES) * top_k
    plan = step(result, "plan_judging")
    assert plan["mode"] == "prefilter" and plan["retriever"] == "bm25" and plan["top_k"] == top_k
    assert step(result, "judge")["mode"] == "prefilter"


def test_auto_mode_is_exhaustive_up_to_the_configured_corpus_size():
    assert (
        choose_mode(PaiConfig(), 250_000) == "exhaustive"
        and choose_mode(PaiConfig(), 300_000) == "prefilter"
    )
    assert choose_mode(PaiConfig(judge_mode="exhaustive"), 10**7) == "exhaustive"
    llm = model()
    result = run(llm, exhaustive_max_tokens=10, top_k=2)
    assert (
        step(result, "plan_judging")["mode"] == "prefilter"
        and len(calls_of(llm, "Query: ")) == 3 * 2
    )


def test_kept_chunks_reach_their_own_sub_answer_and_the_evidence():
    llm = model()
    result = run(llm)
    for call in calls_of(llm, "Answer the sub-question"):
        name = next(
            n
            for n in COMPANIES
            if f"What was the revenue of the {n} annual report?" in call["prompt"]
        )
        context = call["prompt"].split("</context>")[0]
        assert f"{name} stated that its revenue was {COMPANIES[name]}" in context
        assert all(f"{other} stated" not in context for other in COMPANIES if other != name)
        assert f'"In {name} annual report, the revenue is <value>."' in call["prompt"]
    assert [e.title for e in result.evidence] == [f"{n} annual report" for n in COMPANIES]
    assert all("stated that its revenue" in e.text for e in result.evidence)
    subs = step(result, "sub_answer")["sub_answers"]
    assert [s["text"] for s in subs] == [
        f"In {n} annual report, the revenue is {v}." for n, v in COMPANIES.items()
    ]


def test_output_is_the_papers_cot_and_the_instruction_shapes_the_conclusion():
    llm = model()
    question = Question(
        text="Which company had the highest revenue?",
        instruction='Answer with "The answer is: NAME".',
    )
    result = run(llm, question)
    summary = calls_of(llm, "Answer the question below")[0]["prompt"]
    assert summary.rstrip().endswith('Answer with "The answer is: NAME".')
    assert "- In Beta Ltd annual report, the revenue is 75 million." in summary
    assert result.answer.startswith(
        "This question demands further reasoning: <reasoning> This question focuses on the key "
        "properties as follows:\n{'metric': 'revenue', 'subject': 'Alpha Corp annual report'}"
    )
    assert (
        "The reasoning steps have been completed. </reasoning> Conclusion: Gamma Inc"
        in result.answer
    )
    assert result.raw == "Conclusion: Gamma Inc"
    assert run(model(), question, output="conclusion").answer == "Gamma Inc"
    assert step(result, "extract_properties")["items"] == PROPERTIES


def test_nothing_kept_gives_a_not_found_sub_answer_without_a_call():
    def reply(prompt, tools):
        if prompt.startswith("Query: ") and "Beta" in prompt.split("\n", 1)[0]:
            return [{"keep_context": False}]
        return world(prompt, tools)

    llm = model(reply)
    result = run(llm)
    assert len(calls_of(llm, "Answer the sub-question")) == 2
    beta = step(result, "sub_answer")["sub_answers"][1]
    assert (
        beta["called"] is False
        and "In Beta Ltd annual report, the revenue is not found" in beta["text"]
    )
    assert [e.title for e in result.evidence] == [
        "Alpha Corp annual report",
        "Gamma Inc annual report",
    ]


def test_malformed_property_output_is_retried_then_degraded_with_the_errors_recorded():
    def reply(prompt, tools):
        if prompt.startswith("Identify the key properties"):
            return (
                malformed_tool_call() if "previous reply" not in prompt else [{"metric": "revenue"}]
            )
        return world(prompt, tools)

    llm = model(reply)
    result = run(llm)
    extraction = calls_of(llm, "Identify the key properties")
    assert len(extraction) == 3  # 1 + retries (2)
    assert (
        "not valid JSON" in extraction[0]["prompt"] or "previous reply" in extraction[1]["prompt"]
    )
    s = step(result, "extract_properties")
    assert (
        s["attempts"] == 3
        and len(s["errors"]) == 3
        and "subject: Field required" in s["errors"][-1]
    )
    assert "degraded" in s and s["sub_questions"] == ["Which company had the highest revenue?"]
    assert len(calls_of(llm, "Query: ")) == n_chunks(
        company_corpus()
    )  # one sub-question: the question
    assert "This question is decomposed into the sub-questions" in result.answer


def test_a_retry_that_succeeds_keeps_the_earlier_error():
    replies = iter([[{"metric": "", "subject": "x"}], PROPERTIES])

    def reply(prompt, tools):
        return next(replies) if prompt.startswith("Identify") else world(prompt, tools)

    result = run(model(reply))
    s = step(result, "extract_properties")
    assert (
        s["attempts"] == 2
        and len(s["errors"]) == 1
        and "degraded" not in s
        and s["items"] == PROPERTIES
    )


def test_malformed_verdicts_are_retried_then_recorded_and_dropped():
    def reply(prompt, tools):
        if (
            prompt.startswith("Query: ")
            and "Alpha" in prompt.split("\n", 1)[0]
            and "Alpha Corp stated" in prompt
        ):
            return "I think so"
        return world(prompt, tools)

    llm = model(reply)
    result = run(llm)
    judged = step(result, "judge")
    assert len(judged["malformed"]) == 1 and "no JSON object" in judged["malformed"][0]["error"]
    assert (
        judged["per_sub_question"][0]["kept"] == 0
        and judged["per_sub_question"][0]["malformed"] == 1
    )
    assert len(calls_of(llm, "Query: ")) == 3 * n_chunks(company_corpus()) + 1  # one retry
    assert judged["calls"] == 3 * n_chunks(company_corpus()) + 1
    kept = run(model(reply), on_malformed_judgment="keep")
    assert step(kept, "judge")["per_sub_question"][0]["kept"] == 1


def test_json_fallback_when_the_model_has_no_tools():
    def reply(prompt, tools):
        assert tools is None
        if prompt.startswith("Identify the key properties"):
            assert '{"items": [{"metric": "...", "subject": "..."}]}' in prompt
            return "```json\n" + str(PROPERTIES).replace("'", '"') + "\n```"
        if prompt.startswith("Query: "):
            assert prompt.rstrip().endswith("Answer 'true' or 'false'")
            keep = world(prompt, tools)[0]["keep_context"]
            return f'{{"keep_context": {str(keep).lower()}}}'
        return world(prompt, tools)

    llm = model(reply, supports_tools=False)
    result = run(llm)
    assert step(result, "extract_properties")["tool_mode"] == "json"
    assert step(result, "judge")["malformed"] == [] and len(result.evidence) == 3


def test_list_valued_property_calls():
    def reply(prompt, tools):
        if prompt.startswith("Identify the key properties"):
            assert tools[0]["function"]["parameters"]["properties"]["items"]["type"] == "array"
            return [{"items": PROPERTIES}]
        return world(prompt, tools)

    llm = model(reply)
    result = run(llm, property_calls="list")
    assert calls_of(llm, "Identify")[0]["tool_choice"] == "Query"
    assert step(result, "extract_properties")["items"] == PROPERTIES and len(result.evidence) == 3


def test_parallel_property_calls_use_the_verbatim_schema_and_dedupe_and_cap():
    def reply(prompt, tools):
        if prompt.startswith("Identify"):
            assert tools[0]["function"]["parameters"]["required"] == ["metric", "subject"]
            return PROPERTIES + PROPERTIES[:1]
        return world(prompt, tools)

    llm = model(reply)
    result = run(llm, max_items=2, domain="legal")
    s = step(result, "extract_properties")
    assert (
        s["repeats_removed"] == 1
        and s["cut_over_max_items"] == PROPERTIES[2:]
        and s["domain"] == "legal"
    )
    assert calls_of(llm, "Identify")[0]["tool_choice"] == "any"
    assert (
        '"verdict"'
        in calls_of(llm, "Identify")[0]["tools"][0]["function"]["parameters"]["properties"][
            "metric"
        ]["description"]
    )
    assert len(calls_of(llm, "Query: ")) == 2 * n_chunks(company_corpus())


def test_domain_auto_reads_the_question_metadata():
    llm = model()
    result = run(
        llm,
        Question(text="Which company had the highest revenue?", metadata={"domain": "financial"}),
    )
    assert step(result, "extract_properties")["domain"] == "finance"


def test_pai_minus_generates_sub_questions_directly():
    llm = model()
    result = run(llm, strategy="pai_minus")
    s = step(result, "generate_sub_questions")
    assert s["sub_questions"] == [f"What was the revenue of {n}?" for n in COMPANIES]
    assert len(calls_of(llm, "Query: ")) == 3 * n_chunks(company_corpus())
    assert result.answer.startswith(
        "This question demands further reasoning: <reasoning> This question is decomposed into "
        "the sub-questions as follows:\nWhat was the revenue of Alpha Corp?"
    )
    assert len(result.evidence) == 3


def test_judge_fan_out_respects_max_concurrency():
    lock, state = threading.Lock(), {"now": 0, "peak": 0, "judges": 0}
    first_three = threading.Barrier(
        3, timeout=60
    )  # the first three judges wait for each other: fewer at once breaks it

    def reply(prompt, tools):
        if prompt.startswith("Query: "):
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
                state["judges"] += 1
                first = state["judges"] <= 3
            if first:
                first_three.wait()
            with lock:
                state["now"] -= 1
        return world(prompt, tools)

    assert build_graph(PaiConfig(concurrency=3)).config["max_concurrency"] == 3
    run(model(reply), concurrency=3)
    assert state["peak"] == 3  # three judges in flight at once, never a fourth


def test_usage_counts_every_call():
    llm = model()
    result = run(llm)
    assert result.usage.llm_calls == len(llm.calls) == 1 + 3 * n_chunks(company_corpus()) + 3 + 1
