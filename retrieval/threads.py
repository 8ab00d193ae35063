"""One thread policy for every compute pool of a process: threads = cores / processes computing.

torch, faiss, OpenMP/BLAS (through threadpoolctl), ONNX Runtime and llama.cpp each start one
thread per core by default, so two worker processes on two cores run four threads that spin at
each other's barriers (MiniLM 15-20x slower in the test workers, the default suite 273 s -> 217 s
when each worker got its share). The policy gives each pool the same number: ``$LONGCTX_THREADS``
when set, else the cores this process may use divided by the processes that compute at once
(:func:`share_of_cores`). Worker processes (Ray tasks, RAPTOR's clustering workers, the test
workers) start with :func:`worker_env` and call :func:`apply_thread_policy` first; the run
manifest records :func:`thread_report`.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

log = logging.getLogger(__name__)

#: The override: threads per pool for this process and the workers it starts.
THREADS_ENV = "LONGCTX_THREADS"
#: What native pools read at start (OpenMP: torch, faiss, scikit-learn; the BLAS builds;
#: numexpr): set before a pool starts, they size it; the running ones are resized below.
POOL_ENV = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
_APPLIED: dict[int, int] = {}  # pid -> threads last applied in that process


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity, which containers restrict), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not on Linux
        return max(os.cpu_count() or 1, 1)


def share_of_cores(processes: int = 1) -> int:
    """Threads per pool for one of ``processes`` that compute at once: the cores divided among
    them, at least 1."""
    return max(1, usable_cores() // max(1, processes))


def policy_threads() -> int:
    """This process's threads per pool: ``$LONGCTX_THREADS``, else an ``$OMP_NUM_THREADS`` set by
    the user or the process that started this one (a positive integer), else every usable core
    (one process computing)."""
    for name in (THREADS_ENV, "OMP_NUM_THREADS"):
        raw = os.environ.get(name, "").strip()
        if not raw:
            continue
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value >= 1:
            return value
        log.warning("Ignoring %s=%r: not a positive integer", name, raw)
    return usable_cores()


def worker_env(threads: int) -> dict[str, str]:
    """The environment a worker process starts with to get ``threads`` per pool (its pools size
    themselves from it before any code runs)."""
    value = str(max(1, threads))
    return {THREADS_ENV: value, **dict.fromkeys(POOL_ENV, value)}


def apply_thread_policy(threads: int | None = None) -> int:
    """Give every pool of this process ``threads`` (default :func:`policy_threads`): the pools not
    started yet through the environment, torch and faiss if loaded, and every loaded OpenMP/BLAS
    library through threadpoolctl; returns the threads applied. A worker calls it first with its
    share; the library calls :func:`ensure_thread_policy` where a pool starts."""
    n = max(1, threads if threads is not None else policy_threads())
    os.environ.update(dict.fromkeys(POOL_ENV, str(n)))
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() != n:
        torch.set_num_threads(n)
    faiss = sys.modules.get("faiss")
    if faiss is not None and hasattr(faiss, "omp_set_num_threads"):
        faiss.omp_set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
    except ImportError:  # no native pools beyond numpy's own: its env var was set above
        pass
    else:
        threadpool_limits(limits=n)  # not entered as a context: the limit lasts for the process
    _APPLIED[os.getpid()] = n
    return n


def ensure_thread_policy() -> int:
    """The threads this process's pools run on: applied once per process, where a pool is about
    to start (an embedder or a FAISS index loads), unless a worker applied its share first. A pool
    loaded after the first call (faiss after torch) gets the same number."""
    applied = _APPLIED.get(os.getpid())
    return apply_thread_policy(applied)


def thread_report() -> dict[str, Any]:
    """What each pool of this process runs on now, for the run manifest: the policy, torch's and
    faiss's threads (where loaded) and each OpenMP/BLAS library's (threadpoolctl)."""
    report: dict[str, Any] = {
        "policy": policy_threads(),
        "source": THREADS_ENV if os.environ.get(THREADS_ENV) else "usable cores",
        "cores": usable_cores(),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        report["torch"] = int(torch.get_num_threads())
    faiss = sys.modules.get("faiss")
    if faiss is not None and hasattr(faiss, "omp_get_max_threads"):
        report["faiss"] = int(faiss.omp_get_max_threads())
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return report
    report["pools"] = sorted(
        {f"{p.get('internal_api')}:{p.get('num_threads')}" for p in threadpool_info()}
    )
    return report
