"""The run path of every strategy: single, batched, checkpointed; events, event loop, Ray."""
