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
# Each pytest-xdist worker gets its share of the cores for torch, faiss and MKL (OpenMP), set before
# any of them starts its threads: two workers each running a thread per core put four threads
# spinning at OpenMP barriers on two cores, and MiniLM ran 15-20x slower (40 short texts in
# batches of 10: 7.2 s with 2 threads, 0.36 s with 1, at load 11).
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _WORKERS)))

import pytest  # noqa: E402

from longctx.retrieval import Corpus  # noqa: E402
from tests.tiers import NOT_UNIT, file_order, stale_entries, tier_of  # noqa: E402

TESTS = Path(__file__).resolve().parent

FILLER_TOPICS = [
    (
        "The harbour authority repainted the lighthouse and inspected the breakwater after the "
        "winter storms."
    ),
    (
        "Local farmers reported an early apple harvest and a shortage of seasonal pickers in the "
        "valley."
    ),
    (
        "The city orchestra rehearsed a new symphony and sold out its spring concerts in the old "
        "theatre."
    ),
    "Engineers resurfaced the mountain road and added guard rails on the steep northern bends.",
    "The public library extended its opening hours and catalogued a donation of maritime charts.",
    "A cycling club organised a charity ride along the river and raised funds for the hospital.",
]


def pytest_configure(config: pytest.Config) -> None:
    """Workers take test files in the collected order (:func:`tests.tiers.file_order`), not in
    pytest-xdist's own order by number of tests, which would start the few-test, long files last."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


FILE_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Each test file's seconds (setup, call and teardown of its tests), for the summary below."""
    path = report.nodeid.split("::", 1)[0]
    FILE_SECONDS[path] = FILE_SECONDS.get(path, 0.0) + report.duration


@pytest.hookimpl(trylast=True)  # after the slowest tests
def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """The 15 slowest test files after the 15 slowest tests: with a file whole on one worker, a
    long file is what makes a tail (list it in tests/tiers.py LONGEST_FILES)."""
    if not FILE_SECONDS or hasattr(config, "workerinput"):
        return
    terminalreporter.write_sep("=", "slowest 15 test files (seconds, their tests summed)")
    for path, seconds in sorted(FILE_SECONDS.items(), key=lambda kv: -kv[1])[:15]:
        terminalreporter.write_line(f"{seconds:8.2f}s {path}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier (tests/tiers.py): its listed marker, or ``unit`` when nothing
    keeps it out of the unit tier; an entry naming no test of a collected file stops the run. The
    files are then put in :func:`tests.tiers.file_order`, each file's tests in their own order."""
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
            "tests/tiers.py lists tests that do not exist (renamed or removed?): "
            f"{', '.join(stale)}"
        )
    paths = [
        item.path.relative_to(TESTS).as_posix() if TESTS in item.path.parents else str(item.path)
        for item in items
    ]
    rank = {p: i for i, p in enumerate(file_order(paths))}
    # sorted is stable: each file's tests keep their order
    order = sorted(range(len(items)), key=lambda i: rank[paths[i]])
    items[:] = [items[i] for i in order]


def filler_document(i: int, sentences: int = 30) -> str:
    """Plausible distractor text that never mentions the planted fact."""
    return " ".join(FILLER_TOPICS[(i + j) % len(FILLER_TOPICS)] for j in range(sentences))


@pytest.fixture(autouse=True, scope="session")
def shared_calibration(tmp_path_factory):
    """One calibration file for the session, seeded with a speed for the embedded default model
    (this machine's measured figures, 2 quiet cores): the plans the CLI and the demo print need
    one, and measuring it costs ~5 s of model calls. The measurement itself is tested on its own
    (tests/test_run_plan.py, against the real model, in its own folder)."""
    from longctx.agents.calibration import ModelSpeed, calibration_key
    from longctx.agents.chat_models import EmbeddedChatModel

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


@pytest.fixture(autouse=True, scope="module")
def strategies_as_the_file_found_them():
    """A strategy a test file registers (a scripted tool loop, a toy plug-in) is gone when the file
    ends, so no file's result depends on which files ran before it on the same worker (a leftover
    registration made "every strategy" tests see a strategy without a colour)."""
    import sys

    module = sys.modules.get("longctx.graphs.plugin.strategy_registry")
    if module is None:
        yield
        return
    registry = module.STRATEGIES
    entries = dict(registry._entries)
    yield
    for name in [n for n in registry._entries if n not in entries]:
        del registry._entries[name]


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own index cache directory."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    from longctx.retrieval import index as index_module

    index_module.clear_memory_cache()
    return tmp_path / "cache"


@pytest.fixture
def no_held_index_artifacts():
    """No RAPTOR tree or HippoRAG graph held by this process before or after the test: each answer
    loads its artifact from the cache or builds it."""
    from longctx.graphs.hipporag.build import forget_graphs
    from longctx.graphs.raptor import graph as raptor_graph

    def drop() -> None:
        raptor_graph._TREES.clear()
        forget_graphs()

    drop()
    yield
    drop()


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
