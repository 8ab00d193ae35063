"""RULER-HotpotQA (MemAgent's headline evaluation): metric, loader, scoring and the request
it sends.

Expected values are written here from MemAgent's ``taskutils/memory_eval`` code
(``utils/__init__.py`` metrics and ``extract_answer``, ``utils/openai_api.py``
``template_0shot``, ``utils/envs.py`` budgets, ``ruler_hqa.py`` sampling and guard),
independently of the loader's and metric module's own copies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longctx import make_chat_model
from longctx.experiments.benchmarks import (
    BENCHMARKS,
    BenchmarkDataError,
    Prediction,
    load_benchmark,
    score,
)
from longctx.experiments.metrics import METRICS
from longctx.experiments.metrics import ruler_hqa as m
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from tests.recording_server import RecordingServer

DATA = Path(__file__).parent / "fixtures" / "benchmarks" / "ruler_hqa"

TEMPLATE_0SHOT = (
    "Please read the following text and answer the question below.\n\n<text>\n{doc}\n</text>\n\n"
    '{q}\n\nFormat your response as follows: "Therefore, the answer is (insert answer here)".'
)


@pytest.mark.parametrize(
    "prediction, gold, expected",
    [
        ("London", "London", 1.0),
        ("london.", "London", 1.0),  # case and punctuation normalised
        ("in London, England", "London", 1.0),  # gold inside the prediction
        ("London", "London, England", 1.0),  # prediction inside the gold
        ("The Beatles", "Beatles", 1.0),  # articles dropped
        ("Paris", "London", 0.0),
        ("Lon don", "London", 0.0),
        (
            "the",
            "London",
            1.0,
        ),  # normalises to "" which is in every gold: the official guard runs before the metric
        ("yes", "no", 0.0),
    ],
)
def test_sub_em_is_memagents_substring_match(prediction, gold, expected):
    assert METRICS.get("sub_em")(prediction, gold) == expected


@pytest.mark.parametrize(
    "prediction, gold, em, f1",
    [
        ("London", "london", 1.0, 1.0),
        ("in London", "London", 0.0, round(2 * 0.5 * 1 / 1.5, 2)),
        ("yes indeed", "yes", 0.0, 0.0),  # a yes/no gold needs the exact yes/no
        ("no", "yes", 0.0, 0.0),  # yes/no mismatch is 0 whatever the overlap
        ("Paris", "London", 0.0, 0.0),
    ],
)
def test_item_scores_round_as_calc_metrics_does(prediction, gold, em, f1):
    assert m.item_scores(prediction, gold) == {
        "f1": f1,
        "em": em,
        "sub_em": m.sub_em(prediction, gold),
    }


@pytest.mark.parametrize(
    "response, expected",
    [
        ("Therefore, the answer is London.", "London"),
        ("Therefore, the answer is **London**.", "London"),
        ("the answer is A. No wait, the answer is B.", "B"),  # the last occurrence
        ("<think>the answer is A</think>Therefore, the answer is B", "B"),
        ("The Answer Is London", None),  # case-sensitive, as official
        ("London", None),
        ("Therefore, the answer is .", ""),
    ],
)
def test_official_prediction(response, expected):
    assert m.official_prediction(response) == expected


def test_loader_reads_text_and_index_files():
    samples = load_benchmark("ruler_hqa", DATA)
    assert [s.sample_id for s in samples] == ["eval_50-0", "eval_50-1", "eval_12800-0"]
    first, _, big = samples
    assert (
        first.dataset == "eval_50"
        and first.answers == ("London",)
        and first.question.text == "Where was Ada Lovelace born?"
    )
    assert first.corpus[0].text.startswith("Document 1:\nBob Marley\n") and len(first.corpus) == 1
    assert (
        first.metadata["length_bucket"] == "7K"
        and first.metadata["num_docs"] == 50
        and first.metadata["index"] == 7
    )
    # read_hotpotqa's pool is the sorted unique "title\ntext" paragraphs: Ada=0, Bob=1, Cats=2
    assert big.corpus[0].text == (
        "Document 1:\nCats\nCats purr when content.\n\nDocument 2:\nAda Lovelace\n"
        "Ada Lovelace was born in London.\n\nDocument 3:\nBob Marley\n"
        "Bob Marley was born in Nine Mile, Jamaica."
    )
    assert big.metadata["length_bucket"] == "1.75M"
    assert [s.sample_id for s in load_benchmark("ruler_hqa", DATA, datasets=["eval_50"])] == [
        "eval_50-0",
        "eval_50-1",
    ]


def test_loader_errors_name_what_is_missing(tmp_path):
    with pytest.raises(BenchmarkDataError, match=str(tmp_path)):
        load_benchmark("ruler_hqa", tmp_path)
    (tmp_path / "eval_12800.json").write_text((DATA / "eval_12800.json").read_text())
    with pytest.raises(BenchmarkDataError, match="hotpotqa_dev.json"):
        load_benchmark("ruler_hqa", tmp_path)
    (tmp_path / "hotpotqa_dev.json").write_text((DATA / "hotpotqa_dev.json").read_text())
    (tmp_path / "eval_12800.json").write_text(
        json.dumps([{"context": [0, 3], "input": "Q?", "answers": ["a"]}])
    )
    with pytest.raises(BenchmarkDataError, match="index 3 is not among the 3 paragraphs"):
        load_benchmark("ruler_hqa", tmp_path)
    with pytest.raises(KeyError, match="known"):
        load_benchmark("ruler_hqa", DATA, datasets=["eval_7"])


def test_prompt_and_protocol_are_memagents():
    sample = load_benchmark("ruler_hqa", DATA, datasets=["eval_50"])[0]
    spec = BENCHMARKS.get("ruler_hqa")
    assert spec.prompt(sample) == TEMPLATE_0SHOT.format(
        doc=sample.corpus[0].text.strip(), q="Where was Ada Lovelace born?"
    )
    assert spec.protocol(sample) == {
        "max_new_tokens": 10000,
        "max_input_tokens": 120000,
        "temperature": 0.7,
    }


def test_score_ours_and_the_official_number():
    samples = load_benchmark("ruler_hqa", DATA)
    preds = [
        Prediction("eval_50-0", "Therefore, the answer is London."),  # 1 / 1
        Prediction(
            "eval_50-1", "Bob Marley is a musician."
        ),  # no phrase: ours scores the reply itself (0 here), official 0
        Prediction("eval_12800-0", None, "timeout"),  # failed: 0 for us, left out officially
    ]
    result = score("ruler_hqa", preds, samples=samples)
    assert result["per_sample"] == {"eval_50-0": 100.0, "eval_50-1": 0.0, "eval_12800-0": 0.0}
    assert result["lengths"]["7K"] == {"sub_em": 50.0, "em": 50.0, "f1": 50.0, "n": 2}
    assert result["official"] == {"7K": 50.0} and result["official_overall"] == 50.0
    assert (
        result["overall"] == round(100 / 3, 2)
        and result["n_failed"] == 1
        and result["n_without_answer_phrase"] == 1
    )
    # an already-extracted answer (a strategy that returns MemAgent's extraction) is scored as given
    # by us, 0 officially; a longer reply without the phrase is 0 for both, even where sub_em would
    # match ("no" is in "not")
    long_reply = "I have read the memory carefully and I do not know who that is."
    extracted = score(
        "ruler_hqa",
        [Prediction("eval_50-0", "London"), Prediction("eval_50-1", long_reply)],
        samples=samples,
    )
    assert (
        extracted["per_sample"] == {"eval_50-0": 100.0, "eval_50-1": 0.0}
        and extracted["official_overall"] == 0.0
    )


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("London", "London"),
        (" Nine Mile, Jamaica ", "Nine Mile, Jamaica"),
        (
            "one two three four five six seven eight nine ten",
            "one two three four five six seven eight nine ten",
        ),
        ("one two three four five six seven eight nine ten eleven", None),
        ("London\nParis", None),
        ("", None),
    ],
)
def test_a_reply_without_the_phrase_counts_only_when_it_reads_as_an_extracted_answer(
    reply, expected
):
    from longctx.experiments.benchmarks.ruler_hqa import as_given

    assert as_given(reply) == expected


def test_full_context_sends_memagents_prompt_budget_and_temperature(tmp_path):
    with RecordingServer(lambda request: "Therefore, the answer is London.") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="ruler_hqa",
            strategies=("full_context",),
            data_path=str(DATA),
            datasets=("eval_50",),
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path, llm=llm, show_progress=False)
    records = load_benchmark("ruler_hqa", DATA, datasets=["eval_50"])
    expected = {
        TEMPLATE_0SHOT.format(doc=s.corpus[0].text.strip(), q=s.question.text.strip())
        for s in records
    }
    assert {r["messages"][0]["content"] for r in server.requests} == expected
    assert all(
        len(r["messages"]) == 1 and r["messages"][0]["role"] == "user" for r in server.requests
    )
    # MAX_OUTPUT_LEN (the OpenAI client may name the field either way) and
    # ruler_hqa.py's temperature
    assert {r.get("max_tokens", r.get("max_completion_tokens")) for r in server.requests} == {10000}
    assert {r["temperature"] for r in server.requests} == {0.7}
    rows = read_rows(tmp_path)
    assert {r["prediction"] for r in rows} == {"Therefore, the answer is London."}


def test_the_documented_cli_chain_runs_reports_and_exports(tmp_path, monkeypatch, capsys):
    """``longctx run --benchmark ruler_hqa --data PATH``, then ``report`` and ``export``, against
    a server."""
    from longctx.experiments.cli.app import main

    def reply(request: dict) -> str:
        return (
            "Therefore, the answer is London."
            if "Ada" in request["messages"][0]["content"]
            else "Bob Marley was a singer from Jamaica, not a cat at all."
        )

    run = tmp_path / "run"
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        argv = [
            "run",
            "--benchmark",
            "ruler_hqa",
            "--data",
            str(DATA),
            "--strategies",
            "full_context",
            "--llm",
            "openai:rec",
            "--out",
            str(run),
        ]
        assert main(argv) == 0
    assert main(["report", str(run), "--no-plots", "--no-html"]) == 0
    scores = json.loads((run / "report" / "scores.json").read_text())["full_context"]
    assert (
        scores["lengths"]["7K"]["sub_em"] == 50.0 and scores["lengths"]["1.75M"]["sub_em"] == 100.0
    )
    assert (
        scores["official"] == {"7K": 50.0, "1.75M": 100.0}
        and scores["n_without_answer_phrase"] == 1
    )
    assert main(["export", str(run)]) == 0
    assert "cd " in capsys.readouterr().out
    lines = (
        (run / "official" / "results" / "ruler_hqa_50" / "full_context.jsonl")
        .read_text()
        .splitlines()
    )
    assert [json.loads(line)["judge_sub_em"] for line in lines] == [
        1.0,
        0,
    ]  # no phrase: pred None, judged 0 as official


RECURRENT_FINAL = (  # MemAgent utils/recurrent.py TEMPLATE_FINAL
    "You are presented with a problem and a previous memory. Please answer the problem based on "
    'the previous memory and format your response as follows "Therefore, the answer is (insert '
    'answer here)".\n\n<problem> \n{prompt}\n</problem>\n\n<memory>\n{memory}\n</memory>\n\n'
    "Your answer:\n"
)


def test_memagent_sends_the_recurrent_loops_problem_budgets_and_final_prompt(tmp_path):
    def reply(request: dict) -> str:
        text = request["messages"][0]["content"]
        return (
            "Therefore, the answer is London."
            if text.startswith("You are presented with a problem and a previous")
            else "Ada: London."
        )

    with RecordingServer(reply) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="ruler_hqa",
            strategies=("memagent",),
            data_path=str(DATA),
            datasets=("eval_50",),
            limit=1,
            strategy_options={"memagent": {"final_instruction": "memagent"}},
            llm_cache=False,
        )
        run_experiment(cfg, tmp_path, llm=llm, show_progress=False)
    *updates, final = server.requests
    assert updates and all(
        "<problem> \nWhere was Ada Lovelace born?\n</problem>" in r["messages"][0]["content"]
        for r in updates
    )
    assert {
        (r.get("max_tokens", r.get("max_completion_tokens")), r["temperature"], r["top_p"])
        for r in updates
    } == {(1024, 0.7, 0.95)}
    assert final["messages"] == [
        {
            "role": "user",
            "content": RECURRENT_FINAL.format(
                prompt="Where was Ada Lovelace born?", memory="Ada: London."
            ),
        }
    ]
    # in MemAgent's own format the final call is recurrent.py's: 1,024 tokens (RECURRENT_MAX_NEW)
    assert (
        final.get("max_tokens", final.get("max_completion_tokens")),
        final["temperature"],
        final["top_p"],
    ) == (1024, 0.7, 0.95)
    row = read_rows(tmp_path)[0]
    assert (
        score(
            "ruler_hqa",
            [(load_benchmark("ruler_hqa", DATA, datasets=["eval_50"])[0], row["prediction"])],
        )["overall"]
        == 100.0
    )
