"""OOLONG's requests as ``src/eval/eval_script_batched.py`` (abertsch72/oolong @ adbf1cb) sends
them: the data of its prompt, and the requests of a run in the official order.

Every request is two turns: a system turn of two text parts, :data:`SYSTEM` and the context window
(``context_window_text``, or ``context_window_text_with_labels`` with ``--labels``), and a user turn
that is the item's ``question`` (OOLONG-synth's questions carry their answer-format instruction;
OOLONG-real's context windows begin with theirs). The context part carries Anthropic's
``cache_control: {"type": "ephemeral"}`` except on the batched rest of a window under
``--batch_by_context_window``. The model-specific parts (:data:`MODEL_SPECIFIC`) are declared here
and sent by nothing else: the ``anthropic-beta`` header for a 1M-token window, the Azure
``api_version`` of the seeding call, an empty tool list, and ``reasoning_effort`` when a level is
given. Our strategies send one user turn (:func:`user_turn`, the dataset cards' standard input:
``context_window_text + "\\n" + question``) after :data:`SYSTEM` as the system turn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

#: The system turn's first text part (``eval_script_batched.py``, every request).
SYSTEM = "You are a helpful assistant."
#: The dataset cards' standard input: context window, a newline, the question.
SEPARATOR = "\n"
#: The prompt-cache marker on the context part.
CACHE_CONTROL = {"type": "ephemeral"}
#: The arguments of the official requests that belong to its providers, not to the benchmark.
MODEL_SPECIFIC: dict[str, Any] = {
    "extra_headers": {"anthropic-beta": "context-1m-2025-08-07"},
    "api_version": "2024-12-01",  # only on the seeding litellm.completion call
    "tools": [],
    "reasoning_effort": "--reasoning_level (low, medium, high, minimal), as allowed_openai_params",
}


def official_messages(context: str, question: str, *, cache: bool = True) -> list[dict[str, Any]]:
    """The official messages of one item: the system turn (:data:`SYSTEM`, the context window with
    the cache marker unless ``cache`` is off) and the question as the user turn."""
    window: dict[str, Any] = {"type": "text", "text": f"{context}"}
    if cache:
        window["cache_control"] = dict(CACHE_CONTROL)
    return [
        {"role": "system", "content": [{"type": "text", "text": SYSTEM}, window]},
        {"role": "user", "content": f"{question}"},
    ]


def user_turn(context: str, question: str) -> str:
    """Our one user turn: the context window, ``\\n``, the question (the dataset cards' input)."""
    return f"{context}{SEPARATOR}{question}"


def _arguments(
    kind: str, model: str, model_prefix: str, base_url: str | None, reasoning_level: str
) -> dict[str, Any]:
    """The non-message arguments of one official call (``api_key`` left out)."""
    args: dict[str, Any] = {"base_url": base_url, "model": f"{model_prefix}{model}", "tools": []}
    args["extra_headers"] = dict(MODEL_SPECIFIC["extra_headers"])
    if kind == "completion":
        args["api_version"] = MODEL_SPECIFIC["api_version"]
    if reasoning_level:
        args["reasoning_effort"] = reasoning_level
        args["extra_body"] = {"allowed_openai_params": ["reasoning_effort"]}
    return args


def run_order(window_ids: Sequence[Any], *, batch_by_context_window: bool) -> list[list[int]]:
    """Positions of the items (already sorted by window, as the official run sorts them) grouped
    as the official loop sends them: one group per window, windows in the order Python's ``set``
    iterates their ids (the official ``list(set(...))``), or one item at a time."""
    if not batch_by_context_window:
        return [[i] for i in range(len(window_ids))]
    groups: dict[Any, list[int]] = {}
    for i, w in enumerate(window_ids):
        groups.setdefault(w, []).append(i)
    return [groups[w] for w in list(set(window_ids))]


def official_requests(
    items: Iterable[tuple[Any, str, str]],
    model: str,
    *,
    batch_by_context_window: bool = False,
    batch_size: int = 1,
    model_prefix: str = "",
    base_url: str | None = None,
    reasoning_level: str = "",
) -> list[dict[str, Any]]:
    """The requests of an official run, in its order: ``items`` are ``(window id, context,
    question)`` of the selected items in load order; each request is ``{kind, messages,
    arguments}`` (``kind``: ``completion`` for a window's seeding call, else ``batch_completion``).
    """
    rows = sorted(items, key=lambda r: r[0])  # data.sort("context_window_id"): stable
    out: list[dict[str, Any]] = []

    def add(kind: str, row: tuple[Any, str, str], cache: bool) -> None:
        out.append(
            {
                "kind": kind,
                "messages": official_messages(row[1], row[2], cache=cache),
                "arguments": _arguments(kind, model, model_prefix, base_url, reasoning_level),
            }
        )

    if batch_by_context_window:
        for group in run_order([r[0] for r in rows], batch_by_context_window=True):
            add("completion", rows[group[0]], True)
            for i in group[1:]:
                add("batch_completion", rows[i], False)
        return out
    it = iter(rows)
    while batch := list(islice(it, batch_size)):
        for row in batch:
            add("batch_completion", row, True)
    return out
