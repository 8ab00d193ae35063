"""Self-Ask graph logic with scripted chat models, and what a run sends to a server.

``flashrag`` (the default): the exact prompt and stops of every generator call, the
initial retrieval, contexts replaced (or accumulated) per follow-up, the cap counting
generator calls, the final answer parsed or empty. ``reader`` (the earlier algorithm,
run through its preset): unchanged behaviour, except that ``raw`` is now the answer.
"""

import pytest

from longctx import Question, answer
from longctx.agents.chat_models import make_chat_model
from longctx.graphs import STRATEGIES
from longctx.graphs.plugin.config import ConfigError
from longctx.graphs.self_ask import (
    NOT_FOUND,
    SelfAskConfig,
    clean_final,
    cut_at_stops,
    first_follow_up,
    parse_final_answer,
    parse_step,
)
from longctx.graphs.self_ask.prompts import (
    EXEMPLARS,
    FINAL,
    FLASHRAG_HEADER,
    FOLLOW_UP,
    INTERMEDIATE,
    MULTI_HOP_EXEMPLARS,
    NEEDED,
    SINGLE_HOP_EXEMPLARS,
)
from longctx.retrieval import Index
from tests.recording_server import RecordingServer, prompt_of
from tests.scripted import ScriptedChatModel

QUESTION = "What is the secret code of the museum vault?"


READER = {"preset": "reader"}


def kind(prompt: str) -> str:
    if prompt.startswith("Please read the following retrieved text chunks"):
        return "reader"
    return "force" if prompt.endswith(FINAL) else "ask"


def script(
    asks: list[str], reader=lambda p: "The code is 7421.", force: str = "forced answer"
) -> ScriptedChatModel:
    """Replies ``asks`` in turn to Self-Ask steps, ``reader(prompt)`` to follow-up reads, ``force``
    to the forced cue."""
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


# -- flashrag (the default) -------------------------------------------------------------
FU_STOPS = ["Context:", "#", "Follow up:"]
IA_STOPS = ["Context:", "#", "Intermediate answer:"]


def flashrag_expected(
    contexts: list[str], transcript: str, *, question: str = QUESTION, single_hop: bool = False
) -> str:
    """The prompt FlashRAG's run_item assembles, written out independently of the code
    under test."""
    exemplars = SINGLE_HOP_EXEMPLARS if single_hop else MULTI_HOP_EXEMPLARS
    instructions = FLASHRAG_HEADER + "\n#\n" + "\n#\n".join(exemplars) + "\n#"
    refs = "".join(f"Context{i}: {text}\n" for i, text in enumerate(contexts, 1))
    needed = "No." if single_hop else "Yes."
    return (
        f"{instructions}\n{refs}\nQuestion: {question}\nAre follow up questions needed here: "
        f"{needed}\n{transcript}"
    )


def context_texts(result, node: str, nth: int = 0, key: str = "chunk_ids") -> list[str]:
    text = {e.chunk_id: e.text for e in result.evidence}
    return [text[i] for i in [s for s in result.steps if s.node == node][nth][key]]


def test_flashrag_is_the_default_and_the_paper_preset():
    spec = STRATEGIES.get("self_ask")
    cfg = spec.make_config()
    assert cfg == spec.presets["paper"] == SelfAskConfig()
    assert (
        cfg.variant,
        cfg.top_k,
        cfg.chunk_size,
        cfg.max_iterations,
        cfg.max_new_tokens,
        cfg.temperature,
    ) == ("flashrag", 5, 100, 5, 100, 0.0)
    assert (cfg.single_hop, cfg.contexts) == (False, "replace")
    assert spec.presets["reader"].variant == "reader" and (
        spec.presets["reader"].chunk_size,
        spec.presets["reader"].max_new_tokens,
    ) == (300, 128)
    for bad in (
        {"variant": "paper"},
        {"contexts": "merge"},
        {"single_hop": "yes"},
        {"max_iterations": -1},
    ):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            spec.make_config(**bad)


def test_exact_prompts_and_stops_of_every_generator_call(planted_corpus, search_log):
    replies = [
        "Follow up: What is the code of the museum vault?\n",
        "Intermediate answer: The code is 7421.\n",
        "So the final answer is: 7421\n",
    ]
    llm = ScriptedChatModel(replies=replies)
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, top_k=2)
    assert search_log == [
        QUESTION,
        "What is the code of the museum vault?",
    ]  # the initial retrieval, then the follow-up
    assert [s.node for s in result.steps] == [
        "retrieve",
        "generate",
        "retrieve_follow_up",
        "generate",
        "generate",
        "finish",
    ]
    first, follow = context_texts(result, "retrieve"), context_texts(result, "retrieve_follow_up")
    assert any("7421" in t for t in first)
    transcripts = [
        "",
        "Follow up: What is the code of the museum vault?",
        "Follow up: What is the code of the museum vault?\nIntermediate answer: The code is 7421.",
    ]
    contexts = [first, follow, follow]  # a follow-up's top-k replace the contexts
    assert [c["prompt"] for c in llm.calls] == [
        flashrag_expected(c, t) for c, t in zip(contexts, transcripts)
    ]
    assert [c["stop"] for c in llm.calls] == [IA_STOPS, FU_STOPS, IA_STOPS]
    assert all(c["max_tokens"] == 100 and c["temperature"] == 0.0 for c in llm.calls)
    assert result.answer == result.raw == "7421" and result.usage.llm_calls == 3
    finish = result.steps[-1]
    assert finish["transcript"] == transcripts[-1] + "\nSo the final answer is: 7421"
    assert (
        finish["variant"],
        finish["generator_calls"],
        finish["exit"],
        finish["final_answer_found"],
    ) == ("flashrag", 3, "final_answer", True)


def test_accumulated_contexts_keep_every_retrieval(planted_corpus, search_log):
    replies = [
        "Follow up: Which harbour repainted the lighthouse?",
        "Intermediate answer: The harbour authority.",
        "So the final answer is: 7421",
    ]
    llm = ScriptedChatModel(replies=replies)
    result = answer(
        planted_corpus, QUESTION, strategy="self_ask", llm=llm, top_k=2, contexts="accumulate"
    )
    first, follow = context_texts(result, "retrieve"), context_texts(result, "retrieve_follow_up")
    both = first + [t for t in follow if t not in first]
    assert (
        len(both) > len(first)
        and context_texts(result, "retrieve_follow_up", key="contexts") == both
    )
    assert llm.calls[1]["prompt"] == flashrag_expected(
        both, "Follow up: Which harbour repainted the lighthouse?"
    )
    replaced = ScriptedChatModel(replies=replies)
    answer(planted_corpus, QUESTION, strategy="self_ask", llm=replaced, top_k=2)
    assert replaced.calls[1]["prompt"] == flashrag_expected(
        follow, "Follow up: Which harbour repainted the lighthouse?"
    )


def test_each_follow_up_triggers_its_own_retrieval_and_evidence_lists_chunks_once(
    planted_corpus, search_log
):
    replies = [
        "Follow up: Which museum has a vault?\n",
        "Intermediate answer: The city museum.\n",
        "Follow up: What is the vault code?\n",
        "Intermediate answer: 7421.\n",
        "So the final answer is: 7421.\n",
    ]
    result = answer(
        planted_corpus,
        QUESTION,
        strategy="self_ask",
        llm=ScriptedChatModel(replies=replies),
        top_k=2,
    )
    assert search_log == [QUESTION, "Which museum has a vault?", "What is the vault code?"]
    assert (
        result.answer == "7421." and result.steps[-1]["generator_calls"] == 5
    )  # kept as written, as FlashRAG
    ids = [e.chunk_id for e in result.evidence]
    assert len(ids) == len(set(ids)) and set(ids) == {
        i for s in result.steps if "chunk_ids" in s for i in s["chunk_ids"]
    }


@pytest.mark.parametrize("cap", [0, 1, 2, 5, 12])
def test_cap_counts_generator_calls_and_no_final_call_is_forced(planted_corpus, search_log, cap):
    def reply(prompt: str) -> str:  # asks, then answers, never concludes
        return (
            "Intermediate answer: not sure yet."
            if prompt.rsplit("\n", 1)[-1].startswith(FOLLOW_UP)
            else "Follow up: What is the vault code?"
        )

    llm = ScriptedChatModel(reply_fn=reply)
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, max_iterations=cap)
    assert (
        len(llm.calls) == cap and result.usage.llm_calls == cap
    )  # 12: beyond LangGraph's default recursion limit
    assert [c["stop"] for c in llm.calls] == [IA_STOPS, FU_STOPS] * (cap // 2) + [IA_STOPS] * (
        cap % 2
    )
    assert len(search_log) == 1 + sum(
        1 for c in range(1, cap) if c % 2
    )  # no retrieval after the last call; 0: the initial one only
    assert not any(c["prompt"].endswith(FINAL) for c in llm.calls)
    assert (
        result.answer == result.raw == ""
        and result.steps[-1]["exit"] == "cap"
        and not result.steps[-1]["final_answer_found"]
    )


def test_answer_without_the_final_cue_is_empty(planted_corpus):
    llm = ScriptedChatModel(replies=["The vault code is 7421.", "So the final answer is 7421"])
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, max_iterations=2)
    assert (
        result.answer == result.raw == ""
        and result.steps[-1]["transcript"] == "The vault code is 7421.\nSo the final answer is 7421"
    )
    assert llm.calls[1]["prompt"].endswith(f"{NEEDED} Yes.\nThe vault code is 7421.")


def test_empty_first_reply_ends_the_loop(planted_corpus):
    llm = ScriptedChatModel(replies=["Intermediate answer: 1234"])  # all of it past the stop
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm)
    assert len(llm.calls) == 1 and result.raw == "" and result.steps[-1]["exit"] == "empty"


def test_direct_final_answer_and_the_single_hop_prompt(planted_corpus, search_log):
    llm = ScriptedChatModel(replies=["So the final answer is: 7421\n"])
    result = answer(
        planted_corpus, QUESTION, strategy="self_ask", llm=llm, single_hop=True, top_k=1
    )
    assert search_log == [QUESTION] and result.raw == "7421" and result.usage.llm_calls == 1
    assert llm.calls[0]["prompt"] == flashrag_expected(
        context_texts(result, "retrieve"), "", single_hop=True
    )


def test_text_past_a_stop_is_cut_for_servers_that_ignore_stops(planted_corpus, search_log):
    replies = [
        (
            "Follow up: What is the vault code?\nIntermediate answer: 1234\n"
            "So the final answer is: 1234"
        ),
        "Intermediate answer: 7421\nFollow up: x?",
        "So the final answer is: 7421",
    ]
    llm = ScriptedChatModel(replies=replies)
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm)
    assert "1234" not in llm.calls[1]["prompt"] and search_log == [
        QUESTION,
        "What is the vault code?",
    ]
    assert (
        llm.calls[2]["prompt"].endswith(
            "Follow up: What is the vault code?\nIntermediate answer: 7421"
        )
        and result.raw == "7421"
    )


def test_benchmark_instruction_and_choices_reach_the_flashrag_prompt(planted_corpus, search_log):
    q = Question(
        text="Which is the code?",
        choices={"A": "1234", "B": "7421"},
        instruction='Answer "The correct answer is (X)".',
    )
    llm = ScriptedChatModel(replies=["So the final answer is: The correct answer is (B)"])
    result = answer(planted_corpus, q, strategy="self_ask", llm=llm)
    prompt = llm.calls[0]["prompt"]
    assert prompt.split("\n", 1)[0] == (
        FLASHRAG_HEADER
        + ' Write the final answer after "So the final answer is:" and follow this format in '
        'it: Answer "The correct answer is (X)".'
    )
    assert search_log == [q.render()] and f"\nQuestion: {q.render()}\n{NEEDED} Yes.\n" in prompt
    assert result.raw == "The correct answer is (B)"


@pytest.mark.parametrize(
    "transcript,expected",
    [
        (
            (
                "Follow up: a\nIntermediate answer: b\nSo the final answer is: Paris \n"
                "So the final answer is: Rome"
            ),
            "Paris",
        ),
        ("So the final answer is: **Paris.**", "**Paris.**"),
        ("So the final answer is:Paris", ""),
        ("so the final answer is: Paris", ""),
        ("no cue", ""),
    ],
)
def test_parse_final_answer(transcript, expected):
    assert parse_final_answer(transcript) == expected


def test_first_follow_up():
    assert first_follow_up("Yes.\nFollow up: Who? Follow up: When?\nFollow up: Where?") == "When?"
    assert (
        first_follow_up("Follow up:Who?") is None
        and first_follow_up("Intermediate answer: x") is None
    )


def test_recorded_requests_carry_the_stops_and_budget(planted_corpus, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    replies = iter(
        [
            "Follow up: What is the vault code?\nIntermediate answer: 1",
            "Intermediate answer: 7421.",
            "So the final answer is: 7421",
        ]
    )
    with RecordingServer(lambda request: next(replies)) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm)
    sent = server.requests
    assert [r["stop"] for r in sent] == [IA_STOPS, FU_STOPS, IA_STOPS]
    # as FlashRAG's generator: max_tokens (not the max_completion_tokens of langchain-openai)
    assert [r.get("max_tokens") for r in sent] == [100, 100, 100] and not any(
        "max_completion_tokens" in r for r in sent
    )
    assert [len(r["messages"]) for r in sent] == [1, 1, 1] and prompt_of(sent[2]).endswith(
        "Follow up: What is the vault code?\nIntermediate answer: 7421."
    )
    assert result.raw == "7421"


def test_hotpotqa_item_scores_the_parsed_answer(monkeypatch):
    from pathlib import Path

    from longctx import experiments
    from longctx.experiments.benchmarks import load_benchmark

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    samples = load_benchmark(
        "longbench",
        Path(__file__).parent / "fixtures" / "benchmarks" / "longbench",
        datasets=["hotpotqa"],
    )
    sample = next(s for s in samples if s.sample_id == "hotpotqa-002")
    with RecordingServer(lambda request: "So the final answer is: Paris") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        result = answer(sample.corpus, sample.question, strategy="self_ask", llm=llm)
    assert result.raw == "Paris" and len(server.requests) == 1
    assert (
        experiments.score("longbench", [(sample.sample_id, result.raw)], samples=[sample])[
            "datasets"
        ]["hotpotqa"]
        == 100.0
    )


# -- reader (the earlier algorithm, through its preset) ------------------------------------
def test_follow_up_is_retrieved_for_and_answered_from_its_chunks(planted_corpus, search_log):
    llm = script(
        [
            " Yes.\nFollow up: What is the code of the museum vault?\n",
            "So the final answer is: 7421",
        ]
    )
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, **READER)
    assert search_log == [
        "What is the code of the museum vault?"
    ]  # the follow-up is the query, not the question
    assert [kind(c["prompt"]) for c in llm.calls] == ["ask", "reader", "ask"]
    reader = llm.calls[1]["prompt"]
    assert (
        "Question: What is the code of the museum vault?" in reader and "7421" in reader
    )  # the vault chunk
    second = llm.calls[2]["prompt"]
    assert second.endswith(
        f"Question: {QUESTION}\n{NEEDED} Yes.\n{FOLLOW_UP} What is the code of the museum vault?\n"
        f"{INTERMEDIATE} The code is 7421.\n"
    )
    assert result.answer == "7421" and result.evidence[0].title == "Vault"
    finish = result.steps[-1]
    assert {k: finish[k] for k in ("node", "variant", "iterations", "final_answer_source")} == {
        "node": "finish",
        "variant": "reader",
        "iterations": 1,
        "final_answer_source": "model",
    }
    assert result.raw == "7421" and finish["transcript"].endswith(
        "So the final answer is: 7421"
    )  # the scored text is the answer


def test_every_follow_up_triggers_its_own_retrieval(planted_corpus, search_log):
    asks = [
        " Yes.\nFollow up: Which museum has a vault?",
        "Follow up: What is the vault code?",
        "So the final answer is: 7421.",
    ]
    result = answer(
        planted_corpus, QUESTION, strategy="self_ask", llm=script(asks), top_k=2, **READER
    )
    assert search_log == ["Which museum has a vault?", "What is the vault code?"]
    retrievals = [s for s in result.steps if s["node"] == "retrieve_follow_up"]
    assert [s["query"] for s in retrievals] == search_log and all(
        len(s["chunk_ids"]) <= 2 for s in retrievals
    )
    assert result.answer == "7421" and result.usage.llm_calls == 5
    ids = [e.chunk_id for e in result.evidence]
    assert len(ids) == len(set(ids)) and set(ids) == {i for s in retrievals for i in s["chunk_ids"]}


def test_stop_sequences_keep_the_model_from_writing_intermediate_answers(planted_corpus):
    # A server that ignores ``stop``: the invented answer and final answer are cut client-side.
    asks = [
        (
            "Yes.\nFollow up: What is the vault code?\nIntermediate answer: 1234\n"
            "So the final answer is: 1234"
        ),
        "So the final answer is: 7421",
    ]
    llm = script(asks)
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, **READER)
    ask_calls = [c for c in llm.calls if kind(c["prompt"]) == "ask"]
    assert all(INTERMEDIATE in c["stop"] and "\nQuestion:" in c["stop"] for c in ask_calls)
    assert "1234" not in ask_calls[1]["prompt"] and result.answer == "7421"


@pytest.mark.parametrize("cap", [0, 2, 5])
def test_iteration_cap_holds_then_the_final_answer_is_forced(planted_corpus, search_log, cap):
    llm = ScriptedChatModel(
        reply_fn=lambda p: {
            "ask": "Follow up: What is the vault code?",
            "reader": "7421.",
            "force": " 7421",
        }[kind(p)]
    )
    result = answer(
        planted_corpus, QUESTION, strategy="self_ask", llm=llm, max_iterations=cap, **READER
    )
    kinds = [kind(c["prompt"]) for c in llm.calls]
    assert len(search_log) == cap and kinds.count("reader") == cap and kinds.count("ask") == cap + 1
    assert kinds[-1] == "force" and llm.calls[-1]["stop"] == ["\n"]
    forced = llm.calls[-1]["prompt"]
    assert (
        forced.count(FOLLOW_UP) == EXEMPLARS.count(FOLLOW_UP) + cap
    )  # the capped follow-up is dropped
    assert result.answer == "7421" and result.steps[-1]["final_answer_source"] == "forced"
    assert [s for s in result.steps if s["node"] == "ask"][-1]["capped"]


def test_default_cap_is_five_and_configurable_beyond_the_recursion_default(planted_corpus):
    assert STRATEGIES.get("self_ask").make_config().max_iterations == 5
    llm = ScriptedChatModel(
        reply_fn=lambda p: {"ask": "Follow up: vault?", "reader": "7421", "force": "7421"}[kind(p)]
    )
    result = answer(
        planted_corpus, QUESTION, strategy="self_ask", llm=llm, max_iterations=12, **READER
    )  # 3 nodes x 12 > 25
    assert result.steps[-1]["iterations"] == 12


def test_model_that_never_answers_falls_back_to_the_last_intermediate_answer(planted_corpus):
    llm = script(
        [" Yes.\nFollow up: What is the vault code?", "I am not sure."],
        reader=lambda p: "The vault code is 7421.",
        force="",
    )
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, **READER)
    assert result.answer == "The vault code is 7421."  # verbatim
    assert (
        result.steps[-1]["final_answer_source"] == "last_intermediate_answer"
        and result.steps[-1]["iterations"] == 1
    )
    assert result.raw == result.answer


def test_model_that_never_asks_nor_answers_records_the_raw_fallback(planted_corpus, search_log):
    llm = script([" No."], force="")
    result = answer(planted_corpus, QUESTION, strategy="self_ask", llm=llm, **READER)
    assert (
        search_log == []
        and result.answer == "No"
        and result.steps[-1]["final_answer_source"] == "raw"
    )


def test_direct_final_answer_needs_no_retrieval(planted_corpus, search_log):
    result = answer(
        planted_corpus,
        QUESTION,
        strategy="self_ask",
        llm=script([" No.\nSo the final answer is: **7421**"]),
        **READER,
    )
    assert search_log == [] and result.answer == "7421" and result.usage.llm_calls == 1


def test_follow_up_without_hits_is_not_read(planted_corpus):
    llm = script(["Follow up: zzzqqq xxyyzz?", "So the final answer is: unknown"])
    # by default the top-5 are read whatever their scores; without zero-score chunks nothing is left
    # to read
    result = answer(
        planted_corpus, QUESTION, strategy="self_ask", llm=llm, drop_zero_scores=True, **READER
    )
    assert [kind(c["prompt"]) for c in llm.calls] == ["ask", "ask"]
    assert f"{INTERMEDIATE} {NOT_FOUND}" in llm.calls[1]["prompt"] and result.answer == "unknown"


def test_benchmark_instruction_reaches_the_prompt(planted_corpus):
    q = Question(
        text="Which is the code?",
        choices={"A": "1234", "B": "7421"},
        instruction='Answer "The correct answer is (X)".',
    )
    llm = script(["So the final answer is: The correct answer is (B)"])
    result = answer(planted_corpus, q, strategy="self_ask", llm=llm, **READER)
    prompt = llm.calls[0]["prompt"]
    assert (
        'follow this format in it: Answer "The correct answer is (X)".' in prompt.split("\n", 1)[0]
    )
    assert (
        "Question: Which is the code?\nChoices:\n(A) 1234\n(B) 7421\n"
        "Are follow up questions needed here:" in prompt
    )
    assert result.answer == "The correct answer is (B)"


@pytest.mark.parametrize(
    "text,expected",
    [
        (" Yes.\nFollow up: Who?\n", ("follow_up", "Who?", " Yes.\nFollow up: Who?\n")),
        ("Yes.\n**Follow-up:** Who?", ("follow_up", "Who?", "Yes.\n**Follow-up:** Who?")),
        ("follow up: who?\nFollow up: second", ("follow_up", "who?", "follow up: who?\n")),
        (
            "So the final answer is: Paris.\nextra",
            ("final", "Paris", "So the final answer is: Paris.\n"),
        ),
        (
            'Thus, so, the final answer is "Rotterdam"',
            ("final", "Rotterdam", 'Thus, so, the final answer is "Rotterdam"'),
        ),
        ("So the final answer is:", ("final", "", "So the final answer is:")),
        ("Follow up:\nnothing", ("none", "", "Follow up:\nnothing")),
    ],
)
def test_parse_step(text, expected):
    assert parse_step(text)[:3] == expected


@pytest.mark.parametrize(
    "text,expected",
    [(" $1.2 billion. ", "$1.2 billion"), ("'No'", "No"), ("**Yes**", "Yes"), ("A...", "A...")],
)
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
        assert (
            lines[0].startswith("Question: ")
            and lines[1] == f"{NEEDED} Yes."
            and lines[-1].startswith(f"{FINAL} ")
        )
        assert all(l.startswith((FOLLOW_UP, INTERMEDIATE)) for l in lines[2:-1])
    assert "Muhammad Ali" not in EXEMPLARS and "craigslist" not in EXEMPLARS


@pytest.mark.parametrize("name", ["self_ask", "self_route"])
def test_reachable_from_registry_and_cli(name):
    from longctx.experiments.cli.app import build_parser

    spec = STRATEGIES.get(name)
    assert spec.uses_index and not spec.batched and spec.description
    args = build_parser().parse_args(
        [
            "answer",
            "--corpus",
            "c",
            "--question",
            "q",
            "--strategy",
            name,
            "--top-k",
            "3",
            "--max-new-tokens",
            "32",
        ]
    )
    assert args.strategy == name
    cfg = spec.make_config(
        top_k=args.top_k, max_new_tokens=args.max_new_tokens
    )  # the overrides cmd_answer passes
    assert (cfg.top_k, cfg.max_new_tokens) == (3, 32)
