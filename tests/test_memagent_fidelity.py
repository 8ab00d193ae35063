"""MemAgent against its official evaluation, round 3: the exported reply, the run key, the windows
and the sampling.

The official side is written here from BytedTsinghua-SIA/MemAgent's ``taskutils/memory_eval``
(``ruler_hqa.py`` ``get_pred``, ``utils/recurrent.py`` ``async_query_llm``) and THUDM/LongBench's
``pred.py``, independently of the strategy's own code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from longctx import answer, make_chat_model
from longctx.agents.chat_models import EmbeddedChatModel
from longctx.experiments.reports.export import export_official
from longctx.experiments.reports.report import score_run
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.graphs import STRATEGIES
from longctx.graphs.calls.llm import set_tokenizer
from longctx.graphs.calls.request_settings import BLOCK_BYTES, SAMPLED_BLOCKS, file_fingerprint
from longctx.graphs.runtime.batched import run_key
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from longctx.retrieval.contract.question import Protocol
from longctx.retrieval.tokenizers import (
    Tokenizer,
    TokenizerError,
    slice_ids,
    tiktoken_encoding,
    tiktoken_tokenizer,
)
from tests.recording_server import RecordingServer, prompt_of
from tests.scripted import ScriptedChatModel

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


def _is_update(request: dict) -> bool:
    return prompt_of(request).endswith("Updated memory:\n")


# -- item 6: RULER-HotpotQA with the paper preset: the official scorer reads the whole reply -------
def _ruler_reply(request: dict) -> str:
    if _is_update(request):
        return "notes"
    return (
        "Therefore, the answer is yes."
        if "Bob Marley a cat" in prompt_of(request)
        else "Therefore, the answer is London."
    )


def test_paper_preset_on_ruler_hqa_exports_and_reports_the_official_score_of_whole_replies(
    tmp_path, monkeypatch
):
    """``ruler_hqa.py`` extracts after "the answer is" itself: the export's ``response`` is the
    whole reply (66.67, as the official loop scores these replies), not the extraction
    ``Paris``-style that it scores 0."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    with RecordingServer(_ruler_reply) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="ruler_hqa",
            strategies=("memagent",),
            data_path=str(FIXTURES / "ruler_hqa"),
            llm_cache=False,
            strategy_options={"memagent": {"preset": "paper"}},
        )
        run_experiment(cfg, run, llm=llm, show_progress=False)
    assert {r["prediction"] for r in read_rows(run)} == {
        "London",
        "yes",
    }  # the scored text is MemAgent's extraction
    export_official(run, tmp_path / "official")
    lines = [
        json.loads(x)
        for p in sorted((tmp_path / "official" / "results").rglob("memagent.jsonl"))
        for x in p.read_text().splitlines()
    ]
    # official: response = output.strip(); pred = extract_answer(response); judge_sub_em over pred
    assert sorted((x["response"], x["pred"], x["judge_sub_em"]) for x in lines) == [
        ("Therefore, the answer is London.", "London", 1.0),
        ("Therefore, the answer is London.", "London", 1.0),
        ("Therefore, the answer is yes.", "yes", 0.0),
    ]
    _, _, per_strategy = score_run(run)
    official = per_strategy["memagent"]["official"]
    assert (
        official["official"] == {"7K": 50.0, "1.75M": 100.0}
        and official["official_overall"] == 66.67
    )
    assert official["overall"] == 66.67 and official["n_without_answer_phrase"] == 0


# -- item 7: every setting that changes a request is in the run key --------------------------------
CORPUS = Corpus.from_texts(["The vault code is 7421. " * 40])


def test_a_model_with_another_extra_body_makes_its_own_calls(tmp_path, monkeypatch):
    """Same name and URL, another ``extra_body``: the second model must not replay the first
    one's run."""
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    with RecordingServer(
        lambda r: "notes" if _is_update(r) else "Therefore, the answer is 7421."
    ) as server:
        plain = ChatOpenAI(model="rec", base_url=server.url, api_key="k", max_retries=0)
        tuned = ChatOpenAI(
            model="rec", base_url=server.url, api_key="k", max_retries=0, extra_body={"top_k": 20}
        )
        answer(
            CORPUS,
            "What is the code?",
            strategy="memagent",
            llm=plain,
            chunk_tokens=100,
            show_progress=False,
        )
        first = len(server.requests)
        again = answer(
            CORPUS,
            "What is the code?",
            strategy="memagent",
            llm=tuned,
            chunk_tokens=100,
            show_progress=False,
        )
    second = server.requests[first:]
    assert first > 1 and len(second) == first and all(r.get("top_k") == 20 for r in second)
    assert not again.steps[-1]["replayed"]


def _key(llm, question: Question | None = None) -> str:
    spec = STRATEGIES.get("memagent")
    return run_key(
        spec,
        spec.batch_mode,
        spec.make_config(),
        [question or Question(text="q?")],
        llm,
        "corpus",
        None,
    )


def _openai(**options):
    return make_chat_model(
        "openai:rec", base_url="http://127.0.0.1:9/v1", api_key="sk-one", max_retries=0, **options
    )


@pytest.mark.parametrize(
    "options",
    [
        {"extra_body": {"top_k": 20}},
        {"model_kwargs": {"min_p": 0.05}},
        {"default_headers": {"X-Model-Variant": "int4"}},
        {"temperature": 0.2},
        {"top_p": 0.5},
        {"seed": 7},
        {"stop": ["\n"]},
        {"default_query": {"api-version": "2024-06-01"}},
    ],
)
def test_every_setting_that_changes_a_request_changes_the_key(options):
    assert _key(_openai(**options)) != _key(_openai())


def test_what_changes_no_request_keeps_the_key():
    """A rotated API key, a tracing header, retries and timeouts send the same request: the
    run resumes."""
    base = _key(_openai())
    same = make_chat_model(
        "openai:rec",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-two",
        max_retries=5,
        timeout=3.0,
        default_headers={"Authorization": "Bearer other", "X-Request-Id": "abc"},
    )
    assert _key(same) == base


def test_the_embedded_models_file_content_and_seed_are_in_the_key(tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 5000)
    first = _key(EmbeddedChatModel(model_path=str(gguf)))
    assert _key(EmbeddedChatModel(model_path=str(gguf))) == first
    assert _key(EmbeddedChatModel(model_path=str(gguf), seed=1)) != first
    gguf.write_bytes(b"GGUF" + b"\1" * 5000)  # other weights under the same path and size
    os.utime(gguf, ns=(1, 1))
    assert _key(EmbeddedChatModel(model_path=str(gguf))) != first


def test_a_large_model_files_fingerprint_reads_samples_from_start_to_end(tmp_path):
    size = SAMPLED_BLOCKS * BLOCK_BYTES * 2  # beyond a whole-file read
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(b"\0" * size)
    b.write_bytes(b"\0" * (size - 1) + b"\1")  # the last byte differs
    assert file_fingerprint(a) != file_fingerprint(b)
    b.write_bytes(b"\0" * size)
    os.utime(b, ns=(2, 2))
    assert file_fingerprint(a) == file_fingerprint(b)  # content, not name or time


class CharModel(ScriptedChatModel):
    """A scripted model whose own tokenizer is one token per character."""

    def tokenize(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def detokenize(self, ids: list[int]) -> str:
        return "".join(map(chr, ids))


def _section(prompt: str) -> str:
    return prompt.split("<section>\n", 1)[1].rsplit("\n</section>", 1)[0]


def test_a_model_with_another_tokenizer_reads_its_own_windows(isolated_cache):
    """The windows are cut in the model's tokenizer: another tokenizer is another run, not a replay
    of the first's windows."""
    reply = lambda p: (
        "notes" if p.endswith("Updated memory:\n") else "Therefore, the answer is 7421."
    )  # noqa: E731
    chars = CharModel(reply_fn=reply)
    answer(
        CORPUS,
        "What is the code?",
        strategy="memagent",
        llm=chars,
        chunk_tokens=300,
        show_progress=False,
        stream="plain",
    )
    cl100k = set_tokenizer(CharModel(reply_fn=reply), "cl100k")
    answer(
        CORPUS,
        "What is the code?",
        strategy="memagent",
        llm=cl100k,
        chunk_tokens=300,
        show_progress=False,
        stream="plain",
    )
    assert [len(_section(c["prompt"])) for c in chars.calls[:-1]] == [300, 300, 300, 59]
    cl100k_windows = official_windows(
        CORPUS.documents[0].text, 300, tiktoken_tokenizer("cl100k_base")
    )  # ASCII: no character split
    assert (
        len(cl100k_windows) == 2
        and [_section(c["prompt"]) for c in cl100k.calls[:-1]] == cl100k_windows
    )


def test_the_protocols_final_sampling_is_in_the_key():
    sample = Question(text="q?")

    greedy = Question(text="q?", protocol=Protocol(benchmark="b", temperature=0.0))
    warm = Question(text="q?", protocol=Protocol(benchmark="b", temperature=0.7))
    stopped = Question(text="q?", protocol=Protocol(benchmark="b", temperature=0.7, stop=("\n",)))
    llm = ScriptedChatModel(replies=[])
    assert len({_key(llm, q) for q in (sample, greedy, warm, stopped)}) == 4


# -- item 8: the paper preset cuts the windows as the official loop --------------------------------
MIXED = "".join(
    f"Section {i}: the ledger of 北京市第{i}号仓库 records 鸡蛋{i * 7}箱 and 苹果{i * 3}斤. "
    for i in range(1, 40)
)


def official_windows(context: str, size: int, tokenizer) -> list[str]:
    """``async_query_llm``: ``input_ids = tokenizer.encode(context)``, then
    ``tokenizer.decode(input_ids[i:i + size])``."""
    ids = tokenizer.encode(context.strip())
    return [tokenizer.decode(ids[i : i + size]) for i in range(0, len(ids), size)]


def _sections(preset: str | None) -> list[str]:
    model = ScriptedChatModel(
        reply_fn=lambda p: (
            "notes" if p.endswith("Updated memory:\n") else "Therefore, the answer is 63."
        )
    )
    options = {"preset": preset} if preset else {}
    answer(
        Corpus.from_texts([MIXED]),
        "How many boxes of eggs?",
        strategy="memagent",
        llm=model,
        chunk_tokens=40,
        stream="plain",
        resume=False,
        show_progress=False,
        **options,
    )
    return [_section(c["prompt"]) for c in model.calls[:-1]]


def test_the_paper_preset_sends_the_official_windows_split_characters_included():
    official = official_windows(MIXED, 40, tiktoken_tokenizer("cl100k_base"))
    assert any("\ufffd" in w for w in official)  # the fixture splits characters at some cuts
    assert _sections("paper") == official


def test_the_official_cut_of_an_empty_text_is_no_window_and_a_strict_decoder_says_what_to_do():
    cl100k = tiktoken_tokenizer("cl100k_base")
    assert slice_ids("", 40, cl100k) == []
    enc = tiktoken_encoding("cl100k_base")
    # a decoder that refuses a split character (raises), as some servers' detokenize routes
    tok = Tokenizer(
        id="server:strict",
        encode_fn=enc.encode,
        decode_fn=lambda part: enc.decode_bytes(part).decode("utf-8"),
    )
    with pytest.raises(TokenizerError, match="window_cut='character'"):
        slice_ids(MIXED, 40, tok)


def test_by_default_a_moved_cut_shifts_every_later_window():
    official = official_windows(MIXED, 40, tiktoken_tokenizer("cl100k_base"))
    ours = _sections(None)
    assert "".join(ours) == MIXED.strip() and not any("\ufffd" in w for w in ours)
    first = next(i for i, (a, b) in enumerate(zip(ours, official)) if a != b)
    assert "\ufffd" in official[first]
    assert all(a != b for a, b in zip(ours[first:], official[first:]))  # as docs/protocols.md says


# -- item 9: MemAgent's final call on LongBench v2 follows the benchmark's sampling alone ----------
def test_memagent_on_longbench_v2_sends_the_benchmarks_temperature_without_its_own_top_p(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    with RecordingServer(
        lambda r: "notes" if _is_update(r) else "The correct answer is (A)"
    ) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark="longbench_v2",
            strategies=("memagent",),
            data_path=str(FIXTURES / "longbench_v2"),
            llm_cache=False,
            limit=1,
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    updates = [r for r in server.requests if _is_update(r)]
    finals = [r for r in server.requests if not _is_update(r)]
    assert updates and {(r["temperature"], r["top_p"]) for r in updates} == {
        (0.7, 0.95)
    }  # MemAgent's own memory updates
    assert (
        len(finals) == 1 and finals[0]["temperature"] == 0.1 and "top_p" not in finals[0]
    )  # pred.py sends temperature only
