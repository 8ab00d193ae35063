"""``RetryingChatOpenAI`` against the langchain-openai it subclasses: the private members it
overrides or calls keep the signatures it relies on, and the module loads only when needed."""

from __future__ import annotations

import inspect
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from longctx.agents.openai_chat import RetryingChatOpenAI

ROOT = Path(__file__).resolve().parents[1]

#: The private ``ChatOpenAI`` members ``agents/openai_chat.py`` overrides or calls, as it calls them
#: (annotations aside): a new langchain-openai that renames, reorders or drops a parameter
#: fails here.
RELIED_ON = {
    # overridden; super() gets both positionally
    "_create_chat_result": "(self, response, generation_info=None)",
    # overridden: a streamed reply's usage
    "_convert_chunk_to_generation_chunk": (
        "(self, chunk, default_chunk_class, base_generation_info)"
    ),
    # overridden; called with stop= and the call's kwargs
    "_get_request_payload": "(self, input_, *, stop=None, **kwargs)",
    # overridden (BaseChatModel's); LangChain's cache key
    "_get_llm_string": "(self, stop=None, **kwargs)",
    # overridden
    "_generate": "(self, messages, stop=None, run_manager=None, **kwargs)",
    # overridden
    "_agenerate": "(self, messages, stop=None, run_manager=None, **kwargs)",
    # overridden: a streamed reply's errors mapped
    "_stream": "(self, *args, **kwargs)",
    # overridden: the same, async
    "_astream": "(self, *args, **kwargs)",
    # called: whether the Responses API takes the payload
    "_use_responses_api": "(self, payload)",
    # called before the lean sync post
    "_ensure_sync_client_available": "(self)",
}
#: Public fields the class reads.
FIELDS_READ = (
    "root_client",
    "root_async_client",
    "include_response_headers",
    "max_retries",
    "max_tokens",
    "model_name",
)


def shape(fn) -> str:
    """A signature without annotations: names, kinds and defaults."""
    sig = inspect.signature(fn)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


@pytest.mark.parametrize("name", sorted(RELIED_ON))
def test_the_private_chat_openai_members_keep_the_signatures_we_rely_on(name):
    assert hasattr(ChatOpenAI, name), f"langchain-openai no longer has ChatOpenAI.{name}"
    assert shape(getattr(ChatOpenAI, name)) == RELIED_ON[name]
    if name in vars(RetryingChatOpenAI):  # our override takes what the base class is called with
        assert shape(getattr(RetryingChatOpenAI, name)) == RELIED_ON[name]


def test_every_private_member_we_override_is_pinned():
    methods = {n for n, v in vars(RetryingChatOpenAI).items() if inspect.isfunction(v)}
    overridden = {
        n
        for n in methods
        if n.startswith("_") and not n.startswith("__") and hasattr(ChatOpenAI, n)
    }
    assert overridden <= set(RELIED_ON), sorted(overridden - set(RELIED_ON))
    assert {
        "_create_chat_result",
        "_get_request_payload",
        "_get_llm_string",
        "_generate",
        "_agenerate",
    } <= overridden


def test_the_fields_we_read_exist_and_the_class_serializes_as_chat_openai():
    assert set(FIELDS_READ) <= set(ChatOpenAI.model_fields)
    assert RetryingChatOpenAI.lc_id() == ChatOpenAI.lc_id()


def test_the_class_lives_at_module_level_and_pickles_by_reference():
    from longctx.agents import chat_models

    assert (
        RetryingChatOpenAI.__module__ == "longctx.agents.openai_chat"
        and RetryingChatOpenAI.__qualname__ == "RetryingChatOpenAI"
    )
    assert (
        pickle.loads(pickle.dumps(RetryingChatOpenAI)) is RetryingChatOpenAI
    )  # how a Ray task gets the class
    assert (
        chat_models.RetryingChatOpenAI is RetryingChatOpenAI
    )  # the name it had before, still served


def test_importing_agents_loads_no_langchain_openai_until_an_openai_model_is_made():
    probe = (
        "import json, sys\n"
        "import longctx, longctx.agents.chat_models\n"
        "before = sorted(m for m in ('langchain_openai', 'openai', 'longctx.agents.openai_chat') "
        "if m in sys.modules)\nllm = longctx.make_chat_model('openai:m', "
        "base_url='http://127.0.0.1:9/v1')\nprint(json.dumps([before, 'langchain_openai' in "
        "sys.modules, type(llm).__module__]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    before, after, module = json.loads(out.stdout.strip().splitlines()[-1])
    assert before == [] and after and module == "longctx.agents.openai_chat"
