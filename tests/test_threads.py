"""The thread policy (issue 51, item 2): threads per pool = cores / processes computing, the same in
torch, faiss, OpenMP/BLAS and llama.cpp, overridable, and a worker process starting with its share
in every pool."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor

import pytest

from longctx.retrieval import threads

pytestmark = pytest.mark.subprocess


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "cores"),
        ({"OMP_NUM_THREADS": "1"}, 1),
        ({"LONGCTX_THREADS": "3", "OMP_NUM_THREADS": "1"}, 3),
        ({"LONGCTX_THREADS": "zero", "OMP_NUM_THREADS": "1"}, 1),
        ({"LONGCTX_THREADS": "0"}, "cores"),
    ],
)
def test_the_policy_is_the_override_else_the_openmp_setting_else_every_core(
    monkeypatch, env, expected
):
    for name in ("LONGCTX_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    want = threads.usable_cores() if expected == "cores" else expected
    assert threads.policy_threads() == want


def test_the_share_divides_the_cores_among_the_processes_and_is_at_least_one():
    cores = threads.usable_cores()
    assert threads.share_of_cores(1) == cores
    assert threads.share_of_cores(cores) == 1
    assert threads.share_of_cores(cores * 4) == 1
    assert threads.worker_env(2)["OMP_NUM_THREADS"] == "2"
    assert threads.worker_env(0)["LONGCTX_THREADS"] == "1"


def _pools_after_loading() -> dict:
    """In a worker: load torch, faiss and numpy's BLAS as an index build does, then report."""
    import faiss  # noqa: F401
    import numpy  # noqa: F401
    import torch  # noqa: F401

    from longctx.retrieval.threads import ensure_thread_policy, thread_report

    ensure_thread_policy()  # what an embedder or a FAISS index does as it loads
    return thread_report()


def _one_pool_number(report: dict) -> set[int]:
    found = {report["torch"], report["faiss"]}
    found |= {int(p.rsplit(":", 1)[1]) for p in report["pools"]}
    return found


def test_a_spawned_worker_given_its_share_runs_every_pool_on_it():
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        1, mp_context=context, initializer=threads.apply_thread_policy, initargs=(1,)
    ) as pool:
        report = pool.submit(_pools_after_loading).result(timeout=300)
    assert _one_pool_number(report) == {1}, report


@pytest.mark.slow  # a spawned interpreter importing torch and faiss: 7-22 s (make test-all)
def test_raptors_clustering_workers_start_at_one_thread_in_every_pool():
    from longctx.graphs.raptor import clustering

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context, initializer=clustering._one_thread) as pool:
        report = pool.submit(_pools_after_loading).result(timeout=300)
    assert _one_pool_number(report) == {1}, report


@pytest.mark.slow  # two fresh interpreters importing torch and faiss: 5-17 s (make test-all)
@pytest.mark.skipif(threads.usable_cores() < 2, reason="needs two cores to tell 1 from all")
def test_a_process_started_with_the_worker_env_sizes_its_pools_before_any_code_runs():
    code = (
        "import json, torch, faiss; "
        "print(json.dumps([torch.get_num_threads(), faiss.omp_get_max_threads()]))"
    )
    clean = {k: v for k, v in os.environ.items() if k not in (*threads.POOL_ENV, "LONGCTX_THREADS")}
    alone = subprocess.run(
        [sys.executable, "-c", code], env=clean, capture_output=True, text=True, check=True
    )
    shared = subprocess.run(
        [sys.executable, "-c", code],
        env={**clean, **threads.worker_env(1)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(alone.stdout) == [threads.usable_cores()] * 2  # one per core, unasked
    assert json.loads(shared.stdout) == [1, 1]
