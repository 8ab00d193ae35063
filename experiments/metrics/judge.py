"""Calling an LLM judge through any LangChain chat model, with failures made explicit.

A judge call that raises is recorded as a :class:`JudgeResult` with ``error`` set,
never swallowed: each benchmark decides what an error means (CorpusQA: wrong;
Loong: not a parseable rating).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

VERSION = 1


@dataclass(frozen=True)
class JudgeResult:
    """The judge's raw reply, or the error that prevented one."""

    text: str | None
    error: str | None = None


def call_judge(judge: Any, prompt: str, system: str | None = None) -> JudgeResult:
    """Ask ``judge`` (a LangChain chat model) once, at its own temperature.

    Args:
        judge: A ``BaseChatModel``; configure temperature 0 on it, as the official judges run.
        prompt: The user turn.
        system: Optional system turn.

    Returns:
        The reply text, or the exception's type and message in ``error``.
    """
    from langchain_core.messages import HumanMessage, SystemMessage

    messages = ([SystemMessage(system)] if system else []) + [HumanMessage(prompt)]
    try:
        reply = judge.invoke(messages)
    except Exception as exc:  # noqa: BLE001 - any provider error is an outcome to record, not to crash a 1,600-item run on
        return JudgeResult(text=None, error=f"{type(exc).__name__}: {exc}")
    content = reply.content if isinstance(reply.content, str) else str(reply.content)
    return JudgeResult(text=content)
