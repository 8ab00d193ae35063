"""A resumed experiment skips only the answers it would have made itself: same model, same request
settings, same strategy options and prompts; the others are answered again, counted at
the server."""

import json
import logging

from longctx.experiments.planning.plan import plan_experiment
from longctx.experiments.runner import RunConfig, latest_rows, read_rows, run_experiment
from longctx.experiments.runner.changed_settings import changed_fields, expected_config
from tests.recording_server import RecordingServer
from tests.scripted import ScriptedChatModel
from tests.test_runner import V2, v2_samples


def _config(**options) -> RunConfig:
    return RunConfig(
        benchmark="longbench_v2",
        strategies=("rag",),
        data_path=V2,
        llm_cache=False,
        concurrency=1,
        strategy_options={"rag": {"top_k": 2, **options}},
    )


def _openai(url: str, **settings):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="rec", base_url=url, api_key="k", max_retries=0, **settings)


def test_a_model_with_other_request_settings_answers_again_at_the_server(tmp_path, caplog):
    """Same name and server, another ``extra_body``: the old code skipped all three pairs
    (0 requests)."""
    with RecordingServer(lambda r: "The correct answer is (A)") as server:
        first = run_experiment(_config(), tmp_path, llm=_openai(server.url), show_progress=False)
        sent = len(server.requests)
        with caplog.at_level(logging.WARNING, logger="longctx.experiments.runner"):
            second = run_experiment(
                _config(),
                tmp_path,
                llm=_openai(server.url, extra_body={"top_k": 20}),
                show_progress=False,
            )
        again = server.requests[sent:]
        third = run_experiment(
            _config(),
            tmp_path,
            llm=_openai(server.url, extra_body={"top_k": 20}),
            show_progress=False,
        )
        after = len(server.requests)
    assert first["ok"] == 3 and sent == 3
    assert second["skipped"] == 0 and second["changed"] == 3 and second["ok"] == 3
    assert len(again) == 3 and all(r.get("top_k") == 20 for r in again)
    assert (
        third["skipped"] == 3 and third["changed"] == 0 and after == sent + 3
    )  # the new answers resume as usual
    assert "3 rag answer(s) were made with other settings (llm_settings:" in caplog.text
    latest = latest_rows(read_rows(tmp_path))
    tuned = expected_config("rag", {}, _openai(server.url, extra_body={"top_k": 20}))
    assert {row["config"]["llm_settings"] for row in latest.values()} == {tuned["llm_settings"]}


class OtherModel(ScriptedChatModel):
    """Another model (its class name is its name)."""


def test_a_changed_option_or_model_answers_again(tmp_path):
    llm = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)")
    run_experiment(_config(), tmp_path, llm=llm, show_progress=False)
    same = run_experiment(_config(), tmp_path, llm=llm, show_progress=False)
    assert same["skipped"] == 3 and same["ok"] == 0
    changed = run_experiment(_config(top_k=3), tmp_path, llm=llm, show_progress=False)
    assert changed["changed"] == 3 and changed["ok"] == 3
    other = OtherModel(reply_fn=lambda p: "The correct answer is (B)")
    moved = run_experiment(_config(top_k=3), tmp_path, llm=other, show_progress=False)
    assert moved["changed"] == 3 and moved["ok"] == 3
    assert {r["prediction"] for r in latest_rows(read_rows(tmp_path)).values()} == {
        "The correct answer is (B)"
    }


def test_the_plan_counts_what_the_run_will_answer(tmp_path):
    """The plan shown before a run and the run itself decide "done" in one place: a changed option
    is planned."""
    llm = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)")
    run_experiment(_config(), tmp_path, llm=llm, show_progress=False)
    unchanged, _ = plan_experiment(_config(), v2_samples(), llm, tmp_path, calibrate=False)
    changed, _ = plan_experiment(_config(top_k=3), v2_samples(), llm, tmp_path, calibrate=False)
    assert sum(p.questions for p in unchanged) == 0 and sum(p.questions for p in changed) == 3


def test_rows_of_older_versions_are_matched_on_what_they_recorded():
    """A row written before ``llm_settings`` existed is compared on the fields it has."""
    llm = ScriptedChatModel(reply_fn=lambda p: "x")
    wanted = expected_config("rag", {"top_k": 2}, llm)
    old = {k: v for k, v in wanted.items() if k != "llm_settings"}
    assert changed_fields(old, wanted, "rag") == []
    assert changed_fields({**old, "top_k": 5}, wanted, "rag") == ["top_k: 5 -> 2"]
    assert changed_fields(None, wanted, "rag") == []
    assert (
        changed_fields(json.loads(json.dumps(wanted)), wanted, "rag") == []
    )  # tuples stored as lists compare equal


def test_an_invalid_option_leaves_the_comparison_to_the_run():
    assert expected_config("rag", {"top_kk": 2}, ScriptedChatModel(reply_fn=lambda p: "x")) is None


def test_how_a_run_executes_is_not_compared():
    """Concurrency, resume and a batched strategy's runtime fields change no request: a resume keeps
    those answers."""
    llm = ScriptedChatModel(reply_fn=lambda p: "x")
    wanted = expected_config("memagent", {}, llm)
    recorded = {
        **wanted,
        "concurrency": wanted["concurrency"] + 3,
        "trace_chars": 1,
        "resume": not wanted["resume"],
    }
    assert changed_fields(recorded, wanted, "memagent") == []
    assert changed_fields({**wanted, "chunk_tokens": 1}, wanted, "memagent") == [
        f"chunk_tokens: 1 -> {wanted['chunk_tokens']}"
    ]


def test_a_ray_worker_rebuilds_the_callers_request_settings():
    """The structured map's Ray workers rebuild an OpenAI model from a recipe: it must ask as the
    caller's model asks (the old recipe dropped extra_body, sampling, seed and stop)."""
    from longctx import make_chat_model
    from longctx.graphs.calls.request_settings import request_settings
    from longctx.graphs.structured.ray_map import model_recipe

    llm = make_chat_model(
        "openai:m",
        base_url="http://127.0.0.1:9/v1",
        max_retries=1,
        extra_body={"top_k": 20},
        temperature=0.3,
        top_p=0.9,
        seed=7,
        stop=["\n\n"],
        model_kwargs={"min_p": 0.05},
        default_headers={"X-Variant": "int4"},
    )
    assert request_settings(model_recipe(llm).build()) == request_settings(llm)


def test_structured_records_are_kept_per_request_settings(tmp_path):
    """Another extra_body reads every document anew instead of reusing the first model's records."""
    from longctx import make_chat_model
    from longctx.graphs.structured.mapping import extraction_model

    plain = make_chat_model("openai:m", base_url="http://127.0.0.1:9/v1")
    tuned = make_chat_model("openai:m", base_url="http://127.0.0.1:9/v1", extra_body={"top_k": 20})
    rotated = make_chat_model("openai:m", base_url="http://127.0.0.1:9/v1", api_key="sk-other")
    assert extraction_model(plain) != extraction_model(tuned)
    assert extraction_model(plain) == extraction_model(rotated)


def test_the_endpoints_of_one_run_count_as_one_model():
    """A Ray run spreads units over endpoints serving one model: their answers resume; another
    server's do not."""
    llm = ScriptedChatModel(reply_fn=lambda p: "x")
    wanted = {**expected_config("rag", {}, llm), "llm": "m @ http://a/v1"}
    other_endpoint = {**wanted, "llm": "m @ http://b/v1"}
    assert changed_fields(other_endpoint, wanted, "rag", same_models={"m @ http://b/v1"}) == []
    assert changed_fields(other_endpoint, wanted, "rag") == [
        'llm: "m @ http://b/v1" -> "m @ http://a/v1"'
    ]
