"""Stopping a run between model calls: :class:`CancelGuard` raises :class:`RunCancelled` at the next
call once cancelled.

LangChain logs a warning for every callback that raises ("Error in CancelGuard.on_chat_model_start
callback: RunCancelled(...)"), also when the handler asks for the error to propagate, so every
thread that reached its next call after Ctrl-C printed one under the runner's own "Stopping" line.
The guard's refusal is the intended stop, not an error: :class:`QuietCancellation` drops exactly
those records from LangChain's callback logger (other callback errors are still logged).
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

#: The logger LangChain reports callback errors on.
CALLBACK_LOGGER = "langchain_core.callbacks.manager"


class RunCancelled(Exception):
    """Raised inside a run whose caller was cancelled, at its next model call or step."""


def cancel_point(cancel: threading.Event) -> None:
    """Raise :class:`RunCancelled` when ``cancel`` is set."""
    if cancel.is_set():
        raise RunCancelled(
            "the run was cancelled; its checkpoint is kept and the next identical call resumes it"
        )


class QuietCancellation(logging.Filter):
    """Drops LangChain's "Error in <handler>.<event> callback: RunCancelled(...)" warnings (its
    arguments: handler name, event name, ``repr`` of the error); every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` is kept."""
        args = record.args if isinstance(record.args, tuple) else ()
        return not (
            len(args) == 3
            and isinstance(args[2], str)
            and args[2].startswith(f"{RunCancelled.__name__}(")
        )


_QUIET = QuietCancellation()

#: LangChain's async callback manager makes one ``ahandle_event`` coroutine per handler for a call's
#: start and awaits the inline ones first: when a guard (inline) refuses the call, the coroutines of
#: the handlers after it are never awaited, and Python warns of each as it is collected (several per
#: stopped PAI run). The call never ran, so no handler should hear of its start: only that warning
#: is dropped.
REFUSED_START_WARNING = r"coroutine 'ahandle_event' was never awaited"


def quiet_refused_starts() -> None:
    """Drop the "never awaited" warning of the start events a guard's refusal leaves (idempotent:
    ``warnings`` replaces an equal filter)."""
    warnings.filterwarnings("ignore", message=REFUSED_START_WARNING, category=RuntimeWarning)


def quiet_cancellation() -> None:
    """Install :class:`QuietCancellation` on LangChain's callback logger (once; idempotent)."""
    logger = logging.getLogger(CALLBACK_LOGGER)
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)


class CancelGuard(BaseCallbackHandler):
    """Stops a run at its next chat-model call once ``cancel`` is set (a callback that raises)."""

    raise_error = True
    run_inline = True

    def __init__(self, cancel: threading.Event) -> None:
        quiet_cancellation()
        quiet_refused_starts()
        self.cancel = cancel

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], **kwargs: Any
    ) -> None:
        """Refuse to start a call after cancellation."""
        cancel_point(self.cancel)

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], **kwargs: Any) -> None:
        """Refuse to start a (completion-model) call after cancellation."""
        cancel_point(self.cancel)


__all__ = [
    "CancelGuard",
    "QuietCancellation",
    "RunCancelled",
    "cancel_point",
    "quiet_cancellation",
    "quiet_refused_starts",
]
