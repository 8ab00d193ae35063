"""Bounded memory for the streaming (MemAgent) strategy, its per-step trace, and checkpointing.

``longctx.memory.records`` is the records store of the structured strategy (a table of what a corpus
states, its on-disk cache and its guarded SQL). PAI's property/sub-answer store joins this
package with the PAI strategy.
"""

from longctx.memory.buffer import NO_MEMORY, MemoryUpdate, bound_memory, strip_think
from longctx.memory.checkpoints import (
    CHECKPOINTS_FILE,
    TRACE_FILE,
    RunInUse,
    lock_run,
    open_checkpointer,
    prune_checkpoints,
    run_folder,
    thread_key,
)
from longctx.memory.trace import MemoryTrace

__all__ = [
    "CHECKPOINTS_FILE",
    "NO_MEMORY",
    "TRACE_FILE",
    "MemoryTrace",
    "MemoryUpdate",
    "RunInUse",
    "bound_memory",
    "lock_run",
    "open_checkpointer",
    "prune_checkpoints",
    "run_folder",
    "strip_think",
    "thread_key",
]
