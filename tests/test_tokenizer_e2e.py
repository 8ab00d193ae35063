"""MemAgent on a real llama_cpp.server counts chunks and memory in that server's tokens.

Slow (~19 s on 2 cores: a server start and MemAgent generating on the embedded model): run by
``make test-all``, like the other end-to-end runs on a generating model."""

from __future__ import annotations

import json
import urllib.request

import pytest

from longctx import answer
from longctx.agents.chat_models import make_chat_model
from longctx.graphs.calls.llm import tokenizer_for, tokenizer_id
from longctx.graphs.memagent import MemAgentConfig, prepare_context
from longctx.graphs.plugin.context import StrategyContext
from longctx.memory import MemoryTrace
from longctx.retrieval import Corpus
from longctx.retrieval.tokens import count_tokens
from tests.servers import llama_server

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ZH_DOCS = [
    "长江是中国最长的河流，全长约六千三百公里，流经十一个省级行政区，最后注入东海。" * 4,
    "博物馆的保险库密码是七四二一。只有馆长知道这个密码，并且每年更换一次。" * 4,
    "城市交响乐团排练了一首新的交响曲，春季音乐会的门票在一周内全部售完。" * 4,
]


def server_count(base_url: str, text: str) -> int:
    """Tokens of ``text`` straight from llama-cpp-python's ``/extras/tokenize``."""
    req = urllib.request.Request(
        base_url.removesuffix("/v1") + "/extras/tokenize",
        data=json.dumps({"input": text}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return len(json.loads(resp.read())["tokens"])


def test_memagent_counts_chunks_and_memory_in_the_servers_tokens():
    corpus = Corpus.from_texts(ZH_DOCS, titles=["长江", "博物馆", "乐团"])
    with llama_server() as url:
        llm = make_chat_model("openai:smollm2", base_url=url)
        assert tokenizer_id(llm).startswith("server:llama-cpp-python:smollm2 @ ")
        cfg = MemAgentConfig(chunk_tokens=400, max_new_tokens=48, resume=False)
        ctx = prepare_context(
            StrategyContext(llm=llm, config=cfg, corpus=corpus), trace=MemoryTrace(), thread="t"
        )
        assert len(ctx.chunks) >= 3
        served = [server_count(url, c) for c in ctx.chunks]
        assert list(ctx.chunk_sizes) == served and all(n <= 400 for n in served)
        assert [
            count_tokens(c) for c in ctx.chunks
        ] != served  # cl100k would have counted otherwise
        assert all("\ufffd" not in c for c in ctx.chunks)

        # the memory bound counts in the same tokens: what the buffer kept is what the server counts
        result = answer(
            corpus,
            "保险库的密码是什么？",
            strategy="memagent",
            llm=llm,
            chunk_tokens=400,
            max_new_tokens=48,
            resume=False,
        )
        assert result.config["tokenizer"] == tokenizer_id(llm)
        snaps = [s for s in result.steps if s["node"] == "update_memory"]
        assert len(snaps) == len(ctx.chunks)
        tok = tokenizer_for(llm)
        for s in snaps:
            assert s["tokens"] == tok.count(s["memory"]) == server_count(url, s["memory"]) <= 48
