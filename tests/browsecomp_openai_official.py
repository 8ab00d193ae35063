"""Runs BrowseComp-Plus's other official evaluator (texttron/BrowseComp-Plus @ 97c637c,
``scripts_evaluation/evaluate_with_openai.py``, unchanged, exported with ``git archive`` to a
temporary folder) on our export of the run of ``tests/browsecomp_plus_official.py`` (its 420
invented queries and judge reply shapes), its OpenAI client pointed at the recording stub's
Responses API route, and writes what it sent and computed as JSON: the oracle
``tests/test_browsecomp_plus_official.py`` compares our ``judge_setting="evaluate_with_openai"``
with (``tests/fixtures/browsecomp_plus/official_eval_openai.json``). Outside CI: it needs the
mirrored repository, ``numpy``, ``tqdm`` and ``openai``.

    python -m tests.browsecomp_openai_official [GIT_DIR] OUT.json
    # GIT_DIR default: /work/.mirror/texttron+BrowseComp-Plus/repo

Stood in for: nothing in the script. The OpenAI service is the recording stub
(``OPENAI_BASE_URL``; ``OPENAI_API_KEY=stub``), which answers ``/v1/responses`` with the query's
judge reply as one ``message`` output item; the judge model is the script's default, gpt-4.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests import browsecomp_plus_official as base

COMMIT = base.COMMIT
JUDGE_MODEL = "gpt-4.1"


def prompt_of(request: dict[str, Any]) -> str:
    """The judge prompt of a Responses request (``input`` a string, as the script sends it) or a
    chat request."""
    given = request.get("input")
    if isinstance(given, str):
        return given
    return str(request["messages"][-1]["content"])


def reply_for(data: dict[str, Any]) -> Any:
    """The stub's reply: the judge reply of the query whose question the prompt holds."""
    by_question = {q["query"]: data["replies"][q["query_id"]] for q in data["queries"]}

    def reply(request: dict[str, Any]) -> str:
        prompt = prompt_of(request)
        return next(text for question, text in by_question.items() if question in prompt)

    return reply


def query_of(request: dict[str, Any], data: dict[str, Any]) -> str:
    """The query id a judge request is about (its question in the prompt)."""
    prompt = prompt_of(request)
    return next(q["query_id"] for q in data["queries"] if f"[question]: {q['query']}\n" in prompt)


def run_official(git_dir: Path) -> dict[str, Any]:
    """Export, run ``evaluate_with_openai.py`` on it against the stub, and collect what it wrote
    and sent."""
    from tests.recording_server import RecordingServer

    data = base.cases()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        official, gt, qrels = base.official_inputs(git_dir, data, tmp)
        base.export(data, tmp / "export")
        with RecordingServer(reply_for(data)) as server:
            env = dict(os.environ, OPENAI_BASE_URL=server.url, OPENAI_API_KEY="stub")
            subprocess.run(
                [
                    sys.executable,
                    "scripts_evaluation/evaluate_with_openai.py",
                    "--input_dir",
                    str(tmp / "export" / "runs" / base.LABEL),
                    "--ground_truth",
                    str(gt),
                    "--qrel_evidence",
                    str(qrels),
                    "--eval_dir",
                    str(tmp / "evals"),
                ],
                cwd=official,
                env=env,
                check=True,
                capture_output=True,
            )
            requests = sorted(server.requests, key=lambda r: int(query_of(r, data)))
        (summary_path,) = (tmp / "evals").rglob("evaluation_summary.json")
        summary = json.loads(summary_path.read_text())
        summary.pop("Evaluation Date")
        summary["per_query_metrics"].sort(key=lambda q: int(q["query_id"]))  # glob order
        verdicts = {}
        for path in summary_path.parent.glob("*_eval.json"):
            result = json.loads(path.read_text())
            verdicts[str(result["query_id"])] = result["judge_result"]
    return {
        "commit": COMMIT,
        "judge_model": JUDGE_MODEL,
        "summary": summary,
        "judge_results": dict(sorted(verdicts.items(), key=lambda kv: int(kv[0]))),
        "requests_sha256": [base.sha256(base.canonical(r)) for r in requests],
        "requests_whole": requests[: base.WHOLE],
    }


def main(argv: list[str]) -> None:
    """``[GIT_DIR] OUT.json``."""
    git_dir, out = (
        (Path(argv[0]), Path(argv[1])) if len(argv) == 2 else (base.MIRROR, Path(argv[0]))
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run_official(git_dir), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
