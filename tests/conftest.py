"""Shared fixtures: an isolated index cache per test and a small planted-fact corpus."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

# Every model the tests use ships inside a package. Set before anything imports
# huggingface_hub / transformers (they read these once, at import): set later, a lookup of a
# hub name waits on network time-outs instead of failing at once.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402

from retrieval import Corpus  # noqa: E402
from tests.tiers import NOT_UNIT, stale_entries, tier_of  # noqa: E402

TESTS = Path(__file__).resolve().parent

FILLER_TOPICS = [
    "The harbour authority repainted the lighthouse and inspected the breakwater after the winter storms.",
    "Local farmers reported an early apple harvest and a shortage of seasonal pickers in the valley.",
    "The city orchestra rehearsed a new symphony and sold out its spring concerts in the old theatre.",
    "Engineers resurfaced the mountain road and added guard rails on the steep northern bends.",
    "The public library extended its opening hours and catalogued a donation of maritime charts.",
    "A cycling club organised a charity ride along the river and raised funds for the hospital.",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier (tests/tiers.py): its listed marker, or ``unit`` when nothing keeps
    it out of the unit tier; an entry naming no test of a collected file stops the run."""
    modules: dict[str, object] = {}
    for item in items:
        if TESTS not in item.path.parents:
            continue
        path = item.path.relative_to(TESTS).as_posix()
        name = getattr(item, "originalname", item.name)
        modules.setdefault(path, getattr(item, "module", None))
        marker = tier_of(path, name)
        if marker:
            item.add_marker(marker)
        if not any(item.get_closest_marker(m) for m in NOT_UNIT):
            item.add_marker("unit")
    stale = [
        e
        for path, module in modules.items()
        for e in stale_entries(path, {n for n in dir(module) if n.startswith("test_")})
    ]
    if stale:
        raise pytest.UsageError(
            f"tests/tiers.py lists tests that do not exist (renamed or removed?): {', '.join(stale)}"
        )


def filler_document(i: int, sentences: int = 30) -> str:
    """Plausible distractor text that never mentions the planted fact."""
    return " ".join(FILLER_TOPICS[(i + j) % len(FILLER_TOPICS)] for j in range(sentences))


@pytest.fixture(autouse=True, scope="session")
def shared_calibration(tmp_path_factory):
    """One calibration file for the session, seeded with a speed for the embedded default model
    (this machine's measured figures, 2 quiet cores): the plans the CLI and the demo print need
    one, and measuring it costs ~5 s of model calls. The measurement itself is tested on its own
    (tests/test_run_plan.py, against the real model, in its own folder)."""
    from agents.calibration import ModelSpeed, calibration_key
    from agents.chat_models import EmbeddedChatModel

    path = tmp_path_factory.mktemp("calibration") / "calibration.json"
    key = calibration_key(EmbeddedChatModel())
    seed = ModelSpeed(
        prompt_tokens_per_second=282.0,
        completion_tokens_per_second=49.0,
        measured="test session seed",
        key=key,
    )
    path.write_text(json.dumps({key: dataclasses.asdict(seed)}))
    os.environ["LONGCTX_CALIBRATION"] = str(path)
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
    texts[3] = (
        filler_document(3, 10)
        + " The secret code of the museum vault is 7421. "
        + filler_document(4, 10)
    )
    titles = ["Harbour", "Farms", "Orchestra", "Vault", "Roads", "Library"]
    return Corpus.from_texts(texts, titles=titles)
