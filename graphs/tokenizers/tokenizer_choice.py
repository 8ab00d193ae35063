"""Which tokenizer counts for a chat model: the model's own, a local Hugging Face one, the
server's tokenize endpoint, tiktoken's encoding of an OpenAI model, cl100k last.

:func:`select_tokenizer` picks one from a spec (``"auto"``, ``"model"``, ``"hf:PATH"``,
``"server"``, ``"server:<dialect>"``, ``"tiktoken:<encoding>"``, ``"cl100k"``) and the
model's :class:`ModelFacts` (gathered by :func:`longctx.graphs.calls.llm.model_facts`). The offline
tokenizers come from :mod:`longctx.retrieval.tokenizers`, the server's from
:mod:`longctx.graphs.tokenizers.server_tokenizer`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from longctx.graphs.tokenizers.server_tokenizer import server_tokenizer
from longctx.retrieval.tokenizers import (
    Tokenizer,
    TokenizerError,
    fallback_tokenizer,
    hf_tokenizer,
    local_hf_candidate,
    openai_encoding_name,
    parse_spec,
    tiktoken_tokenizer,
)

#: Default URL of the OpenAI API (it has no tokenize endpoint, so it is never probed).
OPENAI_API_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class ModelFacts:
    """What the choice needs to know about a chat model (gathered by ``longctx.graphs.calls.llm``).

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
    3. the server's tokenize endpoint (vLLM, llama.cpp, llama-cpp-python; never probed on OpenAI's
       API);
    4. tiktoken's encoding of an OpenAI model name, when its file is on this machine;
    5. cl100k, labelled ``fallback:cl100k_base``.

    Raises:
        TokenizerError: An explicit spec names a tokenizer that is not available.
    """
    kind, arg = parse_spec(spec)
    if kind == "model":
        if facts.own is None:
            raise TokenizerError(
                f"tokenizer='model': {facts.model_id} does not expose its own tokenizer."
            )
        return Tokenizer(
            id=f"model:{facts.model_id}",
            encode_fn=facts.own[0],
            decode_fn=facts.own[1],
            note="the model's own tokenizer",
        )
    if kind == "hf":
        return hf_tokenizer(arg)
    if kind == "tiktoken":
        return tiktoken_tokenizer(arg, note="chosen by the user")
    if kind == "cl100k":
        return tiktoken_tokenizer("cl100k_base", note="chosen by the user")
    if kind == "server":
        if not facts.base_url:
            raise TokenizerError(f"tokenizer='server': {facts.model_id} has no server URL.")
        found = server_tokenizer(
            facts.base_url,
            facts.model_name,
            dialect=arg or None,
            api_key=facts.api_key,
            recall_absence=False,
        )
        if found is None:
            raise TokenizerError(
                f"tokenizer='{kind}{':' + arg if arg else ''}': the server at {facts.base_url} "
                "has no tokenize endpoint we know."
            )
        return found
    return _auto(facts)


def _auto(facts: ModelFacts) -> Tokenizer:
    import httpx

    if facts.own is not None:
        return Tokenizer(
            id=f"model:{facts.model_id}",
            encode_fn=facts.own[0],
            decode_fn=facts.own[1],
            note="the model's own tokenizer",
        )
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
            fallback = fallback_tokenizer(
                f"the server at {facts.base_url} did not answer the tokenize probe: {exc}"
            )
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
