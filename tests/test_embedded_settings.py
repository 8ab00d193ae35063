"""The embedded model's llama.cpp settings (#40 item 3): measured defaults reach llama.cpp, and a
setting that can change a reply is part of the model's identity in caches."""

from __future__ import annotations

import os

import pytest

from longctx.agents.embedded_chat import EmbeddedChatModel
from longctx.agents.embedded_settings import EmbeddedSettings, usable_cores
from longctx.retrieval.threads import policy_threads


def test_threads_default_to_every_usable_core_for_prefill_and_one_less_for_generation(
    monkeypatch,
):
    monkeypatch.delenv("LONGCTX_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the test workers' share
    kwargs = EmbeddedSettings().llama_kwargs()
    cores = len(os.sched_getaffinity(0))
    assert kwargs["n_threads_batch"] == cores == usable_cores()
    assert kwargs["n_threads"] == max(
        cores - 1, 1
    )  # a core for the Python side of concurrent answers
    assert kwargs["flash_attn"] is True and (kwargs["n_batch"], kwargs["n_ubatch"]) == (512, 512)
    assert EmbeddedSettings(n_threads=1, n_threads_batch=3).llama_kwargs()["n_threads"] == 1
    assert EmbeddedSettings(n_threads=1, n_threads_batch=3).llama_kwargs()["n_threads_batch"] == 3
    monkeypatch.setenv("LONGCTX_THREADS", "1")  # the thread policy's share, as every pool
    assert EmbeddedSettings().llama_kwargs()["n_threads_batch"] == 1


@pytest.mark.e2e
def test_the_settings_reach_llama_cpp():
    chat = EmbeddedChatModel(n_threads=1, flash_attn=False, n_batch=256, n_ubatch=128)
    llama, _ = chat._llama()
    assert (llama.n_threads, llama.n_batch, llama.context_params.n_ubatch) == (1, 256, 128)
    assert llama.context_params.flash_attn_type == 0  # disabled
    default, _ = EmbeddedChatModel()._llama()
    assert default is not llama  # one instance per settings
    assert (
        default.n_threads == max(policy_threads() - 1, 1)
        and default.context_params.flash_attn_type == 1
    )  # enabled


def test_flash_attention_and_batches_are_part_of_the_model_identity_threads_are_not():
    base = EmbeddedChatModel()._identifying_params
    for change in (
        {"flash_attn": False},
        {"n_batch": 2048},
        {"n_ubatch": 256},
    ):  # the arithmetic's order differs: replies may
        assert EmbeddedChatModel(**change)._identifying_params != base
    assert (
        EmbeddedChatModel(n_threads=1, n_threads_batch=1)._identifying_params == base
    )  # speed only


@pytest.mark.e2e
def test_loaded_models_are_freed_at_exit_while_their_library_can_still_be_called(monkeypatch):
    """``close_loaded``, registered with atexit at the first load, frees each llama.cpp model (left
    to the interpreter's shutdown, ``Llama.__del__`` can run after llama-cpp-python's globals
    are gone)."""
    from longctx.agents import embedded_chat

    registered: list[object] = []
    monkeypatch.setattr(embedded_chat.atexit, "register", registered.append)
    monkeypatch.setattr(embedded_chat, "_LOADED", {})  # this test's loads apart from the others'
    chat = EmbeddedChatModel(n_ctx=256)
    llama, _ = chat._llama()
    assert chat._llama()[0] is llama  # shared: loaded and registered once
    assert registered == [embedded_chat.close_loaded] and llama._model.model is not None
    embedded_chat.close_loaded()
    assert llama._model.model is None and not embedded_chat._LOADED
    assert chat._llama()[0] is not llama  # a later call loads it anew
