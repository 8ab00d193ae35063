"""What a run (or a rerun into the same folder) still has to answer: pairs not answered yet,
answered with other settings (warned about, answered again), or failed before (retried)."""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.experiments.runner.changed_settings import changed_fields, expected_config
from longctx.experiments.runner.config import RunConfig
from longctx.experiments.runner.manifest import start_manifest
from longctx.experiments.runner.results_file import latest_rows, read_rows

log = logging.getLogger(__name__)


def plan_run(
    out: Path,
    config: RunConfig,
    chat: BaseChatModel,
    samples: list[Any],
    *,
    same_models: Collection[str] = (),
) -> tuple[list, dict[str, int], int, set]:
    """Pairs still to answer (not ok in ``out`` yet), this invocation's counters, its manifest
    entry, and the pairs among them that failed before (retries)."""
    latest = latest_rows(read_rows(out))
    done, changed = answered_pairs(latest, config, chat, same_models=same_models)
    retries = {key for key, row in latest.items() if row["status"] == "failed"}
    todo = [
        (s, name) for s in samples for name in config.strategies if (s.sample_id, name) not in done
    ]
    if changed:
        warn_changed(out, changed)
    invocation = start_manifest(out, config, chat, len(samples), len(todo))
    counts = {
        "samples": len(samples),
        "pairs": len(samples) * len(config.strategies),
        "skipped": len(done),
        "changed": len(changed),
        "ok": 0,
        "failed": 0,
    }
    return todo, counts, invocation, retries


def answered_pairs(
    latest: Mapping[tuple[str, str], dict[str, Any]],
    config: RunConfig,
    chat: BaseChatModel,
    *,
    same_models: Collection[str] = (),
) -> tuple[set[tuple[str, str]], dict[tuple[str, str], list[str]]]:
    """The pairs of ``latest`` (a folder's latest row per pair) that a run of ``config`` on ``chat``
    skips: answered (not stopped by a budget, which is redone) with the settings this run would use
    (``same_models``: the ``llm`` of its other endpoints count as its own). The others answered ok
    come back with the fields that differ (:mod:`longctx.experiments.runner.changed_settings`): they
    are answered again."""
    expected = {
        name: expected_config(name, config.strategy_options.get(name, {}), chat)
        for name in config.strategies
    }
    done, changed = set(), {}
    for key, row in latest.items():
        if row["status"] != "ok" or row.get("stopped") or key[1] not in expected:
            continue
        wanted = expected[key[1]]
        diff = (
            changed_fields(row.get("config"), wanted, key[1], same_models=same_models)
            if wanted is not None
            else []
        )
        if diff:
            changed[key] = diff
        else:
            done.add(key)
    return done, changed


def warn_changed(out: Path, changed: Mapping[tuple[str, str], list[str]]) -> None:
    """One warning per strategy: how many of its answers in ``out`` were made with other
    settings, and which."""
    by_strategy: dict[str, list[list[str]]] = {}
    for (_, strategy), diff in changed.items():
        by_strategy.setdefault(strategy, []).append(diff)
    for strategy, diffs in by_strategy.items():
        fields = sorted({d for diff in diffs for d in diff})
        log.warning(
            "%s: %d %s answer(s) were made with other settings (%s); they are answered again "
            "(use another --out to keep both)",
            out,
            len(diffs),
            strategy,
            "; ".join(fields[:6]) + (f"; {len(fields) - 6} more" if len(fields) > 6 else ""),
        )


def is_retry(group: list[Any], strategy: str, retries: set) -> bool:
    """Whether a work unit answers a pair whose last row failed."""
    return any((s.sample_id, strategy) in retries for s in group)
