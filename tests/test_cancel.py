"""A cancelled run's refused calls are a planned stop: no LangChain callback warning for them (#35
item 20)."""

from __future__ import annotations

import logging
import threading

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from longctx.graphs.runtime.cancel import CALLBACK_LOGGER, CancelGuard, RunCancelled
from tests.scripted import ScriptedChatModel


class Broken(BaseCallbackHandler):
    """A handler with a real bug: its error must still be logged."""

    raise_error = True

    def on_chat_model_start(self, *args, **kwargs):
        raise ValueError("a bug in a handler")


def test_a_refused_call_raises_run_cancelled_without_a_warning(caplog):
    cancel = threading.Event()
    llm = ScriptedChatModel(reply_fn=lambda p: "Paris")
    assert (
        llm.invoke("Capital of France?", config={"callbacks": [CancelGuard(cancel)]}).content
        == "Paris"
    )  # not cancelled: the call runs
    cancel.set()
    with caplog.at_level(logging.WARNING, logger=CALLBACK_LOGGER), pytest.raises(RunCancelled):
        llm.invoke("Capital of France?", config={"callbacks": [CancelGuard(cancel)]})
    assert len(llm.calls) == 1  # the refused call was not made
    assert not [r for r in caplog.records if r.name == CALLBACK_LOGGER], [
        r.getMessage() for r in caplog.records
    ]


def test_other_callback_errors_are_still_logged(caplog):
    llm = ScriptedChatModel(reply_fn=lambda p: "Paris")
    CancelGuard(threading.Event())  # the filter is installed
    with caplog.at_level(logging.WARNING, logger=CALLBACK_LOGGER), pytest.raises(ValueError):
        llm.invoke("Capital of France?", config={"callbacks": [Broken()]})
    logged = [r.getMessage() for r in caplog.records if r.name == CALLBACK_LOGGER]
    assert logged == [
        "Error in Broken.on_chat_model_start callback: ValueError('a bug in a handler')"
    ]
