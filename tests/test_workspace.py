"""``Workspace``: one corpus opened once, its indexes held, answers compared with their cost,
documents added.

Runs against the recording loopback server (tests/recording_server.py): its reply says the vault
code only when the prompt holds it, so an answer shows whether retrieval found the document.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from longctx import Budget, BudgetExceeded, CorpusError, Workspace, estimate
from longctx.agents.chat_models import make_chat_model
from longctx.agents.comparison import TEXT_WIDTH, Comparison
from longctx.agents.workspace import merged
from longctx.graphs.index import retrieval_service
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Answer, Document, Question, Usage
from longctx.retrieval.index import build as build_module
from tests.conftest import filler_document
from tests.recording_server import RecordingServer, prompt_of

VAULT = "The secret code of the museum vault is 7421."
PRICE = (1.0, 2.0)  # USD per 1M prompt and completion tokens


def reply(request: dict) -> str:
    return "The code is 7421." if "7421" in prompt_of(request) else "unknown"


@pytest.fixture
def server():
    with RecordingServer(reply) as s:
        yield s


@pytest.fixture
def llm(server):
    return make_chat_model("openai:smollm2", base_url=server.url, max_retries=0)


@pytest.fixture
def filler() -> Corpus:
    """Five documents, none of which states the vault code."""
    return Corpus.from_texts(
        [filler_document(i) for i in range(5)],
        titles=["Harbour", "Farms", "Orchestra", "Roads", "Library"],
    )


@pytest.fixture
def builds(monkeypatch):
    """Counts of index requests reaching the cache (``build_index``), of indexes actually built,
    and of indexes grown from an earlier corpus's by a segment
    (``longctx.retrieval.index.growth.grow_index``)."""
    counts = {"requested": 0, "built": 0, "grown": 0}
    request, build, grow = (
        retrieval_service.build_index,
        build_module._build,
        build_module.grow_index,
    )

    def counted_request(*args, **kwargs):
        counts["requested"] += 1
        return request(*args, **kwargs)

    def counted_build(*args, **kwargs):
        counts["built"] += 1
        return build(*args, **kwargs)

    def counted_grow(*args, **kwargs):
        index = grow(*args, **kwargs)
        counts["grown"] += index is not None
        return index

    monkeypatch.setattr(retrieval_service, "build_index", counted_request)
    monkeypatch.setattr(build_module, "_build", counted_build)
    monkeypatch.setattr(build_module, "grow_index", counted_grow)
    return counts


def test_the_index_is_built_once_for_several_questions_and_strategies(
    planted_corpus, llm, builds, isolated_cache
):
    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache)
    first = ws.answer("What is the secret code of the museum vault?")
    second = ws.answer(
        "Which road was resurfaced?", top_k=3
    )  # same chunking and retriever: same index
    assert "7421" in first.answer and second.answer
    assert builds == {"requested": 1, "built": 1, "grown": 0}
    comparison = ws.compare(
        "What is the secret code of the museum vault?",
        strategies=["rag", "self_route", "full_context"],
    )
    ws.answer("What is the vault code?", strategy="self_route")
    asyncio.run(ws.aanswer("What is the vault code?", strategy="self_route", top_k=2))
    assert builds == {
        "requested": 2,
        "built": 2,
        "grown": 0,
    }  # rag's 200-word chunks and self_route's 300-word chunks, once each
    assert ws.index_loads == 2
    assert first.usage.index_seconds > 0  # the first answer carries the build
    assert [r["strategy"] for r in comparison.to_rows()] == ["rag", "self_route", "full_context"]


def test_compare_gives_one_row_per_strategy_with_its_cost(
    planted_corpus, llm, server, isolated_cache
):
    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache, price=PRICE)
    result = ws.compare(
        "What is the secret code of the museum vault?",
        strategies={"rag": {"top_k": 3}, "full_context": {}, "memagent": {"chunk_tokens": 400}},
    )
    rows = result.to_rows()
    assert [r["strategy"] for r in rows] == ["rag", "full_context", "memagent"]
    for row in rows:
        assert (
            "7421" in row["answer"]
            and row["calls"] >= 1
            and row["prompt_tokens"] > 0
            and row["completion_tokens"] > 0
        )
        assert row["cost_usd"] == pytest.approx(
            (row["prompt_tokens"] * PRICE[0] + row["completion_tokens"] * PRICE[1]) / 1e6
        )
        assert row["stopped"] is None and row["error"] is None
    memagent_chunks = math.ceil(planted_corpus.num_tokens / 400)
    assert rows[2]["calls"] == memagent_chunks + 1  # one memory update per chunk, then the answer
    assert sum(r["calls"] for r in rows) == len(server.requests)
    assert result["rag"].usage.llm_calls == 1 and len(result) == 3
    text = str(result)
    assert text.splitlines()[0] == "Q: What is the secret code of the museum vault?"
    assert all(name in text for name in ("rag", "full_context", "memagent", "cost_usd", "$0.00"))
    html = result._repr_html_()
    assert html.startswith("<table>") and html.count("<tr>") == 4 and "memagent" in html


def test_compare_without_a_price_has_no_cost_column_and_shows_a_refused_plan(
    planted_corpus, llm, server, isolated_cache
):
    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache)
    result = ws.compare(
        "What is the vault code?",
        strategies={"rag": {"top_k": 2}, "full_context": {}},
        budget=Budget(max_prompt_tokens=1_000),
    )
    rows = {r["strategy"]: r for r in result.to_rows()}
    assert rows["rag"]["answer"] and rows["rag"]["cost_usd"] is None
    assert (
        rows["full_context"]["answer"] is None
        and "Budget exceeded before any call" in rows["full_context"]["error"]
    )
    assert "cost_usd" not in str(result) and "error" in str(result)
    assert len(server.requests) == 1  # full_context was refused before its call


def test_compare_shows_a_replayed_answer_at_what_it_cost_when_paid(
    planted_corpus, llm, server, isolated_cache
):
    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache, price=PRICE)
    question, strategies = (
        "What is the secret code of the museum vault?",
        {"memagent": {"chunk_tokens": 400}},
    )
    (paid,) = ws.compare(question, strategies=strategies).to_rows()
    sent = len(server.requests)
    again = ws.compare(
        question, strategies=strategies
    )  # replayed from memagent's finished checkpoint
    (replayed,) = again.to_rows()
    assert len(server.requests) == sent and again["memagent"].usage.llm_calls == 0
    assert paid["replayed"] is None and replayed["replayed"] == paid["calls"] == sent
    assert {
        k: replayed[k] for k in ("calls", "prompt_tokens", "completion_tokens", "cost_usd")
    } == {k: paid[k] for k in ("calls", "prompt_tokens", "completion_tokens", "cost_usd")}
    assert replayed["cost_usd"] > 0
    text = str(again)
    assert "replayed" in text.splitlines()[1] and text.splitlines()[-1].startswith(
        "replayed: calls answered now"
    )
    assert "replayed: calls answered now" in again._repr_html_()


def test_the_workspace_price_prices_its_budgets(planted_corpus, llm, server, isolated_cache):
    # 1 USD per prompt token: the least a rag answer sends is far over 1 USD, refused before
    # any call
    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache, price=(1e6, 0.0))
    with pytest.raises(BudgetExceeded, match=r"over the budget: ~\$[0-9,.]+ > \$1.00"):
        ws.answer("What is the vault code?", budget=Budget(max_cost_usd=1.0))
    with pytest.raises(ValueError, match="max_cost_usd needs the model's price"):
        Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache).answer(
            "What is the vault code?", budget=Budget(max_cost_usd=1.0)
        )  # no price anywhere: refused, never a limit that binds nothing
    assert server.requests == []
    paid = ws.answer("What is the vault code?", budget=Budget(max_cost_usd=1e6))
    assert paid.stopped is None and len(server.requests) == 1


def test_add_makes_a_new_document_answerable(filler, llm, builds, isolated_cache, tmp_path):
    ws = Workspace(filler, llm=llm, cache_dir=isolated_cache)
    assert ws.answer("What is the secret code of the museum vault?").answer == "unknown"
    folder = tmp_path / "new"
    folder.mkdir()
    (folder / "vault.txt").write_text(filler_document(3, 10) + " " + VAULT)
    assert ws.add(folder) == ["vault.txt"]
    assert len(ws.corpus) == 6
    result = ws.answer("What is the secret code of the museum vault?")
    assert "7421" in result.answer and "vault.txt" in [e.doc_id for e in result.evidence]
    assert (builds["built"], builds["grown"]) == (
        1,
        1,
    )  # the added document went into a segment: no rebuild
    assert ws.add(folder / "vault.txt") == []  # unchanged: nothing re-indexed
    ws.answer("What is the secret code of the museum vault?")
    assert (builds["built"], builds["grown"], builds["requested"]) == (1, 1, 2)


def test_add_takes_documents_and_rereads_a_changed_file(filler, llm, isolated_cache, tmp_path):
    ws = Workspace(filler, llm=llm, cache_dir=isolated_cache)
    note = tmp_path / "note.md"
    note.write_text("The vault code is not written down anywhere.")
    assert ws.add([note, Document(doc_id="memo", text=VAULT, title="Memo")]) == ["note.md", "memo"]
    note.write_text("Revised: the vault code changed.")
    assert ws.add(str(note)) == ["note.md"]
    assert [d.text for d in ws.corpus if d.doc_id == "note.md"] == [
        "Revised: the vault code changed."
    ]
    assert len(ws.corpus) == 7


def test_an_edited_file_whose_id_was_its_path_is_replaced_not_refused(
    filler, llm, isolated_cache, tmp_path
):
    """Issue #35, 17: ``b/r1.md`` clashed with ``a/r1.md`` and got its path as id; editing it and
    adding it again raised."""
    for folder, text in (("a", "First quarter report."), ("b", "Second quarter report.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "r1.md").write_text(text)
    ws = Workspace(filler, llm=llm, cache_dir=isolated_cache)
    edited = tmp_path / "b" / "r1.md"
    assert ws.add([tmp_path / "a", tmp_path / "b"]) == ["r1.md", str(edited)]
    assert ws.add(tmp_path / "b") == []  # unchanged: found under its path, skipped
    edited.write_text("Second quarter report, revised.")
    assert ws.add(tmp_path / "b") == [str(edited)]
    assert ws.add(edited) == []
    texts = {d.doc_id: d.text for d in ws.corpus}
    assert (
        len(ws.corpus) == 7
        and texts["r1.md"] == "First quarter report."
        and texts[str(edited)] == "Second quarter report, revised."
    )


@pytest.mark.parametrize(
    "new,ids,texts",
    [
        ([Document("a", "A")], ["a", "b"], {"a": "A"}),  # the same document again: nothing added
        ([Document("c", "C")], ["a", "b", "c"], {"c": "C"}),
        (
            [Document("a", "A2", metadata={"source": "x/a"})],
            ["a", "b"],
            {"a": "A2"},
        ),  # the same file, new text: replaced
        (
            [Document("b", "B2", metadata={"source": "y/b"})],
            ["a", "b", "y/b"],
            {"b": "B", "y/b": "B2"},
        ),  # another file's name: its path
        (
            [Document("b", "B3", metadata={"source": "y/b"})] * 2,
            ["a", "b", "y/b"],
            {"y/b": "B3"},
        ),  # that file again: under its path
        (
            [
                Document("b", "B3", metadata={"source": "y/b"}),
                Document("b", "B4", metadata={"source": "y/b"}),
            ],
            ["a", "b", "y/b"],
            {"y/b": "B4"},
        ),
    ],
)
def test_merged(new, ids, texts):
    old = [
        Document("a", "A", metadata={"source": "x/a"}),
        Document("b", "B", metadata={"source": "x/b"}),
    ]
    documents, _ = merged(old, new)
    assert [d.doc_id for d in documents] == ids
    assert all(next(d.text for d in documents if d.doc_id == k) == v for k, v in texts.items())


def test_a_clashing_id_without_a_source_is_refused():
    with pytest.raises(CorpusError, match="'a' is already in the corpus"):
        merged([Document("a", "A")], [Document("a", "other")])


def test_bad_input_fails_in_one_line_before_any_call(
    planted_corpus, llm, server, isolated_cache, tmp_path
):
    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache)
    with pytest.raises(KeyError, match="Did you mean: rag"):
        ws.answer("What is the vault code?", strategy="rga")
    with pytest.raises(KeyError, match="Did you mean: memagent"):
        ws.compare("What is the vault code?", strategies=["rag", "memagnet"])
    with pytest.raises(TypeError, match="top_k"):
        ws.compare("What is the vault code?", strategies={"rag": {"topk": 3}})
    with pytest.raises(ValueError, match="The question is empty"):
        ws.answer("  ")
    with pytest.raises(CorpusError, match="no such file or folder") as missing:
        ws.add(tmp_path / "missing.txt")
    assert "\n" not in str(missing.value)
    with pytest.raises(CorpusError, match="does not exist"):
        Workspace(tmp_path / "nowhere", llm=llm)
    with pytest.raises(KeyError, match="Did you mean"):
        Workspace(planted_corpus, llm=llm, strategy="full_contxt")
    assert server.requests == []


def test_budget_and_callbacks_pass_through(planted_corpus, llm, server, isolated_cache):
    class Counter(BaseCallbackHandler):
        calls = 0

        def on_llm_end(self, *args, **kwargs):
            Counter.calls += 1

    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache)
    with pytest.raises(BudgetExceeded):
        ws.answer("What is the vault code?", budget=Budget(max_llm_calls=0))
    plan = ws.estimate("What is the vault code?", strategy="memagent", chunk_tokens=400)
    with pytest.raises(
        BudgetExceeded
    ):  # a checkpointed strategy too: a budget its plan cannot fit is refused before any call
        ws.answer(
            "What is the vault code?",
            strategy="memagent",
            chunk_tokens=400,
            budget=Budget(max_llm_calls=plan.calls - 1),
        )
    assert server.requests == []
    result = ws.answer(
        "What is the vault code?",
        strategy="memagent",
        chunk_tokens=400,
        budget=Budget(max_llm_calls=plan.calls),
        callbacks=[Counter()],
    )
    assert result.stopped is None and Counter.calls == plan.calls == len(server.requests)


def test_estimate_is_agents_estimate_on_the_workspace(planted_corpus, llm, server):
    ws = Workspace(planted_corpus, llm=llm, strategy="memagent")
    plan = ws.estimate("What is the vault code?", chunk_tokens=300)
    assert plan == estimate(
        planted_corpus, "What is the vault code?", strategy="memagent", llm=llm, chunk_tokens=300
    )
    assert plan.strategy == "memagent" and server.requests == []


def test_comparison_table_shortens_long_answers_in_text_only():
    long = "word " * 40
    a = Answer(
        answer=long.strip(),
        raw=long,
        evidence=[],
        usage=Usage(llm_calls=1, prompt_tokens=10, completion_tokens=2),
        steps=[],
        strategy="rag",
        question=Question(text="q <b>"),
    )
    table = Comparison(question=Question(text="q <b>"), answers={"rag": a}, order=["rag"])
    assert long.strip()[: TEXT_WIDTH - 3] + "...  1" in str(table) and long.strip() not in str(
        table
    )
    assert long.strip() in table._repr_html_() and "q &lt;b&gt;" in table._repr_html_()


def test_aanswer_builds_the_index_in_a_thread_and_holds_it(
    planted_corpus, llm, builds, isolated_cache
):
    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache)

    async def two():
        return await asyncio.gather(
            ws.aanswer("What is the vault code?"), ws.aanswer("Which road was resurfaced?", top_k=2)
        )

    first, second = asyncio.run(two())
    assert "7421" in first.answer and second.answer == "unknown"
    assert (
        ws.answer_many(["What is the vault code?", "Where is the library?"])[0].answer
        == "The code is 7421."
    )
    assert builds == {"requested": 1, "built": 1, "grown": 0} and ws.index_loads == 1
    assert repr(ws) == "Workspace(6 documents, llm='smollm2', strategy='rag', indexes held=1)"


def test_streams_use_the_workspace_model_cache_and_index(
    planted_corpus, llm, server, builds, isolated_cache
):
    ws = Workspace(planted_corpus, llm=llm, cache_dir=isolated_cache)
    ws.answer("What is the vault code?")
    events = list(ws.stream_answer("What is the secret code of the museum vault?", top_k=3))
    assert [e.kind for e in events][-1] == "answer" and "7421" in events[-1].answer.answer
    assert [e.step.node for e in events if e.kind == "step"] == [
        "retrieve",
        "build_prompt",
        "generate",
    ]

    async def consume():
        return [
            e async for e in ws.astream_answer("What is the vault code?", strategy="full_context")
        ]

    assert "7421" in asyncio.run(consume())[-1].answer.answer
    assert builds["built"] == 1 and len(server.requests) == 3
    with pytest.raises(KeyError, match="Did you mean: rag"):
        ws.stream_answer(
            "What is the vault code?", strategy="rga"
        )  # at the call, not at the first event
    with pytest.raises(TypeError, match="top_k"):
        ws.astream_answer("What is the vault code?", topk=3)


def test_no_questions_make_no_index_and_no_call(planted_corpus, llm, server, builds):
    ws = Workspace(planted_corpus, llm=llm)
    assert ws.answer_many([]) == [] and builds["requested"] == 0 and server.requests == []
