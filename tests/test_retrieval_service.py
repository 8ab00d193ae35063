"""The retrieval settings (a neutral module every retrieving config extends) and the service doing
what they describe."""

from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.index.retrieval_settings import RetrievalSettings
from longctx.graphs.pai import PaiConfig
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.rag import RagConfig
from longctx.graphs.self_ask import SelfAskConfig
from longctx.graphs.self_route import SelfRouteConfig
from longctx.retrieval import Corpus, build_index
from tests.scripted import ScriptedChatModel

TEXTS = [
    "The vault code is 7421.",
    "Roads were resurfaced in May.",
    "The orchestra played on Sunday.",
]


def test_every_retrieving_config_extends_the_neutral_settings():
    assert RetrievalSettings.__module__ == "longctx.graphs.index.retrieval_settings"
    assert all(
        issubclass(c, RetrievalSettings)
        for c in (RagConfig, SelfRouteConfig, SelfAskConfig, PaiConfig)
    )


def test_configs_hold_settings_and_the_service_builds_and_retrieves(tmp_path):
    settings = RagConfig(chunk_size=20, top_k=2, drop_zero_scores=True)
    assert not hasattr(settings, "build_index") and not hasattr(settings, "retrieve")
    corpus = Corpus.from_texts(TEXTS)
    service = RetrievalService(settings=settings, cache_dir=tmp_path)
    index = service.build_index(corpus)
    assert any(tmp_path.iterdir())  # cached under the service's folder
    assert [c.text for c in index.chunks] == [
        c.text
        for c in build_index(corpus, "bm25", chunking=settings.chunking(), use_cache=False).chunks
    ]
    hits = service.retrieve(index, "vault code")
    assert [h.chunk.text for h in hits] == [TEXTS[0]]  # top 2, the zero-scoring one dropped


def test_a_nodes_service_comes_from_its_run_context(tmp_path):
    cfg = SelfRouteConfig(top_k=1)
    context = StrategyContext(
        llm=ScriptedChatModel(replies=[]),
        config=cfg,
        corpus=Corpus.from_texts(TEXTS),
        cache_dir=tmp_path,
    )
    service = RetrievalService.of(context)
    assert service.settings is cfg and service.cache_dir == tmp_path and not service.show_progress
