"""One exception hierarchy: what a user gets wrong, or a model server or the data does, is a
:class:`longctx.agents.LongctxError` of one kind, and still the built-in class it was raised
as before."""

from __future__ import annotations

import pytest

from longctx import (
    Budget,
    BudgetExceeded,
    ChatModelError,
    ConfigError,
    Corpus,
    CorpusError,
    DataError,
    LongctxError,
    MissingExtraError,
    ModelError,
    answer,
    make_chat_model,
)
from longctx.experiments.benchmarks.base import BenchmarkDataError
from longctx.experiments.planning.prices import PriceTableError
from longctx.retrieval.contract.errors import OptionError, UnknownName
from longctx.retrieval.embedder_base import EmbedderError
from longctx.retrieval.extras import require
from longctx.retrieval.ray_support import RayNotInstalledError
from longctx.retrieval.rerank import RerankError
from longctx.retrieval.tokenizers import TokenizerError
from tests.scripted import ScriptedChatModel

#: Each kind and the built-in class an ``except`` written before the hierarchy catches it by.
KINDS = {
    ConfigError: ValueError,
    OptionError: TypeError,
    UnknownName: KeyError,
    BudgetExceeded: ValueError,
    MissingExtraError: ImportError,
    RayNotInstalledError: ImportError,
    ModelError: RuntimeError,
    ChatModelError: RuntimeError,
    EmbedderError: RuntimeError,
    RerankError: RuntimeError,
    TokenizerError: ValueError,
    DataError: ValueError,
    CorpusError: ValueError,
    BenchmarkDataError: FileNotFoundError,
    PriceTableError: ValueError,
}


@pytest.mark.parametrize("kind", list(KINDS), ids=lambda k: k.__name__)
def test_each_kind_is_a_longctx_error_and_still_its_builtin_class(kind):
    assert issubclass(kind, LongctxError) and issubclass(kind, KINDS[kind])


def test_what_a_user_gets_wrong_raises_a_longctx_error_of_its_kind(tmp_path):
    corpus = Corpus.from_texts(["Paris is the capital of France. " * 50] * 3)
    llm = ScriptedChatModel(reply_fn=lambda prompt: "Paris")
    asked = "What is the capital of France?"
    with pytest.raises(UnknownName) as unknown:
        answer(corpus, asked, strategy="ragg", llm=llm)
    assert isinstance(unknown.value, KeyError)
    assert str(unknown.value).startswith("Unknown strategy 'ragg'. Did you mean: rag?")  # no quotes
    with pytest.raises(UnknownName):
        answer(corpus, asked, strategy="rag", preset="nope", llm=llm)
    with pytest.raises(OptionError, match="did you mean 'top_k'"):
        answer(corpus, asked, strategy="rag", top_kk=3, llm=llm)
    with pytest.raises(ConfigError, match="must be >= 1"):
        answer(corpus, asked, strategy="rag", top_k=-1, llm=llm)
    with pytest.raises(OptionError, match="budget must be an agents.Budget"):
        answer(corpus, asked, strategy="rag", budget=3, llm=llm)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_cost_usd"):
        Budget(max_cost_usd=-1.0)
    with pytest.raises(BudgetExceeded):
        answer(corpus, asked, strategy="pai", budget=Budget(max_llm_calls=1), llm=llm)
    with pytest.raises(DataError):
        Corpus.from_path(tmp_path / "missing")
    with pytest.raises(MissingExtraError, match="longctx-lab\\[dense\\]"):
        require("no_such_module_of_longctx", extra="dense")
    closed = make_chat_model("openai:x", base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(ModelError, match="127.0.0.1:9"):
        answer(corpus, asked, strategy="rag", llm=closed, cache_dir=tmp_path)
