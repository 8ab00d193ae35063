"""Runs OOLONG's official evaluation code (abertsch72/oolong @
adbf1cb56a0b0c7885649ac12589f7d6e215c841, ``src/eval``, unchanged) on the pairs and rows of
``tests/oolong_cases.py`` and writes what it scores and what it sends as JSON
under ``tests/fixtures/oolong/``: the oracle ``tests/test_oolong_scoring.py`` and
``tests/test_oolong_prompts.py`` compare ours with. Outside CI:

    python -m tests.oolong_official [--git-dir /work/.mirror/abertsch72+oolong/repo] [OUT_DIR]

``src/eval`` is exported with ``git archive`` at :data:`COMMIT` into a temporary folder and
imported from there. Recorded:

- ``scores.json``: ``synth_process_response`` and ``dnd_process_response`` on every pair (score
  with its Python type, attempted parse, parse confidence, gold as stored). Date pairs whose parse
  depends on today's date (dateutil fills a missing year, month or day from today) are left out.
- ``prompts.json``: ``eval_script_batched.launch`` run on the rows for synth (batch size 1, and
  ``--batch_by_context_window``, and ``--labels``) and real: per request, its kind
  (``completion`` / ``batch_completion``), the sha256 of its messages and its other arguments;
  and each run's ``overall.txt`` line, for the official overall's rounding. ``export_resume``:
  ``launch`` resumed from ``longctx export``'s ``full_output.jsonl`` of the synth rows
  (``oolong_cases.export_lines``, written by our exporter): the requests it still sends and the
  ``overall.txt`` it writes.

Stood in for (modules the official files import that these paths never use, or use only as the
transport): ``litellm`` (a recorder that answers each request with the canned reply of
``replies_for``), ``datasets.load_dataset`` (the rows, with the few ``Dataset`` methods the script
calls: ``sort``, ``filter``, ``map``, indexing, iteration), ``jsonlines`` (JSON lines to a file),
``tiktoken`` (``compute_context_lengths`` for the ``gpt-5`` family: one token per white-space
separated word), ``transformers`` (imported, unused) and, on Python < 3.12, ``itertools.batched``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import itertools
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import types
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from tests import oolong_cases as cases

COMMIT = "adbf1cb"
GIT_DIR = Path("/work/.mirror/abertsch72+oolong/repo")
OUT = Path(__file__).parent / "fixtures" / "oolong"
MODEL = "gpt-5-mini"


class FakeDataset:
    """The slice of ``datasets.Dataset`` that ``eval_script_batched.launch`` uses."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self._rows = [dict(r) for r in rows]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter([dict(r) for r in self._rows])

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return [r[key] for r in self._rows]
        if isinstance(key, slice):
            rows = self._rows[key]
            names = list(self._rows[0]) if self._rows else []
            return {n: [r[n] for r in rows] for n in names}
        return dict(self._rows[key])

    def sort(self, column: str) -> FakeDataset:
        return FakeDataset(sorted(self._rows, key=lambda r: r[column]))

    def filter(self, keep: Any) -> FakeDataset:
        return FakeDataset([r for r in self._rows if keep(r)])

    def map(self, fn: Any, desc: str | None = None) -> FakeDataset:
        return FakeDataset([fn(dict(r)) for r in self._rows])


class Recorder:
    """Stands in for ``litellm``: records each request, answers with the canned reply."""

    class BadRequestError(Exception):
        pass

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []

    def _answer(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        key = cases.reply_key(messages[0]["content"][1]["text"], messages[1]["content"])
        text = self.replies[key]
        return {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}

    def _record(self, kind: str, messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> None:
        self.requests.append(
            {
                "kind": kind,
                "question": messages[1]["content"],
                "messages_sha256": cases.digest(messages),
                "messages_shape": _shape(messages),
                "arguments": {k: v for k, v in kwargs.items() if k != "api_key"},
            }
        )

    def completion(self, *, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        self._record("completion", messages, kwargs)
        return self._answer(messages)

    def batch_completion(self, *, messages: list[list[dict[str, Any]]], **kwargs: Any) -> list:
        for one in messages:
            self._record("batch_completion", one, kwargs)
        return [self._answer(one) for one in messages]


def _shape(messages: list[dict[str, Any]]) -> Any:
    """The messages with each text replaced by its length (the layout, readable in the fixture)."""
    if isinstance(messages, dict):
        return {
            k: (len(v) if k in ("text", "content") and isinstance(v, str) else _shape(v))
            for k, v in messages.items()
        }
    if isinstance(messages, list):
        return [_shape(m) for m in messages]
    return messages


class _Lines:
    def __init__(self, path: str, mode: str) -> None:
        self._f = open(path, mode, encoding="utf-8")  # noqa: SIM115

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._f.close()

    def __iter__(self) -> Iterator[Any]:
        return (json.loads(line) for line in self._f)

    def write(self, obj: Any) -> None:
        self._f.write(json.dumps(obj, default=str) + "\n")


def _tokens(text: str) -> list[str]:
    return text.split()


@contextlib.contextmanager
def official(git_dir: Path, replies: dict[str, str], rows: dict[str, list]) -> Iterator[Any]:
    """The official ``src/eval`` exported at :data:`COMMIT` and imported with the stand-ins."""
    recorder = Recorder(replies)
    litellm = types.ModuleType("litellm")
    litellm.BadRequestError = Recorder.BadRequestError  # type: ignore[attr-defined]
    litellm.completion = recorder.completion  # type: ignore[attr-defined]
    litellm.batch_completion = recorder.batch_completion  # type: ignore[attr-defined]
    datasets = types.ModuleType("datasets")
    datasets.load_dataset = lambda name, config=None: {  # type: ignore[attr-defined]
        "test": FakeDataset(rows["synth" if name.endswith("synth") else "real"])
    }
    jsonlines = types.ModuleType("jsonlines")
    jsonlines.open = _Lines  # type: ignore[attr-defined]
    tiktoken = types.ModuleType("tiktoken")
    tiktoken.get_encoding = lambda name: types.SimpleNamespace(encode=_tokens)  # type: ignore[attr-defined]
    transformers = types.ModuleType("transformers")
    transformers.AutoTokenizer = None  # type: ignore[attr-defined]
    stand_ins = {
        "litellm": litellm,
        "datasets": datasets,
        "jsonlines": jsonlines,
        "tiktoken": tiktoken,
        "transformers": transformers,
    }
    saved = {k: sys.modules.get(k) for k in stand_ins}
    if not hasattr(itertools, "batched"):
        itertools.batched = lambda it, n: iter(  # type: ignore[attr-defined]
            lambda i=iter(it): tuple(itertools.islice(i, n)), ()
        )
    with tempfile.TemporaryDirectory() as scratch:
        archive = subprocess.run(
            ["git", "--git-dir", str(git_dir), "archive", COMMIT, "src/eval"],
            check=True,
            capture_output=True,
        ).stdout
        tarfile.open(fileobj=io.BytesIO(archive)).extractall(scratch, filter="data")
        sys.modules.update(stand_ins)
        sys.path.insert(0, str(Path(scratch) / "src" / "eval"))
        try:
            helpers = importlib.import_module("eval_helpers")
            script = importlib.import_module("eval_script_batched")
            yield types.SimpleNamespace(
                helpers=helpers, script=script, recorder=recorder, scratch=Path(scratch)
            )
        finally:
            sys.path.remove(str(Path(scratch) / "src" / "eval"))
            for name in ("eval_helpers", "eval_script_batched", "utils", "api_client"):
                sys.modules.pop(name, None)
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v


def _today_dependent(helpers: Any, reply: str) -> bool:
    """Whether dateutil reads the parsed reply differently under two far-apart 'today's."""
    from dateutil import parser

    text, _ = helpers.synth_attempt_answer_parse(reply)
    try:
        a = parser.parse(text, default=datetime(1999, 2, 3))
        b = parser.parse(text, default=datetime(2011, 7, 9))
    except (ValueError, OverflowError):
        return False
    return a != b


def _plain(value: Any) -> Any:
    return value if isinstance(value, (int, float, str, list)) or value is None else str(value)


def score_fixture(helpers: Any) -> dict[str, Any]:
    """The official scorers on every pair of ``oolong_cases``."""
    synth, dropped = [], 0
    for case in cases.synth_cases():
        if case["answer_type"] == "ANSWER_TYPE.DATE" and _today_dependent(helpers, case["reply"]):
            dropped += 1
            continue
        point = {
            "id": case["id"],
            "context_window_id": 0,
            "dataset": "spam",
            "answer": case["answer"],
            "answer_type": case["answer_type"],
        }
        out = helpers.synth_process_response(point, case["reply"], MODEL)
        synth.append(case | _official(out))
    dnd = []
    for case in cases.dnd_cases():
        point = {"id": case["id"], "context_window_id": 0, "answer": case["answer"]}
        out = helpers.dnd_process_response(point, case["reply"], MODEL)
        dnd.append(case | _official(out))
    return {"commit": COMMIT, "synth": synth, "dnd": dnd, "dropped_today_dependent": dropped}


def _official(out: dict[str, Any]) -> dict[str, Any]:
    return {
        "score": out["score"],
        "score_type": type(out["score"]).__name__,
        "attempted_parse": _plain(out["attempted_parse"]),
        "parse_confidence": out["parse_confidence"],
        "gold": _plain(out["answer"]),
    }


RUNS = (
    ("synth", {}),
    ("synth", {"batch_by_context_window": True}),
    ("synth", {"labels": True}),
    ("real", {}),
    ("real", {"batch_by_context_window": True}),
)


def prompt_fixture(git_dir: Path) -> dict[str, Any]:
    """``launch`` on the rows, per run: the requests it sends and its ``overall.txt`` line."""
    rows = {"synth": cases.synth_rows(), "real": cases.dnd_rows()}
    replies = cases.replies_for(rows["synth"], dnd=False) | cases.replies_for(
        rows["real"], dnd=True
    )
    for row in rows["synth"]:  # the --labels runs send the labelled text
        plain = cases.reply_key(row["context_window_text"], row["question"])
        replies[cases.reply_key(row["context_window_text_with_labels"], row["question"])] = replies[
            plain
        ]
    runs = []
    for dataset, flags in RUNS:
        with official(git_dir, replies, rows) as o:
            cwd = os.getcwd()
            os.chdir(o.scratch)
            try:
                o.script.launch(
                    MODEL,
                    dataset,
                    "",
                    flags.get("labels", False),
                    flags.get("batch_by_context_window", False),
                    1,
                    131072,
                    1024,
                    "",
                    None,
                )
                folder = (
                    o.scratch
                    / "results"
                    / dataset
                    / (MODEL + ("-labels" if flags.get("labels") else ""))
                )
                overall = (folder / "overall.txt").read_text(encoding="utf-8")
                scored = [json.loads(line) for line in (folder / "full_output.jsonl").open()]
            finally:
                os.chdir(cwd)
            runs.append(
                {
                    "dataset": dataset,
                    "flags": flags,
                    "requests": o.recorder.requests,
                    "overall": overall,
                    "scored_ids": [s["id"] for s in scored],
                }
            )
    return {"commit": COMMIT, "model": MODEL, "runs": runs}


def export_fixture(git_dir: Path) -> dict[str, Any]:
    """The official ``launch`` resumed from our export of the synth rows (``export_rows``): the
    requests it still sends (none) and its ``overall.txt`` line."""
    rows = {"synth": cases.synth_rows(), "real": []}
    with official(git_dir, {}, rows) as o:
        folder = o.scratch / "results" / "synth" / "full_context"
        folder.mkdir(parents=True)
        lines = cases.export_lines()
        (folder / "full_output.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        cwd = os.getcwd()
        os.chdir(o.scratch)
        try:
            o.script.launch("full_context", "synth", "", False, False, 1, 131072, 1024, "", None)
        finally:
            os.chdir(cwd)
        overall = (folder / "overall.txt").read_text(encoding="utf-8")
        return {"requests": len(o.recorder.requests), "overall": overall}


def main(argv: list[str] | None = None) -> None:
    """Write ``scores.json`` and ``prompts.json`` from the official code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=OUT)
    parser.add_argument("--git-dir", type=Path, default=GIT_DIR)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with official(args.git_dir, {}, {}) as o:
        scores = score_fixture(o.helpers)
    (args.out / "scores.json").write_text(json.dumps(scores, indent=1) + "\n", encoding="utf-8")
    prompts = prompt_fixture(args.git_dir)
    prompts["export_resume"] = export_fixture(args.git_dir)
    (args.out / "prompts.json").write_text(json.dumps(prompts, indent=1) + "\n", encoding="utf-8")
    print(
        f"{len(scores['synth'])} synth pairs ({scores['dropped_today_dependent']} dropped), "
        f"{len(scores['dnd'])} dnd pairs, "
        f"{sum(len(r['requests']) for r in prompts['runs'])} requests"
    )


if __name__ == "__main__":
    main()
