"""What a chat model's requests carry beyond its name and server: the model part of a resumable
run's key.

Two models with the same name and URL send different requests when their sampling, stop
sequences, seed, ``extra_body``, ``model_kwargs`` or model-selecting headers differ, or
when the same file name holds other weights. A run key made of name and URL alone let the
second model replay the first one's checkpoint without a call; :func:`request_settings`
gives the rest, for any LangChain chat model.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

#: Headers that authenticate, trace or describe the client: they change nothing the model does
#: (a rotated key or a new request id is the same run), so they stay out of the key.
NEUTRAL_HEADER = re.compile(
    r"authorization|api[-_]?key|token|secret|cookie|user-agent|request-id|trace|idempotency",
    re.IGNORECASE,
)

#: :func:`file_fingerprint` reads this many evenly spaced blocks of this size (4 MiB in all, first
#: and last included).
SAMPLED_BLOCKS, BLOCK_BYTES = 64, 64 * 1024


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data with a stable text form: containers recursively, sets sorted,
    secrets as ``"<secret>"``, other objects by their type's qualified name (never their ``repr``,
    which may carry a memory address)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if hasattr(value, "get_secret_value"):
        return "<secret>"
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain(v) for v in value), key=repr)
    return f"{type(value).__module__}.{type(value).__qualname__}"


def model_headers(llm: BaseChatModel) -> dict[str, Any]:
    """The model's default headers that may change what it does (routing, model or feature
    selection), those matching :data:`NEUTRAL_HEADER` left out."""
    headers = getattr(llm, "default_headers", None) or {}
    return {str(k): plain(v) for k, v in dict(headers).items() if not NEUTRAL_HEADER.search(str(k))}


def request_settings(llm: BaseChatModel) -> dict[str, Any]:
    """Every setting of ``llm`` that changes what its requests ask for, JSON-ready; empty parts left
    out.

    - ``params``: the integration's own identifying parameters (LangChain's
      ``_identifying_params``, what its LLM cache keys a model by): for ``ChatOpenAI`` the
      request body's defaults (temperature, top_p, stop, seed, ``extra_body``, ``model_kwargs``,
      reasoning effort, ...), for the embedded model its file, window and seed; ``None`` values
      (not sent) left out;
    - ``headers`` / ``query``: default headers (:func:`model_headers`) and query parameters;
    - ``served_model``: the served model's fingerprint where the model knows it without a call
      (``served_model_fingerprint``: the embedded model's GGUF content); a server's is not
      known before its first reply.
    """
    params = {
        str(k): plain(v)
        for k, v in dict(getattr(llm, "_identifying_params", None) or {}).items()
        if v is not None
    }
    parts = {
        "params": params,
        "headers": model_headers(llm),
        "query": plain(dict(getattr(llm, "default_query", None) or {})),
        "served_model": getattr(llm, "served_model_fingerprint", None),
    }
    return {k: v for k, v in parts.items() if v}


def settings_digest(llm: BaseChatModel) -> str:
    """A short stable digest of :func:`request_settings`: recorded with every answer
    (``llm_settings`` in its config) so a resumed experiment can tell answers of a differently set
    model from its own without writing the settings themselves (a header or body field may carry
    what is not ours to copy)."""
    text = json.dumps(request_settings(llm), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def model_identity(llm: BaseChatModel) -> str:
    """What names a model's index-time replies in the caches (RAPTOR's summaries and tree,
    HippoRAG's OpenIE logs and graph, the structured records): its name and :func:`settings_digest`
    (every setting its requests carry, the served model's fingerprint where it is known), never its
    server's address, so the same model behind another port, host or endpoint reuses what it already
    answered."""
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__
    return f"{name} [{settings_digest(llm)}]"


def file_fingerprint(path: str | Path) -> str:
    """A content fingerprint of a model file: sha256 of its size and :data:`SAMPLED_BLOCKS` evenly
    spaced blocks (the whole file when smaller). Other weights, a re-quantisation or a different
    header change it; reading 4 MiB keeps it fast for a 40 GB file. Cached per (path, size,
    mtime)."""
    stat = os.stat(path)
    return _fingerprint(str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _fingerprint(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        if size <= SAMPLED_BLOCKS * BLOCK_BYTES:
            digest.update(f.read())
        else:
            for i in range(SAMPLED_BLOCKS):  # the last block ends at the file's last byte
                f.seek(i * (size - BLOCK_BYTES) // (SAMPLED_BLOCKS - 1))
                digest.update(f.read(BLOCK_BYTES))
    return "sha256-sampled:" + digest.hexdigest()
