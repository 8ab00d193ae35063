"""Self-Ask graph logic with a scripted chat model: retrieval per follow-up, stops, cap, final-answer parsing."""

import pytest

from agents import Question, answer
from graphs import STRATEGIES
from graphs.self_ask import NOT_FOUND, clean_final, cut_at_stops, parse_step
from graphs.self_ask.prompts import EXEMPLARS, FINAL, FOLLOW_UP, INTERMEDIATE, NEEDED
from retrieval import Index
from tests.scripted import ScriptedChatModel

QUESTION = "What is the secret code of the museum vault?"


def kind(prompt: str) -> str:
    if prompt.startswith("Please read the following retrieved text chunks"):
        return "reader"
    return "force" if prompt.endswith(FINAL) else "ask"


def script(asks: list[str], reader=lambda p: "The code is 7421.", force: str = "forced answer") -> ScriptedChatModel:
    """Replies ``asks`` in turn to Self-Ask steps, ``reader(prompt)`` to follow-up reads, ``force`` to the forced cue."""
    state = {"ask": 0}

    def reply(prompt: str) -> str:
        k = kind(prompt)
        if k == "reader":
            return reader(prompt)
        if k == "force":
            return force
        state["ask"] += 1
        return asks[min(state["ask"], len(asks)) - 1]

    return ScriptedChatModel(reply_fn=reply)


@pytest.fixture
def search_log(monkeypatch):
    queries: list[str] = []
    original = Index.search

    def spy(self, query, k):
        queries.append(query)
        return original(self, query, k)

    monkeypatch.setattr(Index, "search", spy)
    return queries


def test_follow_up_is_retrieved_for_and_answered_from_its_chunks(planted_corpus, search_log):
    llm = script([" Yes.\nFollow up: What is the code of the museum vault?\n", "So the final answer is: 7421"])
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm)
    assert search_log == ["What is the code of the museum vault?"]  # the follow-up is the query, not the question
    assert [kind(c["prompt"]) for c in llm.calls] == ["ask", "reader", "ask"]
    reader = llm.calls[1]["prompt"]
    assert "Question: What is the code of the museum vault?" in reader and "7421" in reader  # the vault chunk
    second = llm.calls[2]["prompt"]
    assert second.endswith(
        f"Question: {QUESTION}\n{NEEDED} Yes.\n{FOLLOW_UP} What is the code of the museum vault?\n{INTERMEDIATE} The code is 7421.\n"
    )
    assert result.answer == "7421" and result.evidence[0].title == "Vault"
    assert result.steps[-1] == {"node": "finish", "iterations": 1, "final_answer_source": "model"}
    assert result.raw.endswith("So the final answer is: 7421")


def test_every_follow_up_triggers_its_own_retrieval(planted_corpus, search_log):
    asks = [" Yes.\nFollow up: Which museum has a vault?", "Follow up: What is the vault code?", "So the final answer is: 7421."]
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=script(asks), top_k=2)
    assert search_log == ["Which museum has a vault?", "What is the vault code?"]
    retrievals = [s for s in result.steps if s["node"] == "retrieve_follow_up"]
    assert [s["query"] for s in retrievals] == search_log and all(len(s["chunk_ids"]) <= 2 for s in retrievals)
    assert result.answer == "7421" and result.usage.llm_calls == 5
    ids = [e.chunk_id for e in result.evidence]
    assert len(ids) == len(set(ids)) and set(ids) == {i for s in retrievals for i in s["chunk_ids"]}


def test_stop_sequences_keep_the_model_from_writing_intermediate_answers(planted_corpus):
    # A server that ignores ``stop``: the invented answer and final answer are cut client-side.
    asks = ["Yes.\nFollow up: What is the vault code?\nIntermediate answer: 1234\nSo the final answer is: 1234", "So the final answer is: 7421"]
    llm = script(asks)
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm)
    ask_calls = [c for c in llm.calls if kind(c["prompt"]) == "ask"]
    assert all(INTERMEDIATE in c["stop"] and "\nQuestion:" in c["stop"] for c in ask_calls)
    assert "1234" not in ask_calls[1]["prompt"] and result.answer == "7421"


@pytest.mark.parametrize("cap", [0, 2, 5])
def test_iteration_cap_holds_then_the_final_answer_is_forced(planted_corpus, search_log, cap):
    llm = ScriptedChatModel(reply_fn=lambda p: {"ask": "Follow up: What is the vault code?", "reader": "7421.", "force": " 7421"}[kind(p)])
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, max_iterations=cap)
    kinds = [kind(c["prompt"]) for c in llm.calls]
    assert len(search_log) == cap and kinds.count("reader") == cap and kinds.count("ask") == cap + 1
    assert kinds[-1] == "force" and llm.calls[-1]["stop"] == ["\n"]
    forced = llm.calls[-1]["prompt"]
    assert forced.count(FOLLOW_UP) == EXEMPLARS.count(FOLLOW_UP) + cap  # the capped follow-up is dropped
    assert result.answer == "7421" and result.steps[-1]["final_answer_source"] == "forced"
    assert [s for s in result.steps if s["node"] == "ask"][-1]["capped"]


def test_default_cap_is_five_and_configurable_beyond_the_recursion_default(planted_corpus):
    assert STRATEGIES.get("self_ask").make_config().max_iterations == 5
    llm = ScriptedChatModel(reply_fn=lambda p: {"ask": "Follow up: vault?", "reader": "7421", "force": "7421"}[kind(p)])
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, max_iterations=12)  # 3 nodes x 12 > 25
    assert result.steps[-1]["iterations"] == 12


def test_model_that_never_answers_falls_back_to_the_last_intermediate_answer(planted_corpus):
    llm = script([" Yes.\nFollow up: What is the vault code?", "I am not sure."], reader=lambda p: "The vault code is 7421.", force="")
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm)
    assert result.answer == "The vault code is 7421."  # verbatim
    assert result.steps[-1] == {"node": "finish", "iterations": 1, "final_answer_source": "last_intermediate_answer"}


def test_model_that_never_asks_nor_answers_records_the_raw_fallback(planted_corpus, search_log):
    llm = script([" No."], force="")
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm)
    assert search_log == [] and result.answer == "No" and result.steps[-1]["final_answer_source"] == "raw"


def test_direct_final_answer_needs_no_retrieval(planted_corpus, search_log):
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=script([" No.\nSo the final answer is: **7421**"]))
    assert search_log == [] and result.answer == "7421" and result.usage.llm_calls == 1


def test_follow_up_without_hits_is_not_read(planted_corpus):
    llm = script(["Follow up: zzzqqq xxyyzz?", "So the final answer is: unknown"])
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm)
    assert [kind(c["prompt"]) for c in llm.calls] == ["ask", "ask"]
    assert f"{INTERMEDIATE} {NOT_FOUND}" in llm.calls[1]["prompt"] and result.answer == "unknown"


def test_benchmark_instruction_reaches_the_prompt(planted_corpus):
    q = Question(text="Which is the code?", choices={"A": "1234", "B": "7421"}, instruction='Answer "The correct answer is (X)".')
    llm = script(["So the final answer is: The correct answer is (B)"])
    result = answer(planted_corpus, q, strategy="self_ask", llm=llm)
    prompt = llm.calls[0]["prompt"]
    assert 'follow this format in it: Answer "The correct answer is (X)".' in prompt.split("\n", 1)[0]
    assert "Question: Which is the code?\nChoices:\n(A) 1234\n(B) 7421\nAre follow up questions needed here:" in prompt
    assert result.answer == "The correct answer is (B)"


@pytest.mark.parametrize(
    "text,expected",
    [
        (" Yes.\nFollow up: Who?\n", ("follow_up", "Who?", " Yes.\nFollow up: Who?\n")),
        ("Yes.\n**Follow-up:** Who?", ("follow_up", "Who?", "Yes.\n**Follow-up:** Who?")),
        ("follow up: who?\nFollow up: second", ("follow_up", "who?", "follow up: who?\n")),
        ("So the final answer is: Paris.\nextra", ("final", "Paris", "So the final answer is: Paris.\n")),
        ("Thus, so, the final answer is \"Rotterdam\"", ("final", "Rotterdam", "Thus, so, the final answer is \"Rotterdam\"")),
        ("So the final answer is:", ("final", "", "So the final answer is:")),
        ("Follow up:\nnothing", ("none", "", "Follow up:\nnothing")),
    ],
)
def test_parse_step(text, expected):
    assert parse_step(text)[:3] == expected


@pytest.mark.parametrize("text,expected", [(" $1.2 billion. ", "$1.2 billion"), ("'No'", "No"), ("**Yes**", "Yes"), ("A...", "A...")])
def test_clean_final(text, expected):
    assert clean_final(text) == expected


def test_cut_at_stops():
    assert cut_at_stops("Follow up: a\nIntermediate answer: b") == "Follow up: a\n"
    assert cut_at_stops("Follow up: a\nQuestion: next") == "Follow up: a"


def test_exemplars_use_the_canonical_cues_and_our_own_examples():
    blocks = EXEMPLARS.split("\n\n")
    assert len(blocks) == 4
    for block in blocks:
        lines = block.splitlines()
        assert lines[0].startswith("Question: ") and lines[1] == f"{NEEDED} Yes." and lines[-1].startswith(f"{FINAL} ")
        assert all(l.startswith((FOLLOW_UP, INTERMEDIATE)) for l in lines[2:-1])
    assert "Muhammad Ali" not in EXEMPLARS and "craigslist" not in EXEMPLARS


@pytest.mark.parametrize("name", ["self_ask", "self_route"])
def test_reachable_from_registry_and_cli(name):
    from experiments.cli import build_parser

    spec = STRATEGIES.get(name)
    assert spec.uses_index and not spec.batched and spec.description
    args = build_parser().parse_args(["answer", "--corpus", "c", "--question", "q", "--strategy", name, "--top-k", "3", "--max-new-tokens", "32"])
    assert args.strategy == name
    cfg = spec.make_config(top_k=args.top_k, max_new_tokens=args.max_new_tokens)  # the overrides cmd_answer passes
    assert (cfg.top_k, cfg.max_new_tokens) == (3, 32)
