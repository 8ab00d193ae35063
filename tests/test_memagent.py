"""MemAgent graph logic with a scripted chat model: overwrite, budget, call count,
resume, batching."""

import math
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from longctx import Question, answer, answer_many
from longctx.graphs.memagent import (
    DEFAULT_FINAL_INSTRUCTION,
    FINAL_TEMPLATE,
    MEMORY_TEMPLATE,
    extract_answer,
)
from longctx.graphs.prompts import format_documents
from longctx.memory import NO_MEMORY, bound_memory, strip_think
from longctx.retrieval import Corpus, count_tokens
from longctx.retrieval.tokens import decode, encode
from tests.scripted import ScriptedChatModel


def corpus_of(n_tokens_per_doc: list[int]) -> Corpus:
    return Corpus.from_texts(
        [" ".join(f"w{d}x{i}" for i in range(n // 3)) for d, n in enumerate(n_tokens_per_doc)]
    )


def stream_tokens(corpus: Corpus) -> int:
    return count_tokens(format_documents(corpus.documents))


def memory_in(prompt: str) -> str:
    return prompt.split("<memory>\n", 1)[1].split("\n</memory>", 1)[0]


def section_in(prompt: str) -> str:
    return prompt.split("<section>\n", 1)[1].split("\n</section>", 1)[0]


def echo_model(**kw) -> ScriptedChatModel:
    """Replies "mem after <first words of the section>" to updates and a fixed answer to the
    final call."""

    def reply(prompt: str) -> str:
        if prompt.endswith("Updated memory:\n"):
            return f"<think>scratch</think>mem after {section_in(prompt)[:20]}"
        return "Therefore, the answer is 42."

    return ScriptedChatModel(reply_fn=reply, **kw)


def test_templates_are_the_official_ones():
    assert MEMORY_TEMPLATE.startswith("You are presented with a problem, a section of an article")
    assert "<problem> \n{prompt}\n</problem>" in MEMORY_TEMPLATE and MEMORY_TEMPLATE.endswith(
        "Updated memory:\n"
    )
    final = FINAL_TEMPLATE.format(instruction=DEFAULT_FINAL_INSTRUCTION, prompt="P", memory="M")
    assert final == (
        "You are presented with a problem and a previous memory. Please answer the problem based "
        'on the previous memory and format your response as follows "Therefore, the answer is '
        '(insert answer here)".\n\n<problem> \nP\n</problem>\n\n<memory>\nM\n</memory>\n\n'
        "Your answer:\n"
    )


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Therefore, the answer is 42.", "42"),
        ("**Therefore, the answer is Paris**", "Paris"),
        ("no phrase", None),
        ("the answer is A. Therefore, the answer is B.", "B"),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [("<think>a</think>kept", "kept"), ("x</think>y</think>z", "z"), ("plain", "plain")],
)
def test_strip_think(text, expected):
    assert strip_think(text) == expected


def test_bound_memory_cuts_and_records():
    text = " ".join(f"fact{i}" for i in range(100))
    update = bound_memory(text, 10, encode, decode)
    assert update.cut and update.tokens == 10 and update.written_tokens == count_tokens(text)
    assert text.startswith(update.text)
    assert not bound_memory("short", 10, encode, decode).cut


def test_memory_is_overwritten_each_step_and_final_sees_memory_only():
    corpus = corpus_of([9000, 4000])
    llm = echo_model()
    result = answer(corpus, "What?", strategy="memagent", llm=llm, chunk_tokens=5000, resume=False)
    updates, final = llm.calls[:-1], llm.calls[-1]["prompt"]
    assert memory_in(updates[0]["prompt"]) == NO_MEMORY
    for prev, cur in zip(updates, updates[1:]):
        assert (
            memory_in(cur["prompt"]) == f"mem after {section_in(prev['prompt'])[:20]}"
        )  # replaced, not appended
    assert (
        "<section>" not in final
        and memory_in(final) == f"mem after {section_in(updates[-1]['prompt'])[:20]}"
    )
    assert (
        result.answer == result.raw == "42"
    )  # MemAgent's own format: scored as its extract_answer keeps it
    assert (
        result.steps[-1]["reply"] == "Therefore, the answer is 42."
        and result.steps[-1]["stream"] == "titled"
    )
    assert all(
        c["max_tokens"] == 1024 and c["temperature"] == 0.7 and c["top_p"] == 0.95
        for c in llm.calls
    )
    snapshots = [s for s in result.steps if s["node"] == "update_memory"]
    assert [s["chunk"] for s in snapshots] == list(range(len(updates)))


@pytest.mark.parametrize(
    "sizes,chunk",
    [([100], 5000), ([4900], 5000), ([12000], 5000), ([3000, 3000, 3000], 2000), ([20000], 1000)],
)
def test_call_count_is_chunks_plus_one(sizes, chunk):
    corpus = corpus_of(sizes)
    llm = echo_model()
    result = answer(corpus, "q", strategy="memagent", llm=llm, chunk_tokens=chunk, resume=False)
    assert result.usage.llm_calls == len(llm.calls) == math.ceil(stream_tokens(corpus) / chunk) + 1
    sections = [section_in(c["prompt"]) for c in llm.calls[:-1]]
    assert "".join(sections) == format_documents(
        corpus.documents
    )  # every token read once, nothing truncated


def test_memory_budget_is_enforced_when_the_backend_ignores_max_tokens():
    flood = " ".join(f"note{i}" for i in range(3000))
    llm = ScriptedChatModel(
        reply_fn=lambda p: (
            flood if p.endswith("Updated memory:\n") else "Therefore, the answer is x."
        )
    )
    result = answer(
        corpus_of([9000]), "q", strategy="memagent", llm=llm, max_new_tokens=50, resume=False
    )
    assert all(count_tokens(memory_in(c["prompt"])) == 50 for c in llm.calls[1:])
    snaps = [s for s in result.steps if s["node"] == "update_memory"]
    assert all(s["cut"] and s["tokens"] == 50 for s in snaps)
    assert result.steps[-1]["memory_cuts"] == len(snaps)


def test_benchmark_instruction_replaces_the_default_final_format():
    llm = echo_model()
    q = Question(
        text="Pick one",
        choices={"A": "x", "B": "y"},
        instruction=(
            'Format your response as follows: "The correct answer is (insert answer here)".'
        ),
    )
    result = answer(corpus_of([100]), q, strategy="memagent", llm=llm, resume=False)
    final = llm.calls[-1]["prompt"]
    assert final.startswith(
        "You are presented with a problem and a previous memory. Please answer the problem based "
        'on the previous memory. Format your response as follows: "The correct answer is'
    )
    assert "Pick one\nChoices:\n(A) x\n(B) y" in final
    assert (
        result.answer == result.raw.strip()
    )  # no MemAgent extraction when the benchmark owns the format


class Crash(Exception):
    pass


def crashing_model(crash_at: int) -> ScriptedChatModel:
    inner = echo_model()

    def reply(prompt: str) -> str:
        if len(model.calls) == crash_at:
            raise Crash(f"simulated crash at call {crash_at}")
        return inner.reply_fn(prompt)

    model = ScriptedChatModel(reply_fn=reply)
    return model


def test_resume_after_a_crash_reads_no_chunk_twice(isolated_cache):
    corpus = corpus_of([26000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    first = crashing_model(crash_at=4)  # calls 1-3 complete, call 4 (chunk index 3) fails
    with pytest.raises(Crash):
        answer(corpus, "q", strategy="memagent", llm=first, show_progress=False)
    second = echo_model()
    result = answer(corpus, "q", strategy="memagent", llm=second, show_progress=False)
    sections_first = [section_in(c["prompt"]) for c in first.calls[:3]]
    sections_second = [section_in(c["prompt"]) for c in second.calls[:-1]]
    assert len(second.calls) == n + 1 - 3  # no completed call repeated
    assert not set(sections_first) & set(sections_second)  # no chunk read twice
    assert "".join(sections_first + sections_second) == format_documents(corpus.documents)
    assert (
        memory_in(second.calls[0]["prompt"]) == f"mem after {sections_first[-1][:20]}"
    )  # memory carried over
    assert result.usage.run_llm_calls == n + 1  # the run's usage survives the crash
    assert (
        result.usage.llm_calls == len(second.calls) and result.usage.earlier_llm_calls == 3
    )  # this call's: what it sent
    assert result.steps[-1]["resumed_from"] == 3
    assert [s["chunk"] for s in result.steps if s["node"] == "update_memory"] == list(range(n))


def test_a_finished_run_is_replayed_without_calls():
    corpus = corpus_of([6000])
    first = answer(corpus, "q", strategy="memagent", llm=echo_model(), show_progress=False)
    again = echo_model()
    second = answer(corpus, "q", strategy="memagent", llm=again, show_progress=False)
    assert (
        again.calls == []
        and second.answer == first.answer
        and second.usage.run_llm_calls == first.usage.llm_calls
    )
    assert second.usage.llm_calls == 0 and second.usage.prompt_tokens == 0  # a replay sends nothing
    assert second.steps[-1]["replayed"] and not first.steps[-1]["replayed"]


def test_resume_after_the_process_is_killed(tmp_path):
    """A real SIGKILL mid-stream: the rerun continues from the last checkpointed chunk."""
    script = textwrap.dedent(
        f"""
        import os, signal, sys, json
        sys.path.insert(0, {os.getcwd()!r})
        from longctx import answer
        from tests.scripted import ScriptedChatModel
        from tests.test_memagent import corpus_of, section_in
        kill_at = int(sys.argv[1])
        calls = []
        def reply(prompt):
            calls.append(section_in(prompt) if "<section>" in prompt else "FINAL")
            with open({str(tmp_path / "log")!r}, "a") as f:
                f.write(json.dumps(calls[-1][:30]) + "\\n")
            if len(calls) == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if calls[-1] == "FINAL":
                return "Therefore, the answer is 42."
            return "mem " + calls[-1][:10]
        llm = ScriptedChatModel(reply_fn=reply)
        r = answer(corpus_of([26000]), "q", strategy="memagent", llm=llm, show_progress=False)
        print(r.usage.run_llm_calls, r.usage.llm_calls, r.answer)
        """
    )
    env = {**os.environ, "LONGCTX_CACHE_DIR": str(tmp_path / "cache")}
    killed = subprocess.run(
        [sys.executable, "-c", script, "3"], env=env, capture_output=True, text=True
    )
    assert killed.returncode == -9
    done = subprocess.run(
        [sys.executable, "-c", script, "0"], env=env, capture_output=True, text=True, check=True
    )
    log = (tmp_path / "log").read_text().splitlines()
    n = math.ceil(stream_tokens(corpus_of([26000])) / 5000)
    # killed during call 3 (its result lost): the rerun redoes call 3 and nothing before it
    assert len(log) == 3 + (n - 2 + 1) and log[2] == log[3]
    assert done.stdout.split() == [
        str(n + 1),
        str(n - 1),
        "42",
    ]  # the whole run's calls, and the rerun's own: n - 2 chunks and the final


def test_many_questions_advance_together_with_independent_memories():
    corpus = corpus_of([12000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    in_flight, peak, started, lock = [0], [0], [0], threading.Lock()
    first_chunk = threading.Barrier(
        4, timeout=60
    )  # the four questions' first calls wait for each other: a serial run breaks it

    def reply(prompt: str) -> str:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
            started[0] += 1
            first = started[0] <= 4
        if first:
            first_chunk.wait()
        with lock:
            in_flight[0] -= 1
        q = prompt.split("<problem> \n", 1)[1].split("\n", 1)[0]
        if prompt.endswith("Updated memory:\n"):
            return (
                f"{q} memory {memory_in(prompt).count('|') + 1} |"
                + memory_in(prompt).split(" memory ")[-1]
            )
        return f"Therefore, the answer is {q}."

    llm = ScriptedChatModel(reply_fn=reply)
    questions = [f"question-{i}" for i in range(4)]
    results = answer_many(
        corpus,
        questions,
        strategy="memagent",
        llm=llm,
        resume=False,
        concurrency=4,
        show_progress=False,
    )
    assert [r.answer for r in results] == questions  # each answer maps back to its question
    assert len(llm.calls) == 4 * (n + 1) and all(r.usage.llm_calls == n + 1 for r in results)
    assert peak[0] == 4  # the four questions' calls of one chunk went out concurrently
    for q, r in zip(questions, results):
        snaps = [s for s in r.steps if s["node"] == "update_memory"]
        assert len(snaps) == n and all(s["memory"].startswith(q) for s in snaps)
