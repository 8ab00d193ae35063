"""Shared fixtures: an isolated index cache per test and a small planted-fact corpus."""

from __future__ import annotations

import os

# Every model the tests use ships inside a package. Set before anything imports
# huggingface_hub / transformers (they read these once, at import): set later, a lookup of a
# hub name waits on network time-outs instead of failing at once.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402

from retrieval import Corpus  # noqa: E402

FILLER_TOPICS = [
    "The harbour authority repainted the lighthouse and inspected the breakwater after the winter storms.",
    "Local farmers reported an early apple harvest and a shortage of seasonal pickers in the valley.",
    "The city orchestra rehearsed a new symphony and sold out its spring concerts in the old theatre.",
    "Engineers resurfaced the mountain road and added guard rails on the steep northern bends.",
    "The public library extended its opening hours and catalogued a donation of maritime charts.",
    "A cycling club organised a charity ride along the river and raised funds for the hospital.",
]


def filler_document(i: int, sentences: int = 30) -> str:
    """Plausible distractor text that never mentions the planted fact."""
    return " ".join(FILLER_TOPICS[(i + j) % len(FILLER_TOPICS)] for j in range(sentences))


@pytest.fixture(autouse=True, scope="session")
def shared_calibration(tmp_path_factory):
    """The embedded model's speed is measured once per test session, not once per isolated cache."""
    os.environ["LONGCTX_CALIBRATION"] = str(tmp_path_factory.mktemp("calibration") / "calibration.json")
    yield
    os.environ.pop("LONGCTX_CALIBRATION", None)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own index cache directory."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    from retrieval import index as index_module

    index_module.clear_memory_cache()
    return tmp_path / "cache"


@pytest.fixture
def planted_corpus() -> Corpus:
    """Six documents; document 'Vault' holds the only statement of the vault code."""
    texts = [filler_document(i) for i in range(6)]
    texts[3] = filler_document(3, 10) + " The secret code of the museum vault is 7421. " + filler_document(4, 10)
    titles = ["Harbour", "Farms", "Orchestra", "Vault", "Roads", "Library"]
    return Corpus.from_texts(texts, titles=titles)
