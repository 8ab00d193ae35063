"""Static embeddings (model2vec): a sentence transformer distilled into one vector per token.

A static model embeds a text as the mean of its tokens' vectors, with no transformer pass, so a
CPU embeds two to three orders of magnitude more texts per second than with the model it was
distilled from (Tulkens and van Dongen, 2024, model2vec). Distilled offline, on first use, from
the packaged all-MiniLM-L6-v2 or any local sentence-transformers folder, and cached under the
cache folder (``static/``) with its files' checksums; any local model2vec folder loads as is.
What it costs in retrieval quality is measured, not assumed:
``python -m benchmarks.bench_embedders``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from longctx.retrieval.checksums import ChecksumMismatch, Checksums, digest_file, verify_folder
from longctx.retrieval.embedder_base import EmbedderError, checked_vectors, source_of
from longctx.retrieval.embedders import DEFAULT_ST_MODEL, EMBEDDERS, offline_minilm_path
from longctx.retrieval.extras import Need, require
from longctx.retrieval.fit import TokenLimit
from longctx.retrieval.paths import default_cache_dir

log = logging.getLogger(__name__)

#: model2vec's defaults (``model2vec.distill.distill``): PCA to 256 dimensions, SIF weighting
#: 1e-4, mean pooling; the paper's M2V_base_output recipe.
DEFAULT_PCA_DIMS = 256
#: Tokens of one text that ``StaticModel.encode`` reads (its ``max_length`` default); the rest
#: is dropped, so chunks are fitted to it like any embedder's input limit.
STATIC_MAX_TOKENS = 512
#: Bump when the distilled folder's layout or recipe changes: older folders are rebuilt.
DISTILL_FORMAT = 1
_LOADED: dict[str, Any] = {}
_LOADED_LOCK = threading.Lock()


def is_model2vec_folder(path: Path) -> bool:
    """Whether ``path`` holds a saved model2vec ``StaticModel`` (its config says so)."""
    config = path / "config.json"
    try:
        return bool(json.loads(config.read_text()).get("model_type") == "model2vec")
    except (OSError, ValueError, AttributeError):
        return False


def _source_digest(source: Path) -> str:
    """A digest of the source model's files (their names, sizes and bytes): a changed source is a
    new key, so an edited checkpoint is never served by an old distillation."""
    h = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        size, digest = digest_file(path)
        h.update(f"{path.relative_to(source).as_posix()}\0{size}\0{digest}\n".encode())
    return h.hexdigest()


def distilled_dir(source: Path, pca_dims: int, cache_dir: Path | None = None) -> Path:
    """Where the distillation of ``source`` at ``pca_dims`` is cached: keyed by the source's
    files, the settings, model2vec's version and :data:`DISTILL_FORMAT`."""
    import model2vec

    key = json.dumps(
        {
            "source": _source_digest(source),
            "pca_dims": pca_dims,
            "model2vec": model2vec.__version__,
            "format": DISTILL_FORMAT,
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return (cache_dir or default_cache_dir()) / "static" / f"{source.name}-{pca_dims}-{digest}"


def _distill_into(folder: Path, source: Path, pca_dims: int) -> None:
    """Distil ``source`` and save it at ``folder`` with a checksummed ``meta.json``, written under
    a temporary name and renamed into place (a crash leaves no half model a later run trusts)."""
    require("model2vec", extra="static", feature="the static embedder")
    from model2vec.distill import distill

    folder.parent.mkdir(parents=True, exist_ok=True)
    log.info(
        "Distilling %s into a static model (%d dims) under %s (once)", source, pca_dims, folder
    )
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=folder.name + ".partial-") as tmp:
        work = Path(tmp) / "model"
        try:
            model = distill(model_name=str(source), pca_dims=pca_dims, device="cpu")
        except Exception as exc:  # not a transformers checkpoint, or files missing offline
            raise EmbedderError(f"Cannot distil a static model from {source}: {exc}") from exc
        model.save_pretrained(str(work))
        write_meta(work, source=str(source), pca_dims=pca_dims)
        try:
            work.rename(folder)
        except OSError:  # another process finished the same distillation first: equivalent
            if not (folder / "meta.json").exists():
                raise


def write_meta(folder: Path, **settings: Any) -> None:
    """Record the checksum of every file of a saved static model in its ``meta.json`` (written
    last: a folder without it is unfinished)."""
    sums = Checksums(folder)
    sums.add_unrecorded()
    (folder / "meta.json").write_text(json.dumps({**settings, "files": sums.as_dict()}))


def _checked(folder: Path) -> Path:
    """``folder`` once its files match their recorded checksums; a damaged one is removed
    (it is rebuilt) and :class:`ChecksumMismatch` raised."""
    try:
        verify_folder(folder, json.loads((folder / "meta.json").read_text()).get("files"))
    except (ChecksumMismatch, OSError, ValueError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise ChecksumMismatch(f"the cached static model at {folder} is damaged: {exc}") from exc
    return folder


def static_model_dir(model: str | None, pca_dims: int, cache_dir: Path | None = None) -> Path:
    """The model2vec folder for ``model``: a model2vec folder as is, else the cached distillation
    of the sentence-transformers folder (default: the packaged MiniLM), distilled on first use."""
    source = offline_minilm_path() if model in (None, DEFAULT_ST_MODEL) else Path(str(model))
    if not source.is_dir():
        raise EmbedderError(
            f"The static embedder needs a local folder (a model2vec model, or a "
            f"sentence-transformers model to distil); {model!r} is not one."
        )
    if is_model2vec_folder(source):
        return source
    folder = distilled_dir(source, pca_dims, cache_dir)
    if (folder / "meta.json").exists():
        try:
            return _checked(folder)
        except ChecksumMismatch as exc:
            log.warning("%s; distilling again", exc)
    _distill_into(folder, source, pca_dims)
    return _checked(folder)


def static_token_limit(tokenizer: Any, max_tokens: int, what: str) -> TokenLimit:
    """The :class:`TokenLimit` of a ``tokenizers.Tokenizer`` read without special tokens (model2vec
    adds none: a text is the mean of its own tokens' vectors)."""

    def count(texts: list[str]) -> list[int]:
        counts: list[int] = []
        for i in range(0, len(texts), 1024):  # a 10M-token corpus's encodings at once: ~1.4 GB
            batch = tokenizer.encode_batch(texts[i : i + 1024], add_special_tokens=False)
            counts += [len(e.ids) for e in batch]
        return counts

    def spans(text: str) -> list[tuple[int, int]]:
        return [
            (int(a), int(b)) for a, b in tokenizer.encode(text, add_special_tokens=False).offsets
        ]

    return TokenLimit(what, int(max_tokens), 0, count, spans)


@EMBEDDERS.register("static")
class StaticEmbedder:
    """Static (model2vec) embeddings: ~1,000x MiniLM's CPU throughput, at a retrieval cost that
    ``benchmarks/bench_embedders.py`` measures (docs/scale.md).

    Args:
        model: A local model2vec folder, or a local sentence-transformers folder to distil (default:
            the packaged all-MiniLM-L6-v2), distilled once and cached under the cache folder.
        pca_dims: Dimensions the distillation keeps (model2vec's default, 256); ignored for a
            model2vec folder.
        batch_size: Texts per encode batch.
    """

    #: The engine, as the indexing progress bar names it.
    backend = "model2vec"
    #: What it imports beyond the core install: model2vec, and torch + transformers to distil.
    needs = (
        Need("model2vec", "static", "the static embedder"),
        Need("transformers", "static", "the static embedder's distillation"),
    )

    def __init__(
        self, model: str | None = None, *, pca_dims: int = DEFAULT_PCA_DIMS, batch_size: int = 1024
    ):
        if pca_dims < 2:
            raise EmbedderError(f"pca_dims must be at least 2, got {pca_dims}")
        self.model_id = f"static:{model or DEFAULT_ST_MODEL}:{pca_dims}"
        self._model_arg = model
        self.pca_dims = pca_dims
        self.batch_size = batch_size
        self._model: Any = None
        self._centroid_vector: np.ndarray | None = None

    def unloaded(self) -> StaticEmbedder:
        """A copy that loads its model where it runs (another process or Ray node)."""
        return StaticEmbedder(self._model_arg, pca_dims=self.pca_dims, batch_size=self.batch_size)

    @property
    def model(self) -> Any:
        """The loaded ``StaticModel``, distilled on first use, once per process and folder."""
        if self._model is None:
            folder = static_model_dir(self._model_arg, self.pca_dims)
            with _LOADED_LOCK:
                if str(folder) not in _LOADED:
                    require("model2vec", extra="static", feature="the static embedder")
                    from model2vec import StaticModel

                    loaded = StaticModel.from_pretrained(folder, force_download=False)
                    # A distillation keeps its source tokenizer's settings: MiniLM's truncation
                    # at 128 tokens and padding, under which every text was embedded from its
                    # first 128 tokens only (450-token text: cosine 1.0 with its first 150).
                    loaded.tokenizer.no_truncation()
                    loaded.tokenizer.no_padding()
                    _LOADED[str(folder)] = loaded
                self._model = _LOADED[str(folder)]
        return self._model

    def token_limit(self) -> TokenLimit:
        """What one input holds: :data:`STATIC_MAX_TOKENS` of the model's own tokens."""
        return static_token_limit(
            self.model.tokenizer, STATIC_MAX_TOKENS, f"{self.model_id} tokens"
        )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text, encoded in this process (model2vec's
        own process pool is off: the library's thread policy decides what runs in parallel)."""
        vecs = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            max_length=STATIC_MAX_TOKENS,
            use_multiprocessing=False,
            show_progress_bar=False,
        )
        vecs = np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        empty = norms[:, 0] == 0
        if empty.any():  # no token the model knows (an empty text, symbols only)
            vecs[empty], norms[empty] = self._centroid(), 1.0
        vecs /= np.maximum(norms, 1e-12)
        return checked_vectors(vecs, len(texts), source_of(self))

    def _centroid(self) -> np.ndarray:
        """The vector of a text with no known token: the unit mean of the vocabulary's vectors, the
        least specific direction (model2vec returns zeros, which no index may hold)."""
        if self._centroid_vector is None:
            mean = np.asarray(self.model.embedding, dtype=np.float32).mean(axis=0)
            self._centroid_vector = mean / max(float(np.linalg.norm(mean)), 1e-12)
        vector: np.ndarray = self._centroid_vector
        return vector

    def embed_query(self, text: str) -> np.ndarray:
        """Unit-length embedding of one query (the same encoder as documents)."""
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector
