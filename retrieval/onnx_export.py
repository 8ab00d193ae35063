"""The ONNX models of the ``onnx`` and ``onnx-int8`` embedding backends: exported once, cached, and
run by ONNX Runtime.

sentence-transformers does the export (through Optimum); this module caches the export under
the cache dir (``onnx/``), writes it atomically, and sets up ONNX Runtime for a shared machine.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from longctx.retrieval.embedder_base import EmbedderError
from longctx.retrieval.embedding_backends import quantization_target
from longctx.retrieval.extras import install_hint, require
from longctx.retrieval.paths import default_cache_dir
from longctx.retrieval.threads import ensure_thread_policy

log = logging.getLogger(__name__)


def onnx_file(folder: Path, backend: str, target: str) -> str | None:
    """The model file of ``backend`` inside an exported folder, relative to it, if present."""
    if backend == "onnx":
        return "onnx/model.onnx" if (folder / "onnx" / "model.onnx").exists() else None
    found = sorted(
        (folder / "onnx").glob(f"model_*int8_{target}.onnx")
    )  # qint8 or quint8, by recipe
    return f"onnx/{found[0].name}" if found else None


def onnx_model_dir(location: str, cache_dir: Path | None = None) -> Path:
    """Where the ONNX export of the sentence-transformers model at ``location`` is cached."""
    source = Path(location)
    name = source.name if source.exists() else location.replace("/", "--")
    digest = hashlib.sha256(
        str(source.resolve() if source.exists() else location).encode()
    ).hexdigest()[:12]
    return (cache_dir or default_cache_dir()) / "onnx" / f"{name}-{digest}"


def export_onnx_model(
    location: str, backend: str, cache_dir: Path | None = None
) -> tuple[Path, str]:
    """Export (once) the model at ``location`` for ``backend``; returns (model folder,
    ONNX file name).

    sentence-transformers does the work: ``SentenceTransformer(..., backend="onnx")`` exports
    the weights through Optimum, and ``export_dynamic_quantized_onnx_model`` writes the int8
    variant beside it. The export is written to a temporary folder and renamed into place, so
    a crash never leaves a half model that a later run would trust.
    """
    require("sentence_transformers", extra="dense", feature="the ONNX embedding backends")
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    folder = onnx_model_dir(location, cache_dir)
    target = quantization_target()
    file_name = onnx_file(folder, backend, target)
    if file_name:
        return folder, file_name
    folder.parent.mkdir(parents=True, exist_ok=True)
    log.info("Exporting %s to ONNX (%s) under %s (once)", location, backend, folder)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=folder.name + ".partial-") as tmp:
        work = Path(tmp) / "model"
        if (folder / "onnx" / "model.onnx").exists():
            shutil.copytree(folder, work)
        else:
            quiet = logging.getLogger(
                "sentence_transformers"
            )  # "save the exported model": done next
            level = quiet.level
            quiet.setLevel(logging.ERROR)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the tracer's notes on constants in the graph
                    model = SentenceTransformer(location, device="cpu", backend="onnx")
            finally:
                quiet.setLevel(level)
            model.save_pretrained(str(work))
        if backend == "onnx-int8" and not onnx_file(work, backend, target):
            model = SentenceTransformer(
                str(work),
                device="cpu",
                backend="onnx",
                model_kwargs={"file_name": "onnx/model.onnx"},
            )
            export_dynamic_quantized_onnx_model(model, target, str(work))
        file_name = onnx_file(work, backend, target)
        if not file_name:
            raise EmbedderError(
                f"ONNX export of {location} for backend {backend!r} produced no model file"
            )
        done = Path(tmp) / "previous"
        try:
            if folder.exists():
                folder.rename(
                    done
                )  # an fp32-only export, now superseded by one with the int8 file too
            work.rename(folder)
        except OSError:  # another process finished the same export first: theirs is equivalent
            if not onnx_file(folder, backend, target):
                raise
    return folder, file_name


def session_options() -> Any:
    """ONNX Runtime session options: worker threads sleep instead of spinning between ops.

    Spinning threads pay off on an idle machine and cost badly on a shared one: on this
    project's 2 busy cores, int8 throughput went from 1.1x to 2.0x torch's with spinning off.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = ensure_thread_policy()  # the process's share, as every pool
    return options


def require_onnx_runtime(backend: str) -> None:
    """Explain a missing ONNX Runtime / Optimum before sentence-transformers fails on it."""
    try:
        found = importlib.util.find_spec("onnxruntime") and importlib.util.find_spec(
            "optimum.onnxruntime"
        )
    except ModuleNotFoundError:
        found = None
    if not found:
        raise EmbedderError(
            f"The {backend!r} embedding backend needs ONNX Runtime and Optimum: "
            f"{install_hint('dense')}"
        )
