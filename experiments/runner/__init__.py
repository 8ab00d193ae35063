"""The experiment runner: strategies x benchmark samples, resumable, every failure recorded.

Each finished (sample, strategy) pair is appended to ``results.jsonl`` at once (flushed
and fsynced), so an interrupted run loses only what was in flight. A rerun skips pairs
that succeeded and retries pairs that failed; the report reads the last row of each
pair. ``manifest.json`` records the library version, git revision, config, model and
the start and end of every invocation.

Rows are strict JSON whatever a strategy returns (:mod:`longctx.agents.jsonsafe`); one that
cannot be kept is a failed row saying why. Reading tolerates what kills and editors
leave (torn tails, bad lines, a BOM, a corrupt manifest); a retried pair's calls are not
replayed from the LLM cache.

One module per idea; the names below are the runner's public API:

* :mod:`~experiments.runner.config`: :class:`RunConfig` and the samples it selects;
* :mod:`~experiments.runner.folder`: the result folder, checked and locked;
* :mod:`~experiments.runner.results_file`: ``results.jsonl``, read back and appended durably;
* :mod:`~experiments.runner.rows`: what a row of an answer or a failure holds;
* :mod:`~experiments.runner.manifest`: ``manifest.json``;
* :mod:`~experiments.runner.resume`: what a rerun still has to answer;
* :mod:`~experiments.runner.units`: work units and the rows they answer;
* :mod:`~experiments.runner.interrupts`: Ctrl-C;
* :mod:`~experiments.runner.run`: :func:`run_experiment`, which puts them together.
"""

from __future__ import annotations

from longctx.experiments.runner.config import RunConfig, run_samples, select_samples
from longctx.experiments.runner.folder import RunFolderError, RunFolderLocked, check_out_folder
from longctx.experiments.runner.interrupts import RunInterrupted
from longctx.experiments.runner.manifest import MANIFEST_FILE, manifest_config, read_manifest
from longctx.experiments.runner.results_file import RESULTS_FILE, latest_rows, read_rows
from longctx.experiments.runner.run import run_experiment

__all__ = [
    "MANIFEST_FILE",
    "RESULTS_FILE",
    "RunConfig",
    "RunFolderError",
    "RunFolderLocked",
    "RunInterrupted",
    "check_out_folder",
    "latest_rows",
    "manifest_config",
    "read_manifest",
    "read_rows",
    "run_experiment",
    "run_samples",
    "select_samples",
]
