"""Ray paths: the runner fanned out as Ray tasks, and chunk embedding as a Ray Data pipeline."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("LONGCTX_REQUIRE_RAY") == "1":  # make test-ray (CI): a missing Ray is a failure
    import ray
else:
    ray = pytest.importorskip("ray")

pytestmark = pytest.mark.ray

from experiments.perf.stub_server import stub_server  # noqa: E402
from experiments.ray_runner import EndpointPool, run_experiment_ray  # noqa: E402
from experiments.runner import RunConfig, latest_rows, read_rows, run_experiment  # noqa: E402
from retrieval import ChunkingConfig, Corpus, build_index  # noqa: E402
from retrieval import index as index_module  # noqa: E402
from retrieval.dense import DenseRetriever  # noqa: E402
from retrieval.embedders import SentenceTransformerEmbedder  # noqa: E402
from retrieval.ray_index import build_index_ray  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
V2 = str(ROOT / "tests" / "fixtures" / "benchmarks" / "longbench_v2")


@pytest.fixture(scope="module", autouse=True)
def local_ray(tmp_path_factory):
    """A local 2-CPU Ray instance whose workers import this checkout and share an index cache."""
    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "LONGCTX_CACHE_DIR", "HF_HUB_OFFLINE")}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), saved["PYTHONPATH"]) if p)
    os.environ["LONGCTX_CACHE_DIR"] = str(tmp_path_factory.mktemp("ray-worker-cache"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def config(**kw) -> RunConfig:
    base = dict(benchmark="longbench_v2", strategies=("rag", "full_context"), data_path=V2, llm="openai:stub", llm_cache=False)
    base.update(concurrency=1, strategy_options={"rag": {"top_k": 2}})
    return RunConfig(**{**base, **kw})


def _predictions(out: Path) -> dict:
    return {k: (r["status"], r.get("prediction")) for k, r in latest_rows(read_rows(out)).items()}


def test_ray_run_matches_local_run_and_resumes(tmp_path):
    with stub_server(latency=0.0) as url1, stub_server(latency=0.0) as url2:
        os.environ["OPENAI_BASE_URL"] = url1
        try:
            local = run_experiment(config(), tmp_path / "local", show_progress=False)
        finally:
            del os.environ["OPENAI_BASE_URL"]
        counts = run_experiment_ray(config(), tmp_path / "ray", endpoints=[url1, url2], show_progress=False)
        assert counts == local == {"samples": 3, "pairs": 6, "skipped": 0, "ok": 6, "failed": 0}
        assert _predictions(tmp_path / "ray") == _predictions(tmp_path / "local")
        again = run_experiment_ray(config(), tmp_path / "ray", endpoints=[url1, url2], show_progress=False)
    assert again["skipped"] == 6 and again["ok"] == 0 and len(read_rows(tmp_path / "ray")) == 6


def test_ray_failures_are_rows_and_a_rerun_retries_them(tmp_path):
    with stub_server(latency=0.0) as url:
        dead = "http://127.0.0.1:9/v1"  # nothing listens: every unit sent there fails
        env = {"LONGCTX_MAX_RETRIES": "0", "LONGCTX_TIMEOUT": "2"}
        os.environ.update(env)
        try:
            first = run_experiment_ray(config(), tmp_path, endpoints=[dead], show_progress=False)
            assert first["failed"] == 6 and len(read_rows(tmp_path)) == 6
            assert all(r["error"] for r in read_rows(tmp_path))
            second = run_experiment_ray(config(), tmp_path, endpoints=[url], show_progress=False)
        finally:
            for k in env:
                del os.environ[k]
    assert second["ok"] == 6
    assert all(r["status"] == "ok" for r in latest_rows(read_rows(tmp_path)).values())


def test_endpoint_pool_spreads_and_bounds_work():
    pool = EndpointPool(["a", "b"], concurrency=2)
    slots = [pool.acquire() for _ in range(5)]
    assert slots == [0, 1, 0, 1, None]
    pool.release(1)
    assert pool.acquire() == 1 and pool.acquire() is None


def test_endpoints_need_an_openai_model(tmp_path):
    with pytest.raises(ValueError, match="openai"):
        run_experiment_ray(config(llm="embedded"), tmp_path, endpoints=["http://x/v1"], show_progress=False)


class CountingEmbedder(SentenceTransformerEmbedder):
    """The real MiniLM embedder (float32 torch), counting the texts it embeds in this process.

    float32 pinned: bfloat16 vectors (the CPU default where the CPU has it) move by up to 2e-3
    with the batch a text is embedded in, and Ray's batches are not the local build's.
    """

    def __init__(self):
        super().__init__(backend="torch")
        self.embedded = 0

    def embed_documents(self, texts):
        self.embedded += len(texts)
        return super().embed_documents(texts)


def test_ray_index_equals_local_index_and_loads_locally(tmp_path):
    corpus = Corpus.from_texts([f"Document {i} discusses topic {i % 7} and the number {i * 13}." for i in range(60)])
    chunking = ChunkingConfig(size=12)
    local = build_index(corpus, "dense", backend="torch", chunking=chunking, cache_dir=tmp_path / "local")
    index_module.clear_memory_cache()
    driver = CountingEmbedder()
    remote = build_index_ray(corpus, DenseRetriever(driver), chunking=chunking, cache_dir=tmp_path / "ray", workers=2, batch_size=16)
    assert driver.embedded == 0  # every chunk was embedded by the Ray actors
    assert remote.key == local.key and remote.path == tmp_path / "ray" / "indexes" / local.key
    assert [c.chunk_id for c in remote.chunks] == [c.chunk_id for c in local.chunks]
    n = len(local)
    a = local.retriever._index.index.reconstruct_n(0, n)
    b = remote.retriever._index.index.reconstruct_n(0, n)
    np.testing.assert_allclose(a, b, atol=1e-5)
    index_module.clear_memory_cache()
    embedder = CountingEmbedder()
    loaded = build_index(corpus, DenseRetriever(embedder), chunking=chunking, cache_dir=tmp_path / "ray")
    assert embedder.embedded == 0 and loaded.path == remote.path  # loaded from disk, not rebuilt
    assert [h.chunk.chunk_id for h in loaded.search("topic 3", 3)] == [h.chunk.chunk_id for h in local.search("topic 3", 3)]


def test_without_ray_the_cli_says_how_to_install_it(monkeypatch, capsys, tmp_path):
    from experiments.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if not installed
    (tmp_path / "a.txt").write_text("alpha beta gamma")
    assert main(["index", str(tmp_path / "a.txt"), "--retriever", "dense", "--ray"]) == 2
    assert "pip install 'longctx[ray]'" in capsys.readouterr().err
    args = ["run", "--benchmark", "longbench_v2", "--data", V2, "--strategies", "rag", "--llm", "openai:stub", "--out", str(tmp_path / "o")]
    assert main([*args, "--ray", "auto"]) == 2
    assert "pip install 'longctx[ray]'" in capsys.readouterr().err
    assert main([*args, "--endpoints", "http://a/v1"]) == 2  # --endpoints without --ray
    assert "--endpoints needs --ray" in capsys.readouterr().err
