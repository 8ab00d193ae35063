"""``manifest.json``: the library version, git revision, config, model and tokenizer of a run, and
the start, end and counts of every invocation; updated under a lock (threads and processes),
set aside and rebuilt from the rows when it is found corrupt."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import subprocess
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.agents.chat_models import describe
from longctx.experiments.benchmarks import BENCHMARKS
from longctx.experiments.runner.config import RunConfig
from longctx.experiments.runner.folder import RunFolderError
from longctx.experiments.runner.results_file import BOM, latest_rows, read_rows
from longctx.graphs.calls.llm import tokenizer_manifest
from longctx.graphs.plugin.config import redact_secrets
from longctx.retrieval.extras import DISTRIBUTION
from longctx.retrieval.locks import exclusive_lock
from longctx.retrieval.redaction import redact_value
from longctx.retrieval.threads import thread_report

log = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _library_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def _manifest_lock(out: Path):
    """Serializes manifest read-modify-writes across threads and processes (no lost updates)."""
    return exclusive_lock(out / (MANIFEST_FILE + ".lock"), wait=True, what=f"manifest of {out}")


def start_manifest(
    out: Path, config: RunConfig, chat: BaseChatModel, n_samples: int, n_todo: int
) -> int:
    """Record a new invocation (config redacted, model, versions) and return its index."""
    revision = _git_revision()
    with _manifest_lock(out):
        return _start_manifest_locked(out, config, chat, n_samples, n_todo, revision)


def _start_manifest_locked(
    out: Path,
    config: RunConfig,
    chat: BaseChatModel,
    n_samples: int,
    n_todo: int,
    revision: str | None,
) -> int:
    path = out / MANIFEST_FILE
    manifest = read_manifest(out, repair=True) if path.exists() else {"invocations": []}
    spec = BENCHMARKS.get(config.benchmark) if config.benchmark in BENCHMARKS else None
    manifest.update(
        {
            "config": redact_secrets(
                json.loads(json.dumps(dataclasses.asdict(config), default=list))
            ),
            "model": describe(chat),
            "tokenizer": tokenizer_manifest(chat),
            "library_version": _library_version(),
            "benchmark_version": getattr(spec, "version", None),
            "python": platform.python_version(),
        }
    )
    manifest["invocations"].append(
        {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "git_revision": revision,
            "samples": n_samples,
            "todo": n_todo,
            # threads per compute pool (the thread policy) this invocation started with
            "threads": thread_report(),
        }
    )
    _write_json(path, manifest)
    return len(manifest["invocations"]) - 1


def finish_manifest(out: Path, invocation: int, counts: dict[str, Any]) -> None:
    """Record the end of invocation ``invocation`` and its counts in the manifest."""
    path = out / MANIFEST_FILE
    with _manifest_lock(out):
        manifest = read_manifest(out, repair=True)
        finished = {"finished": time.strftime("%Y-%m-%dT%H:%M:%S"), **counts}
        if invocation < len(manifest["invocations"]):
            manifest["invocations"][invocation].update(finished)
        else:  # rebuilt since this invocation started: its entry is gone
            manifest["invocations"].append(finished)
        _write_json(path, manifest)


def read_manifest(out: Path, *, repair: bool = False) -> dict[str, Any]:
    """``out``'s manifest. One that is not a manifest (torn, corrupt, wrong shape) raises
    :class:`RunFolderError` naming it; with ``repair`` it is set aside instead (as
    ``manifest.json.corrupt-<time>``) and rebuilt from the rows (called under the manifest lock)."""
    path = Path(out) / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_bytes().removeprefix(BOM).decode("utf-8"))
        if not isinstance(manifest, dict) or not isinstance(manifest.get("invocations"), list):
            raise ValueError("not a manifest object with a list of invocations")
        return manifest
    except FileNotFoundError:
        raise RunFolderError(
            f"{path} does not exist: {out} is not a folder written by 'longctx run'"
        ) from None
    except (
        ValueError,
        RecursionError,
    ) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        problem = f"{path} is unreadable ({type(exc).__name__}: {str(exc)[:200]})"
        if not repair:
            raise RunFolderError(
                f"{problem}; rerun the same 'longctx run' command into {out} to rebuild it"
            ) from None
    aside = path.with_name(
        f"{MANIFEST_FILE}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    )
    path.replace(aside)
    log.warning("%s; set aside as %s and rebuilt from the rows", problem, aside.name)
    return _manifest_from_rows(out, aside)


def manifest_config(out: str | Path, manifest: dict[str, Any] | None = None) -> dict[str, Any]:
    """The run config recorded in ``out``'s manifest (``manifest``: that manifest, already read).

    Raises:
        RunFolderError: The manifest is missing, unreadable, or records no config (benchmark and
            strategies), naming it.
    """
    path = Path(out) / MANIFEST_FILE
    config = (read_manifest(Path(out)) if manifest is None else manifest).get("config")
    if (
        not isinstance(config, dict)
        or not isinstance(config.get("benchmark"), str)
        or not isinstance(config.get("strategies"), list)
    ):
        raise RunFolderError(
            f"{path} records no run config (benchmark and strategies); rerun the same 'longctx "
            f"run' command into {out} to write it"
        )
    return config


def _manifest_from_rows(out: Path, aside: Path) -> dict[str, Any]:
    """A manifest for a folder whose own was lost: one invocation summing up its rows (the
    config, model and versions are written by the invocation that rebuilds it)."""
    latest = latest_rows(read_rows(out)).values()
    ok = sum(r["status"] == "ok" for r in latest)
    summary = {
        "rebuilt": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "set_aside": aside.name,
        "pairs": len(latest),
        "ok": ok,
        "failed": len(latest) - ok,
    }
    return {"invocations": [summary]}


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(redact_value(data), indent=2, ensure_ascii=False))
    tmp.replace(path)
