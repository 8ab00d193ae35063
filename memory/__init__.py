"""Bounded memory for the streaming (MemAgent) strategy, its per-step trace, and checkpointing.

PAI's property/sub-answer store joins this package with the PAI strategy.
"""

from memory.buffer import NO_MEMORY, MemoryUpdate, bound_memory, strip_think
from memory.checkpoints import open_checkpointer, thread_key
from memory.trace import MemoryTrace

__all__ = ["NO_MEMORY", "MemoryTrace", "MemoryUpdate", "bound_memory", "open_checkpointer", "strip_think", "thread_key"]
