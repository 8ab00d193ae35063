"""Which inference backend the sentence-transformers embedder runs: torch, torch-bf16, onnx
or onnx-int8.

The CPU default is chosen from the CPU's feature flags (``/proc/cpuinfo``): ``torch-bf16``
where bfloat16 is native, else ``torch`` (:func:`default_cpu_backend` says why).
"""

from __future__ import annotations

import functools
from pathlib import Path

#: Inference backends of :class:`~retrieval.embedders.SentenceTransformerEmbedder`: ``torch``
#: (sentence-transformers' default, float32), ``torch-bf16`` (the same model loaded in bfloat16
#: through sentence-transformers' ``model_kwargs``, for CPUs with native bfloat16), ``onnx`` (the
#: same weights exported to ONNX, run by ONNX Runtime) and ``onnx-int8`` (that ONNX model with int8
#: dynamic quantisation of its weights).
EMBEDDING_BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8")
#: CPU flags (``/proc/cpuinfo``) of native bfloat16 arithmetic: AMX tiles or AVX-512 BF16.
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


@functools.cache
def _cpu_flags() -> frozenset[str]:
    """The x86 feature flags of this CPU from ``/proc/cpuinfo`` (read once); empty where there is
    none (not Linux)."""
    try:
        return parse_cpu_flags(Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        return frozenset()


def parse_cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The ``flags`` of the first processor in a ``/proc/cpuinfo`` text (x86; ARM's are
    ``Features``, not read)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def native_bf16_cpu() -> bool:
    """Whether this CPU computes in bfloat16 natively (``amx_bf16`` or ``avx512_bf16``
    in its flags)."""
    return any(flag in _cpu_flags() for flag in NATIVE_BF16_FLAGS)


def default_cpu_backend() -> str:
    """What ``backend=None`` means on a CPU: ``torch-bf16`` where the CPU has native bfloat16,
    else ``torch``.

    Why bf16 and not the ``onnx-int8`` that issue #17 named: the bar for the CPU default is
    measured, not a format (>= 2.0x the throughput of a bare torch float32 encode, top-10
    overlap >= 0.9 with the torch index and evidence recall within 0.02 of torch's on the
    synthetic 1M-token tier; ``python -m benchmarks.bench_retrieval --only backends``,
    docs/benchmarks.md). On this project's 2-core machine (AMX and AVX-512 BF16; load average
    0.4-2.0) ``torch-bf16`` met all three; ``onnx-int8`` missed the overlap bar:

    ============ ===================== ============== ============================
    backend      throughput vs fp32    top-10 overlap recall@10 / @50 vs torch
                 (best / median round)
    ============ ===================== ============== ============================
    torch-bf16   3.29x / 3.29x         0.980          +0.001 / +0.001
    onnx-int8    1.57x / 1.60x         0.753          +0.002 / +0.006
    ============ ===================== ============== ============================

    bf16 vectors have cosine 0.99994 with torch's, int8 ones 0.989, which reorders the tier's
    near-duplicate chunks; ``onnx-int8`` stays an option. Where bfloat16 is not native, torch
    computes it in software (no speed-up measured or expected): those CPUs, and systems whose
    flags are not read (non-Linux, ARM), keep ``torch``.
    """
    return "torch-bf16" if native_bf16_cpu() else "torch"


def resolve_backend(backend: str | None, device: str = "cpu") -> str:
    """The embedding backend to use: ``backend`` checked, or the default for ``device``."""
    if backend is None:
        return default_cpu_backend() if device == "cpu" else "torch"
    if backend not in EMBEDDING_BACKENDS:
        raise ValueError(
            f"Unknown embedding backend={backend!r}; valid values of the backend option: "
            f"{', '.join(EMBEDDING_BACKENDS)}"
        )
    if backend != "torch" and device != "cpu":
        raise ValueError(
            f"The embedding backend={backend!r} runs on the CPU only; use backend='torch' with "
            f"device={device!r}"
        )
    if backend == "torch-bf16" and not native_bf16_cpu():
        raise ValueError(
            "The embedding backend='torch-bf16' needs a CPU with native bfloat16 (one of "
            f"{', '.join(NATIVE_BF16_FLAGS)} among the flags of /proc/cpuinfo, Linux); none "
            "found here, and "
            "bfloat16 computed in software brings no speed-up: use backend='torch'"
        )
    return backend


def quantization_target() -> str:
    """The int8 recipe of sentence-transformers' dynamic quantisation for this CPU.

    ``avx512_vnni`` (signed int8 weights, VNNI dot products) where the CPU has it (faster
    than the ``avx2`` recipe in a side run on this project's machine, same quality);
    ``avx2`` on other x86 CPUs; ``arm64`` on ARM.
    """
    import platform

    if platform.machine().lower() in ("arm64", "aarch64"):
        return "arm64"
    return "avx512_vnni" if "avx512_vnni" in _cpu_flags() else "avx2"
