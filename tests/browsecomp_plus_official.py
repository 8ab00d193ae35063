"""Runs BrowseComp-Plus's official evaluator (texttron/BrowseComp-Plus @ 97c637c,
``scripts_evaluation/evaluate_run.py``, unchanged, exported with ``git archive`` to a temporary
folder) on our export of a run, its judge pointed at the recording stub, and writes what it sent and
computed as JSON: the oracle ``tests/test_browsecomp_plus_official.py`` compares ours with
(``tests/fixtures/browsecomp_plus/official_eval.json``). Outside CI: it needs the mirrored
repository, ``numpy``, ``tqdm`` and ``openai``.

    python -m tests.browsecomp_plus_official [GIT_DIR] OUT.json
    # GIT_DIR default: /work/.mirror/texttron+BrowseComp-Plus/repo

The run is :func:`cases`: 420 invented queries (the release must not appear as plain text) whose
result rows cover finished, failed, budget-stopped and empty answers, retrieval steps, tool calls
with declared documents and whole-corpus readings; each query's judge reply is one of
:data:`REPLY_SHAPES` (bold and plain labels, ``Correct: No``, a confidence over 100, none, no
verdict), with distinct confidences so the calibration bins do not depend on sort order among ties.
Our export (``longctx.experiments.reports.export``) of the rows is the ``--input_dir``.

Stood in for: ``vllm`` only (the script imports ``LLM`` and ``SamplingParams``; no GPU here). The
stand-in's ``LLM.chat`` sends each message list to the stub as one chat completion with the
script's sampling parameters under a vLLM server's names (``temperature``, ``top_p``,
``max_tokens``; ``top_k`` and the ``chat_template_kwargs`` it was given in the body;
``stream: false``, as ``LLM.chat`` does not stream) and hands the reply text back as
``outputs[0].text``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import Sample
from longctx.experiments.reports.export import WRITERS, _answered
from longctx.retrieval import Corpus, Document
from longctx.retrieval.contract import Question

COMMIT = "97c637c"
MIRROR = Path("/work/.mirror/texttron+BrowseComp-Plus/repo")
JUDGE_MODEL = "Qwen/Qwen3-32B"
N_QUERIES = 420
#: Kept whole in the fixture (the rest by SHA-256, compared as exactly).
WHOLE = 12
LABEL = "longctx"

#: Judge reply shapes, by ``{answer}``, ``{correct}`` (yes / no) and ``{confidence}``.
REPLY_SHAPES = (
    "extracted_final_answer: {answer}\n\n[correct_answer]: {answer}\n\nreasoning: They match.\n\n"
    "correct: {correct}\n\nconfidence: {confidence}%",
    "**extracted_final_answer:** {answer}\n**reasoning:** Compared.\n**correct:** {correct}\n"
    "**confidence:** {confidence}%",
    "**extracted_final_answer**: {answer}\n**reasoning**: Compared.\n**correct**: {correct}\n"
    "**confidence**: {confidence}",
    "Extracted_Final_Answer: {answer}\nReasoning: fine\nCorrect: {correct}\n"
    "Confidence: {confidence}",
    "extracted_final_answer: {answer}\nreasoning: over the top\ncorrect: {correct}\n"
    "confidence: 150%",
    "extracted_final_answer: {answer}\nreasoning: no confidence given\ncorrect: {correct}",
    "I cannot judge this one.",
)


def _docid(i: int, k: int) -> str:
    return str(100_000 + 10 * i + k)


def _row(i: int, qid: str, evidence: list[str]) -> dict[str, Any]:
    """Query ``i``'s result row: a shape chosen by ``i``."""
    answer = f"Answer {i}"
    text = f"Explanation: found it [{evidence[0]}].\nExact Answer: {answer}\nConfidence: {i % 97}%"
    row: dict[str, Any] = {"sample_id": qid, "status": "ok", "prediction": text, "stopped": None}
    shape = i % 10
    if shape == 0:
        return {"sample_id": qid, "status": "failed", "error": "RuntimeError: boom"}
    row["evidence_doc_ids"] = evidence[: 1 + i % len(evidence)]
    row["steps"] = [{"node": "retrieve", "chunk_ids": [1, 2]}] * (i % 3)
    if shape == 1:
        row["stopped"] = "budget"
    elif shape == 2:
        row["prediction"] = ""
    elif shape == 3:
        row["steps"] = [
            {"node": "tools", "tool": "search", "doc_ids": [evidence[-1], _docid(i, 8)]},
            {"node": "tools", "tool": "get_document", "doc_ids": [evidence[0]]},
            {"node": "tools", "tool": "search", "doc_ids": []},
        ]
    elif shape == 4:
        row["evidence_doc_ids"] = []
        row["steps"] = [{"node": "final_answer", "chunks": 4}]  # a stream over every document
    return row


def cases() -> dict[str, Any]:
    """The invented queries (``query_id``, ``query``, ``answer``, ``evidence``), their samples'
    corpora, result rows and judge replies (by query id)."""
    queries, rows, replies = [], [], {}
    for i in range(N_QUERIES):
        qid = str(5000 + i)
        evidence = [_docid(i, k) for k in range(1 + i % 4)]
        queries.append(
            {
                "query_id": qid,
                "query": f"Which invented place number {i} is meant here?",
                "answer": f"Answer {i}",
                "evidence": evidence,
            }
        )
        rows.append(_row(i, qid, evidence))
        verdict = "yes" if (i * 7) % 5 < 2 else "no"
        confidence = f"{(i * 37) % 100}.{i % 100:02d}"
        replies[qid] = REPLY_SHAPES[i % len(REPLY_SHAPES)].format(
            answer=f"Answer {i}", correct=verdict, confidence=confidence
        )
    return {"queries": queries, "rows": rows, "replies": replies}


def samples(data: dict[str, Any]) -> list[Sample]:
    """One sample per query: a corpus of its evidence and two negatives."""
    out = []
    for i, q in enumerate(data["queries"]):
        ids = [*q["evidence"], _docid(i, 8), _docid(i, 9)]
        out.append(
            Sample(
                sample_id=q["query_id"],
                benchmark="browsecomp_plus",
                dataset="n6",
                corpus=Corpus([Document(doc_id=d, text=f"page {d}") for d in ids]),
                question=Question(text=q["query"]),
                answers=(q["answer"],),
                metadata={
                    "query_id": q["query_id"],
                    "question": q["query"],
                    "evidence_doc_ids": tuple(q["evidence"]),
                },
            )
        )
    return out


def export(data: dict[str, Any], out: Path) -> dict[str, str]:
    """Our export of the rows under ``out`` (``runs/longctx/<qid>.json``): file name -> text."""
    pairs = [(s, _answered(r, False)) for s, r in zip(samples(data), data["rows"])]
    files = WRITERS["browsecomp_plus"](pairs, out, LABEL)
    return {f.path.name: f.path.read_text(encoding="utf-8") for f in files}


def reply_for(data: dict[str, Any]) -> Any:
    """The stub's reply: the judge reply of the query whose question the prompt holds."""
    by_question = {q["query"]: data["replies"][q["query_id"]] for q in data["queries"]}

    def reply(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        return next(text for question, text in by_question.items() if question in prompt)

    return reply


def query_of(request: dict[str, Any], data: dict[str, Any]) -> str:
    """The query id a judge request is about (its question in the prompt)."""
    prompt = request["messages"][-1]["content"]
    return next(q["query_id"] for q in data["queries"] if f"[question]: {q['query']}\n" in prompt)


STANDIN = """
import os
import openai


class SamplingParams:
    def __init__(self, temperature=1.0, top_p=1.0, top_k=-1, max_tokens=16, **_):
        self.temperature, self.top_p, self.top_k, self.max_tokens = (
            temperature, top_p, top_k, max_tokens
        )


class _Text:
    def __init__(self, text):
        self.text = text


class _Out:
    def __init__(self, text):
        self.outputs = [_Text(text)]


class LLM:
    def __init__(self, model, tensor_parallel_size=1, **_):
        self.model = model
        self.client = openai.OpenAI(base_url=os.environ["BCP_JUDGE_URL"], api_key="stub")

    def chat(self, messages_list, sampling_params, chat_template_kwargs=None):
        p, outs = sampling_params, []
        for messages in messages_list:
            reply = self.client.chat.completions.create(
                model=self.model, messages=messages, stream=False, temperature=p.temperature,
                top_p=p.top_p, max_tokens=p.max_tokens,
                extra_body={"top_k": p.top_k, "chat_template_kwargs": chat_template_kwargs},
            )
            outs.append(_Out(reply.choices[0].message.content or ""))
        return outs
"""


def official_inputs(git_dir: Path, data: dict[str, Any], tmp: Path) -> tuple[Path, Path, Path]:
    """The official repository at :data:`COMMIT` extracted under ``tmp/official``, and the
    ground truth and evidence qrels of ``data`` written as its evaluators read them."""
    official = tmp / "official"
    official.mkdir()
    archive = subprocess.run(
        ["git", "--git-dir", str(git_dir), "archive", COMMIT], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(official)], input=archive, check=True)
    gt = tmp / "gt.jsonl"
    gt.write_text(
        "".join(
            json.dumps({k: q[k] for k in ("query_id", "query", "answer")}) + "\n"
            for q in data["queries"]
        )
    )
    qrels = tmp / "qrel_evidence.txt"
    qrels.write_text(
        "".join(f"{q['query_id']} Q0 {d} 1\n" for q in data["queries"] for d in q["evidence"])
    )
    return official, gt, qrels


def run_official(git_dir: Path) -> dict[str, Any]:
    """Export, run ``evaluate_run.py`` on it against the stub, and collect what it wrote and
    sent."""
    from tests.recording_server import RecordingServer

    data = cases()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        official, gt, qrels = official_inputs(git_dir, data, tmp)
        exported = export(data, tmp / "export")
        (tmp / "standin" / "vllm").mkdir(parents=True)
        (tmp / "standin" / "vllm" / "__init__.py").write_text(STANDIN)
        with RecordingServer(reply_for(data)) as server:
            env = dict(os.environ, PYTHONPATH=str(tmp / "standin"), BCP_JUDGE_URL=server.url)
            subprocess.run(
                [
                    sys.executable,
                    "scripts_evaluation/evaluate_run.py",
                    "--input_dir",
                    str(tmp / "export" / "runs" / LABEL),
                    "--ground_truth",
                    str(gt),
                    "--qrel_evidence",
                    str(qrels),
                    "--eval_dir",
                    str(tmp / "evals"),
                    "--model",
                    JUDGE_MODEL,
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
        verdicts = {}
        for path in summary_path.parent.glob("*_eval.json"):
            result = json.loads(path.read_text())
            verdicts[str(result["query_id"])] = result["judge_result"]
    names = sorted(exported, key=lambda n: int(n.split(".")[0]))
    return {
        "commit": COMMIT,
        "export_sha256": {n: sha256(exported[n]) for n in names},
        "export_whole": {n: exported[n] for n in names[:WHOLE]},
        "summary": summary,
        "judge_results": dict(sorted(verdicts.items(), key=lambda kv: int(kv[0]))),
        "requests_sha256": [sha256(canonical(r)) for r in requests],
        "requests_whole": requests[:WHOLE],
    }


def sha256(text: str) -> str:
    """The hex SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical(request: dict[str, Any]) -> str:
    """A request body as canonical JSON (sorted keys), so key order does not count."""
    return json.dumps(request, sort_keys=True, ensure_ascii=False)


def main(argv: list[str]) -> None:
    """``[GIT_DIR] OUT.json``."""
    git_dir, out = (Path(argv[0]), Path(argv[1])) if len(argv) == 2 else (MIRROR, Path(argv[0]))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run_official(git_dir), indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
