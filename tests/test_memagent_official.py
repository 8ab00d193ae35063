"""MemAgent against its official evaluation: the scored text and the stream it reads.

The official side is written here from BytedTsinghua-SIA/MemAgent's
``taskutils/memory_eval`` (``ruler_hqa.py`` ``get_pred``, ``utils/__init__.py``
``extract_solution`` / ``extract_answer``, ``utils/recurrent.py`` ``async_query_llm``),
independently of the strategy's own code.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longctx import make_chat_model
from longctx.experiments.benchmarks import load_benchmark, score
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.graphs.calls.llm import tokenizer_for
from longctx.graphs.memagent.answer_extraction import official_prediction
from tests.recording_server import RecordingServer, prompt_of

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


@pytest.mark.parametrize(
    "reply,scored",
    [
        ("Therefore, the answer is Paris.", "Paris"),
        ("  **Therefore, the answer is Paris**.  ", "Paris"),
        (
            "<think>so the answer is Rome</think>\nTherefore, the answer is Paris.",
            "Paris",
        ),  # after </think> only
        (
            "<think>Therefore, the answer is Rome.</think>",
            "Rome.</think>",
        ),  # nothing after </think>: the whole reply, as is
        ("Therefore, the answer is Paris.<\uff5cend\u2581of\u2581sentence\uff5c>", "Paris"),
        ("The answer is Paris.", ""),  # case-sensitive: no "the answer is", scored 0
        ("Paris", ""),
        ("the answer is A, so the answer is B..", "B"),
    ],
)
def test_official_prediction_follows_memagents_extraction(reply, scored):
    assert official_prediction(reply) == scored


def _paris(request: dict) -> str:
    return (
        "memory: Bob was born in Paris."
        if prompt_of(request).endswith("Updated memory:\n")
        else "Therefore, the answer is Paris."
    )


def test_paper_preset_on_longbench_hotpotqa_is_scored_on_the_extracted_answer(
    tmp_path, monkeypatch
):
    """The Done-when of issue 25: "Therefore, the answer is Paris." scores 100 (it was F1 40)."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    with RecordingServer(_paris) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench",
            strategies=("memagent",),
            data_path=str(FIXTURES / "longbench"),
            datasets=("hotpotqa",),
            llm_cache=False,
            strategy_options={"memagent": {"preset": "paper"}},
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    finals = [r for r in server.requests if not prompt_of(r).endswith("Updated memory:\n")]
    assert finals and all(
        '"Therefore, the answer is (insert answer here)"' in prompt_of(r) for r in finals
    )
    row = next(r for r in read_rows(tmp_path / "run") if r["sample_id"] == "hotpotqa-002")
    assert row["prediction"] == "Paris"
    final_step = row["steps"][-1]
    assert (
        final_step["node"] == "final_answer"
        and final_step["reply"] == "Therefore, the answer is Paris."
    )
    samples = load_benchmark("longbench", FIXTURES / "longbench", datasets=["hotpotqa"])
    scored = score(
        "longbench", [(s, row["prediction"]) for s in samples if s.sample_id == "hotpotqa-002"]
    )
    assert scored["per_sample"]["hotpotqa-002"] == 100.0


def official_chunks(context: str, chunk_size: int, tokenizer) -> list[str]:
    """The sections MemAgent's loop sends: ``utils/recurrent.py`` ``async_query_llm`` encodes
    ``item["context"].strip()`` once and decodes ``input_ids[i:i + RECURRENT_CHUNK_SIZE]`` for each
    ``i`` in ``range(0, len(input_ids), RECURRENT_CHUNK_SIZE)`` (the paper's runs set
    ``RECURRENT_MAX_CONTEXT_LEN`` to 1e11, so nothing is truncated)."""
    ids = tokenizer.encode(context.strip())
    return [tokenizer.decode(ids[i : i + chunk_size]) for i in range(0, len(ids), chunk_size)]


def _section(prompt: str) -> str:
    return prompt.split("<section>\n", 1)[1].rsplit("\n</section>", 1)[0]


def test_benchmark_items_are_streamed_as_the_official_loop_cuts_them(tmp_path, monkeypatch):
    """Each update's section is the official cut of ``context.strip()``: no ``Document 1: <title>``
    header, same windows, same order; the problem is ``input.strip()``."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "longbench"
    data.mkdir()
    passages = "".join(
        f"Passage {i}:\nPerson {i} was born in town number {i * 7} and worked as a clerk there.\n"
        for i in range(1, 60)
    )
    record = {
        "input": "  Where was Person 42 born?\n",
        "context": "\n\n  " + passages + "\n  ",
        "answers": ["town number 294"],
        "length": 900,
        "dataset": "hotpotqa",
        "language": "en",
        "all_classes": None,
        "_id": "hq-stream",
    }
    (data / "hotpotqa.jsonl").write_text(json.dumps(record) + "\n")
    with RecordingServer(lambda request: "notes") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench",
            strategies=("memagent",),
            data_path=str(data),
            datasets=("hotpotqa",),
            llm_cache=False,
            strategy_options={"memagent": {"chunk_tokens": 100}},
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    updates = [prompt_of(r) for r in server.requests if prompt_of(r).endswith("Updated memory:\n")]
    expected = official_chunks(record["context"], 100, tokenizer_for(llm))
    assert len(expected) > 3
    assert [_section(p) for p in updates] == expected
    assert all("<problem> \nWhere was Person 42 born?\n</problem>" in p for p in updates)
    (row,) = read_rows(tmp_path / "run")
    assert row["steps"][-1]["stream"] == "plain"


def test_own_corpora_keep_document_headers_unless_told_otherwise(tmp_path):
    from longctx import answer
    from longctx.retrieval import Corpus
    from tests.scripted import ScriptedChatModel

    corpus = Corpus.from_texts(["  alpha text  ", "beta text"], titles=["A", "B"])
    seen: list[str] = []

    def reply(prompt: str) -> str:
        if prompt.endswith("Updated memory:\n"):
            seen.append(_section(prompt))
        return "Therefore, the answer is x."

    answer(corpus, "q?", strategy="memagent", llm=ScriptedChatModel(reply_fn=reply), resume=False)
    answer(
        corpus,
        "q?",
        strategy="memagent",
        llm=ScriptedChatModel(reply_fn=reply),
        resume=False,
        stream="plain",
    )
    assert seen == [
        "Document 1: A\nalpha text\n\nDocument 2: B\nbeta text",
        "alpha text\n\nbeta text",
    ]
