"""Runs the official Recursive Language Models code (alexzhang13/rlm, ``rlm/``, unchanged) against
the recording stub (:mod:`tests.recording_server`) with a scripted root model, and writes every
request body it sends, in order, with the final answer: the oracle
``tests/test_rlm_requests.py`` compares ours with (``tests/fixtures/rlm/official_requests.json``).

    python -m tests.rlm_official OUT.json          # exports both commits from the mirror

Two runs: ``default``, @ 72d6940 (``RLM(max_depth=2, other_backends=[sub-model])``, the
``answer`` dict protocol), and ``paper``, @ a30805b (the paper's FINAL / FINAL_VAR protocol; no
recursion there). The scripted root (:func:`reply`) peeks at the context, prints past the 20,000
character feedback cap, runs two blocks in one turn, overwrites reserved names, raises, calls
``llm_query``, ``llm_query_batched`` and ``rlm_query`` (a child RLM at depth 1 whose own
``rlm_query`` is a plain call at ``max_depth`` 2), and answers. Stood in for: the ``rich`` package
(an inert module: only ``verbose=True`` printing uses it), ``dotenv`` loading (no ``.env`` here)
and the API key (``"x"``); nothing of ``rlm/`` is edited. The official ``LocalREPL`` runs each
cell in a temporary working directory; the script touches no files.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

MIRROR = "/work/.mirror/alexzhang13+rlm/repo"
COMMITS = {"default": "72d6940", "paper": "a30805b"}
ROOT_MODEL = "root-model"
SUB_MODEL = "sub-model"
MAX_ITERATIONS = 10
MAX_DEPTH = 2
QUESTION = "What number does the second document hide?"
CONTEXT = [
    "Doc A. The sky was grey over the harbour; nothing was hidden here.",
    "Doc B. Among the ledgers the clerk wrote the number 42 in red ink.",
    "Doc C. A short note about {braces} and 'quotes' and unicode: café.",
]


def _turns_default() -> list[str]:
    return [
        "Let me look.\n```repl\nprint(type(context), len(context))\nprint(context[0][:40])\n"
        "print(SHOW_VARS())\n```",
        "Two blocks.\n```repl\nprint('x' * 25000)\n```\nand\n```repl\n"
        "chunk = context[1][:30]\nprint(chunk)\n```",
        "Overwrite, then fail.\n```repl\nllm_query = 'overwritten'\ncontext = 'gone'\n```\n"
        "```repl\nkept_not = 1\nraise ValueError('boom')\n```",
        "Sub-calls.\n```repl\na = llm_query('Summarize: ' + context[0][:30])\nprint(a)\n"
        "bs = llm_query_batched(['batch item %d: ' % i + context[i][:20] for i in range(3)])\n"
        "print(bs)\n```",
        "Recurse.\n```repl\nr = rlm_query('child task: ' + context[1])\nprint(r)\n```",
        "Answer.\n```repl\nanswer['content'] = 'The number is ' + r\nanswer['ready'] = True\n```",
    ]


def _turns_child() -> list[str]:
    return [
        "Child looks.\n```repl\nprint(context[:40])\nx = llm_query('child sub: ' + context[-20:])\n"
        "y = rlm_query('grandchild: ' + context[:20])\nprint(x)\nprint(y)\n```",
        "```repl\nanswer['content'] = '42'\nanswer['ready'] = True\n```",
    ]


def _turns_paper() -> list[str]:
    return [
        "Peek.\n```repl\nprint(type(context), len(context))\nprint(context[2])\n"
        "print('y' * 21000)\n```",
        "```repl\nnote = llm_query('Summarize: ' + context[1])\nprint(note)\n```\n```repl\n"
        "lost = 2\nprint(1 / 0)\n```",
        "```repl\nouts = llm_query_batched(['batch item %d: ' % i + c[:15] for i, c in "
        "enumerate(context)])\nfinal_answer = 'The number is 42 (' + outs[1] + ')'\n```",
        "I have it.\nFINAL_VAR(final_answer)",
    ]


def _assistant_turns(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m["role"] == "assistant")


def reply(request: dict[str, Any]) -> str:
    """The scripted model: a root or child turn by the history it is sent, a sub-call's reply
    made from its prompt (so a batch's replies do not depend on their order)."""
    messages = request["messages"]
    if messages[0]["role"] != "system":
        return f"[{request['model']}] reply to: {messages[-1]['content'][:48]}"
    if messages[1]["role"] == "assistant":  # the paper's metadata turn
        turns = _turns_paper()
        i = _assistant_turns(messages) - 1
    elif messages[1]["content"].startswith("Answer the following:"):
        turns = _turns_default()
        i = _assistant_turns(messages)
    else:
        turns = _turns_child()
        i = _assistant_turns(messages)
    return turns[i] if i < len(turns) else "Out of script."


def is_root_turn(request: dict[str, Any]) -> bool:
    """A root RLM turn (not a child's, not a sub-call)."""
    m = request["messages"]
    return m[0]["role"] == "system" and (
        m[1]["role"] == "assistant" or m[1]["content"].startswith("Answer the following:")
    )


def canonical(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each request's whole body, the requests of one ``llm_query_batched`` (whose order the
    official code leaves to its event loop) sorted among themselves."""
    out: list[dict[str, Any]] = []
    batch: list[dict[str, Any]] = []
    for r in requests:
        item = dict(r)
        if r["messages"][-1]["content"].startswith("batch item"):
            batch.append(item)
            continue
        out.extend(sorted(batch, key=json.dumps))
        batch = []
        out.append(item)
    return out + sorted(batch, key=json.dumps)


def _export(commit: str, into: Path) -> None:
    archive = subprocess.run(
        ["git", "-C", MIRROR, "archive", commit, "rlm"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _stand_ins() -> None:
    rich = types.ModuleType("rich")
    for sub in ("console", "panel", "rule", "style", "table", "text"):
        module = types.ModuleType(f"rich.{sub}")
        module.__getattr__ = lambda name: type(name, (), {"__init__": lambda *a, **k: None})  # type: ignore[method-assign]
        sys.modules[f"rich.{sub}"] = module
    sys.modules["rich"] = rich


def run_official(name: str) -> dict[str, Any]:
    """One run of the official code at ``COMMITS[name]``: requests, answer, root turns."""
    from tests.recording_server import RecordingServer

    with tempfile.TemporaryDirectory() as tmp:
        _export(COMMITS[name], Path(tmp))
        for key in [k for k in sys.modules if k == "rlm" or k.startswith("rlm.")]:
            del sys.modules[key]
        sys.path.insert(0, tmp)
        _stand_ins()
        try:
            from rlm import RLM  # type: ignore[import-not-found]

            with RecordingServer(reply, streams=False) as server:
                kwargs = {"model_name": ROOT_MODEL, "base_url": server.url, "api_key": "x"}
                if name == "default":
                    rlm = RLM(
                        backend="openai",
                        backend_kwargs=kwargs,
                        max_depth=MAX_DEPTH,
                        max_iterations=MAX_ITERATIONS,
                        other_backends=["openai"],
                        other_backend_kwargs=[{**kwargs, "model_name": SUB_MODEL}],
                    )
                else:
                    rlm = RLM(
                        backend="openai", backend_kwargs=kwargs, max_iterations=MAX_ITERATIONS
                    )
                result = rlm.completion(CONTEXT, root_prompt=QUESTION)
                requests = list(server.requests)
        finally:
            sys.path.remove(tmp)
    return {
        "commit": COMMITS[name],
        "requests": canonical(requests),
        "answer": result.response,
        "turns": sum(1 for r in requests if is_root_turn(r)),
    }


def main(out: str) -> None:
    """Write the fixture."""
    fixture = {name: run_official(name) for name in COMMITS}
    Path(out).write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
