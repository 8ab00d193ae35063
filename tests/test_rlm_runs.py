"""RLM in the runner: an own-corpus run (``longctx run --corpus ... --questions ...``) and the same
questions fanned out as Ray tasks (``--ray``), against the recording stub with a scripted root
model: each question's turns and sub-call reach the stub as the official client's bodies, each
answer is the script's, and the Ray run's answers and requests equal the local run's."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from longctx.experiments.cli.app import main
from longctx.experiments.runner import latest_rows, read_rows
from tests.recording_server import RecordingServer

#: The questions, each with the word the scripted root greps for and the expected answer.
QUESTIONS = [
    ("hq", "In which city is Halvorsen Maritime headquartered?", "Halvorsen"),
    ("ceo", "Who is the chief executive of Kestrel Aviation Services?", "Kestrel"),
    ("bio", "Where does Lindqvist Bioworks do research?", "Lindqvist"),
]
DOCUMENTS = {
    "halvorsen.txt": "Halvorsen Maritime is headquartered in Bergen, Norway.",
    "kestrel.txt": "Kestrel Aviation Services is led by chief executive Moira Kettering.",
    "lindqvist.txt": "Lindqvist Bioworks runs its research laboratory in Uppsala.",
}


def _root_turn(request: dict[str, Any]) -> int | None:
    """The root turn (0-based) a request asks for, ``None`` for a sub-call."""
    messages = request["messages"]
    if messages[0]["role"] != "system":
        return None
    return sum(1 for m in messages if m["role"] == "assistant")


def reply(request: dict[str, Any]) -> str:
    """The scripted root: turn 1 greps the documents for the question's key word and asks a
    sub-call over what it found; turn 2 answers with the sub-call's reply. A sub-call's reply is
    the last sentence of its prompt."""
    turn = _root_turn(request)
    if turn is None:
        return "Found: " + request["messages"][-1]["content"].rsplit("\n", 1)[-1]
    if turn == 0:
        sent = "\n".join(m["content"] for m in request["messages"])
        word = next(w for _, q, w in QUESTIONS if q in sent)
        return (
            "```repl\n"
            f"hits = [d for d in context if {word!r} in d]\n"
            "print(len(context), len(hits))\n"
            "found = llm_query('Answer from this text:\\n' + hits[0].split('\\n')[-1])\n"
            "```"
        )
    return "```repl\nanswer['content'] = found\nanswer['ready'] = True\n```"


def own_corpus(tmp_path: Path) -> tuple[Path, Path]:
    """The corpus folder and the questions file."""
    folder = tmp_path / "docs"
    folder.mkdir(parents=True)
    for name, text in DOCUMENTS.items():
        (folder / name).write_text(text, encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(json.dumps({"id": i, "question": q}) + "\n" for i, q, _ in QUESTIONS),
        encoding="utf-8",
    )
    return folder, questions


def run_cli(tmp_path: Path, out: str, *extra: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``longctx run --corpus --questions --strategies rlm`` at a fresh recording stub: the rows
    by question id, and the request bodies the stub received."""
    folder, questions = own_corpus(tmp_path / out)
    with RecordingServer(reply, streams=False) as server:
        saved = os.environ.get("OPENAI_BASE_URL")
        os.environ["OPENAI_BASE_URL"] = server.url
        try:
            code = main(
                [
                    "run",
                    "--corpus",
                    str(folder),
                    "--questions",
                    str(questions),
                    "--strategies",
                    "rlm",
                    "--llm",
                    "openai:root-model",
                    "--out",
                    str(tmp_path / out / "run"),
                    *extra,
                ]
            )
        finally:
            if saved is None:
                os.environ.pop("OPENAI_BASE_URL", None)
            else:
                os.environ["OPENAI_BASE_URL"] = saved
        requests = list(server.requests)
    assert code == 0
    rows = {q: r for (q, _), r in latest_rows(read_rows(tmp_path / out / "run")).items()}
    return rows, requests


EXPECTED = {
    "hq": "Found: Halvorsen Maritime is headquartered in Bergen, Norway.",
    "ceo": "Found: Kestrel Aviation Services is led by chief executive Moira Kettering.",
    "bio": "Found: Lindqvist Bioworks runs its research laboratory in Uppsala.",
}


def check_run(rows: dict[str, Any], requests: list[dict[str, Any]]) -> None:
    """Every question answered by the script: three requests each (two root turns, one
    sub-call), every body the official client's (``model`` and ``messages`` only)."""
    assert {q: r["status"] for q, r in rows.items()} == dict.fromkeys(EXPECTED, "ok")
    assert {q: r["prediction"] for q, r in rows.items()} == EXPECTED
    assert all(set(body) == {"model", "messages"} for body in requests)
    kinds = Counter("sub" if _root_turn(r) is None else f"turn {_root_turn(r)}" for r in requests)
    assert kinds == {"turn 0": 3, "turn 1": 3, "sub": 3}
    assert {q: r["usage"]["llm_calls"] for q, r in rows.items()} == dict.fromkeys(EXPECTED, 3)


def test_an_own_corpus_run_answers_every_question_with_the_official_requests(
    tmp_path, isolated_cache
):
    rows, requests = run_cli(tmp_path, "local", "--option", "rlm.repl=unsafe_inprocess")
    check_run(rows, requests)


@pytest.mark.ray
def test_an_own_corpus_run_fanned_out_on_ray_equals_the_local_run(tmp_path, isolated_cache):
    """The questions as Ray tasks (each RLM, its REPL and its sub-calls in its worker, the jailed
    REPL by default): the same answers, and the same requests as the local run."""
    if os.environ.get("LONGCTX_REQUIRE_RAY") == "1":  # make test-ray: a missing Ray is a failure
        import ray
    else:
        ray = pytest.importorskip("ray")
    root = Path(__file__).resolve().parent.parent
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), saved) if p)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        local_rows, local_requests = run_cli(tmp_path, "local")
        rows, requests = run_cli(tmp_path, "ray", "--ray")
    finally:
        ray.shutdown()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    check_run(rows, requests)
    assert {q: r["prediction"] for q, r in rows.items()} == {
        q: r["prediction"] for q, r in local_rows.items()
    }
    key = lambda body: json.dumps(body, sort_keys=True)  # noqa: E731 - order differs on Ray
    assert sorted(map(key, requests)) == sorted(map(key, local_requests))
