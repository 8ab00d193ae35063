import pytest

from graphs import STRATEGIES
from retrieval import RETRIEVERS, Registry, make_retriever


def test_register_and_get():
    reg = Registry("thing")
    reg.register("a", 1)

    @reg.register("b")
    def b():
        return 2

    assert reg.get("a") == 1 and reg.get("b") is b
    assert reg.names() == ["a", "b"] and "a" in reg and len(reg) == 2


def test_collision_raises_but_reregistering_same_object_is_fine():
    reg = Registry("thing")
    obj = object()
    reg.register("a", obj)
    reg.register("a", obj)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a", object())


def test_unknown_name_suggests_close_matches():
    with pytest.raises(KeyError, match="Did you mean: bm25"):
        RETRIEVERS.get("bm52")
    with pytest.raises(KeyError, match="Available: full_context, .*rag"):
        STRATEGIES.get("zzz")


def test_builtin_registries():
    assert {"bm25", "dense", "contriever", "openai"} <= set(RETRIEVERS)
    assert {"rag", "full_context"} <= set(STRATEGIES)


def test_unknown_retriever_option_lists_valid_ones():
    with pytest.raises(TypeError, match="valid: \\['b', 'engine', 'k1'\\]"):
        make_retriever("bm25", modle="x")


def test_strategy_config_rejects_typos_with_hint():
    with pytest.raises(TypeError, match="did you mean 'top_k'"):
        STRATEGIES.get("rag").make_config(topk=3)


def test_strategy_presets():
    rag = STRATEGIES.get("rag")
    cfg = rag.make_config("longbench-500x3")
    assert (cfg.chunk_size, cfg.top_k, cfg.chunk_unit) == (500, 3, "words")
    assert rag.make_config().chunk_size == 200 and rag.make_config().top_k == 7
    with pytest.raises(KeyError, match="no preset"):
        rag.make_config("nope")
