"""Which finished rows of a result folder were answered with other settings than the run
resuming it.

A resumed ``longctx run`` skips the (sample, strategy) pairs already answered. Skipping is right
only when the answer is what this run would have produced: rerunning into the same folder with
another model, other request settings of the same model (``extra_body``, sampling, headers), a
changed strategy option or preset, or prompts of another library version would otherwise leave the
table mixing answers of two configurations under one name. Every row records its effective config
(:func:`longctx.graphs.runtime.run_config.effective_config`); this module compares it with what the
resuming run would record and names the fields that differ. Those pairs are answered again (the new
row supersedes the old one: the report reads the latest row of a pair).

Fields that change how a run executes but not what it asks (concurrency, progress, resume, where a
stage runs: locally or on Ray, a batched strategy's declared runtime fields) are not compared; nor
is the tokenizer, which follows from the model and server (comparing it would probe a server before
the plan is shown). A field missing from an old row is not compared either (rows written before
``llm_settings`` existed are matched on the model's name and server).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.graphs.plugin.registry import STRATEGIES
from longctx.graphs.runtime.ray_options import RAY_RUNTIME_FIELDS
from longctx.graphs.runtime.run_config import effective_config

#: Config fields of any strategy that change how a run executes, not what it sends or answers.
RUNTIME_FIELDS = (
    frozenset({"concurrency", "show_progress", "resume", "trace_chars"}) | RAY_RUNTIME_FIELDS
)
#: Recorded fields never compared: the tokenizer follows from model and server.
NOT_COMPARED = frozenset({"tokenizer"})


def expected_config(
    strategy: str, options: Mapping[str, Any], chat: BaseChatModel
) -> dict[str, Any] | None:
    """The effective config a run of ``strategy`` with ``options`` (config fields and ``preset``, as
    :class:`longctx.experiments.runner.RunConfig` takes them) on ``chat`` records with its answers,
    or ``None`` when the options do not make a config."""
    spec = STRATEGIES.get(strategy)
    overrides = {k: v for k, v in options.items() if k != "preset"}
    try:
        cfg = spec.make_config(options.get("preset"), **overrides)
    except Exception:  # noqa: BLE001 - an invalid option fails the run's rows with its own message
        return None
    return _plain(effective_config(spec, cfg, chat, options.get("preset")))


def changed_fields(
    recorded: Mapping[str, Any] | None,
    expected: Mapping[str, Any],
    strategy: str,
    *,
    same_models: Collection[str] = (),
) -> list[str]:
    """The fields in which a row's recorded config differs from ``expected``, as
    ``"name: old -> new"`` (values shortened); empty when the row is this run's answer.
    ``same_models``: other ``llm`` values (``name @ url``) this run counts as its own model: the
    endpoints of a Ray run serve one model."""
    if not isinstance(recorded, Mapping):
        return []
    skip = RUNTIME_FIELDS | NOT_COMPARED | _batch_runtime_fields(strategy)
    changes = []
    for name, new in expected.items():
        if name in skip or name not in recorded:
            continue
        old = _plain(recorded[name])
        if name == "llm" and old in same_models:
            continue
        if old != new:
            changes.append(f"{name}: {_short(old)} -> {_short(new)}")
    return changes


def _batch_runtime_fields(strategy: str) -> frozenset[str]:
    batch = STRATEGIES.get(strategy).batch
    return frozenset(batch.runtime_fields) if batch is not None else frozenset()


def _plain(value: Any) -> Any:
    """``value`` as a row stores it (JSON round trip: tuples become lists, keys strings)."""
    return json.loads(json.dumps(value, default=str))


def _short(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["RUNTIME_FIELDS", "changed_fields", "expected_config"]
