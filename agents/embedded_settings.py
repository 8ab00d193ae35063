"""The llama.cpp settings the embedded model runs with, chosen by measurement on this CPU.

``python -m benchmarks.bench_embedded`` measures them (prefill and generation tokens/s,
settings side by side in one run, with the load average); the defaults below are its winners on
the 2-core x86-64 machine the project is developed on (docs/embedded_model.md has the figures):

* threads: every core the process may use for prefill; for generation, one less (at least one).
  Alone, generation is fastest on every core (2 threads 79 tokens/s, 1 thread 43 on 2 cores), but
  the library's answers run concurrently and their Python side (graphs, prompts, tokenizing, the
  report) needs a core: llama.cpp's generation threads wait on each other at every operation, and
  a descheduled one stalls the rest. The demo took 97.0 s before, 109.8 s with every core
  generating and 97.3 s with one core left free; the README's own-corpus run 52.3, 45.2 and 46.7 s
  (docs/embedded_model.md).
* flash attention on: prefill +20% at 512 prompt tokens, +31% at 2,600 (225 -> 270, 155 -> 204
  tokens/s); generation unchanged on two threads, 13-23% slower on one: the library's prompts are
  long and its replies short, so prefill decides.
* batch 512 / micro-batch 512 (llama.cpp's defaults): 2,048 gained nothing measurable and
  256 lost 20-40%.
* KV cache in f16: a q8_0 cache needs flash attention and measured 35-60% slower on the CPU.

Flash attention and the batch sizes change the arithmetic's order (not the model), so a reply may
differ in the last bits of a logit from a run with other values: they are part of the model's
identity in caches and run keys (:meth:`EmbeddedSettings.identity`); the thread count splits rows
between threads and changes no sum, so it is not.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from longctx.retrieval.threads import policy_threads, usable_cores

__all__ = ["EmbeddedSettings", "usable_cores"]


@dataclass(frozen=True)
class EmbeddedSettings:
    """How llama.cpp runs the embedded model (see the module docstring for the measurements).

    Attributes:
        n_threads: Threads generating tokens (``None``: one less than the thread policy's
            (:func:`~longctx.retrieval.threads.policy_threads`: every usable core), at least
            1).
        n_threads_batch: Threads reading the prompt (``None``: the thread policy's).
        n_batch: Logical batch of prompt tokens per decode call.
        n_ubatch: Physical micro-batch.
        flash_attn: llama.cpp's flash-attention kernels.
    """

    n_threads: int | None = None
    n_threads_batch: int | None = None
    n_batch: int = 512
    n_ubatch: int = 512
    flash_attn: bool = True

    def llama_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``llama_cpp.Llama`` for these settings, threads resolved."""
        cores = policy_threads()  # every usable core, unless the thread policy gives fewer
        return {
            "n_threads": self.n_threads or max(cores - 1, 1),
            "n_threads_batch": self.n_threads_batch or cores,
            "n_batch": self.n_batch,
            "n_ubatch": self.n_ubatch,
            "flash_attn": self.flash_attn,
        }

    def identity(self) -> dict[str, Any]:
        """The settings that can change a reply (not only its speed): part of the model's cache
        key."""
        return {"flash_attn": self.flash_attn, "n_batch": self.n_batch, "n_ubatch": self.n_ubatch}

    def as_dict(self) -> dict[str, Any]:
        """All settings, for manifests and benchmark records."""
        return asdict(self)
