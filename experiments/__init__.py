"""Experiments: the ``longctx`` command line, benchmark loaders, metrics and runners.

Benchmarks, metrics and the resumable runner land with their own issues; the CLI and
the performance scripts under ``experiments.perf`` are here from the start.
"""
