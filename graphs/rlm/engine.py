"""The RLM loop over our model call path: one :class:`Session` per RLM (the root, and each child an
``rlm_query`` opens), all sharing one :class:`Runner` (the models, the settings, the run's config,
the record of every sub-call, the budget stop).

Written for this project after alexzhang13/rlm @ 72d6940 ``rlm/core/rlm.py`` (``completion``,
``_completion_turn``, ``_default_answer``, ``_subcall``), ``rlm/core/lm_handler.py`` (which model
a sub-call goes to) and ``rlm/environments/local_repl.py`` (the host side of ``llm_query``,
``llm_query_batched``, ``rlm_query``, ``rlm_query_batched``); the ``paper`` protocol after
@ a30805b.
Every model request goes through :func:`longctx.graphs.calls.llm.chat` with the run's config, so
the budget guard, usage, the reply cache, tracing and cancellation see each one at every depth.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig

from longctx.graphs.plugin.api import (
    BudgetReached,
    HostStop,
    Repl,
    ReplFactory,
    RunCancelled,
    SandboxLimits,
    chat,
    report_step,
)
from longctx.graphs.rlm import prompts as p
from longctx.graphs.rlm import scaffold
from longctx.graphs.rlm.journal import ReplyJournal, request_key
from longctx.graphs.rlm.protocol import (
    BlockResult,
    Message,
    Protocol,
    code_blocks,
    feedback,
    final_marker,
    first_messages,
    turn_prompt,
)

#: A search tool the REPL exposes: ``(query, k) -> JSON-able hits``.
SearchFn = Callable[[str, int], Any]


@dataclass(frozen=True)
class Settings:
    """What the loop needs of the config (see ``RlmConfig`` for each one's source)."""

    protocol: Protocol = "answer_dict"
    max_iterations: int = 30
    max_depth: int = 1
    max_concurrent_subcalls: int = 4
    batch_concurrency: int = 16
    orchestrator: bool = True
    sub_calls: bool = True
    max_sub_calls_per_turn: int | None = None
    #: ``None``: not sent (the official client sends only ``model`` and ``messages``).
    max_new_tokens: int | None = None
    sub_max_new_tokens: int | None = None
    temperature: float | None = None
    limits: SandboxLimits = field(default_factory=SandboxLimits)


@dataclass
class SubCall:
    """One sub-call a REPL made, for the report and resume: where, what kind, prompt, reply."""

    depth: int
    turn: int
    kind: str
    model: str
    prompt_chars: int
    reply: str
    #: What a resume matches the call by (:func:`call_key`).
    key: str = ""

    def to_dict(self) -> dict[str, Any]:
        """As a step fact."""
        return dict(self.__dict__)


def call_key(kind: str, prompt: str) -> str:
    """A sub-call's identity for replay: its kind and a digest of its prompt."""
    return hashlib.sha256(f"{kind}\0{prompt}".encode()).hexdigest()[:16]


def official_fields(llm: BaseChatModel) -> dict[str, Any]:
    """Call arguments that make ``llm``'s request body the official client's
    (``chat.completions.create(model=..., messages=...)``, nothing else): LangChain's OpenAI
    models add ``"stream": false`` to every body, which the openai SDK leaves out when it is
    ``NOT_GIVEN`` (a model the user made streaming keeps its own fields)."""
    if getattr(llm, "streaming", True) or not any(
        c.__name__ == "BaseChatOpenAI" for c in type(llm).__mro__
    ):
        return {}
    from openai import NOT_GIVEN

    return {"stream": NOT_GIVEN}


def _lc(messages: Sequence[Message]) -> list[BaseMessage]:
    kinds = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


def _text(message: AIMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content)


class Runner:
    """What every RLM of one answer shares."""

    def __init__(
        self,
        llm: BaseChatModel,
        settings: Settings,
        repl_factory: ReplFactory,
        *,
        sub_llm: BaseChatModel | None = None,
        search: SearchFn | None = None,
        search_description: str = "",
        config: RunnableConfig | None = None,
    ) -> None:
        self.llm = llm
        self.sub_llm = sub_llm
        self.settings = settings
        self.repl_factory = repl_factory
        self.search = search
        self.search_description = search_description
        self.config: RunnableConfig = config or {}
        self.stopped: BaseException | None = None
        self.sub_calls: list[SubCall] = []
        self._lock = threading.Lock()
        #: The root turn every request now belongs to (the journal's scope).
        self.scope = ""
        self._journal: tuple[str, ReplyJournal | None] | None = None

    def journal(self) -> ReplyJournal | None:
        """The run's reply journal (:mod:`longctx.graphs.rlm.journal`), ``None`` unless the run is
        checkpointed."""
        conf = self.config.get("configurable") or {}
        ident = f"{conf.get('thread_id')}|{id(conf.get('__pregel_checkpointer'))}"
        if self._journal is None or self._journal[0] != ident:
            self._journal = (ident, ReplyJournal.of(self.config))
        return self._journal[1]

    # -- model requests -------------------------------------------------------------------------

    def complete(
        self, llm: BaseChatModel, messages: Sequence[Message], *, name: str, sub: bool = False
    ) -> str:
        """One request through the call path; a budget stop is kept so nothing more is sent."""
        if self.stopped is not None:
            raise self.stopped
        config: RunnableConfig = {**self.config, "run_name": name}
        budget = self.settings.sub_max_new_tokens if sub else self.settings.max_new_tokens
        fields = {"max_tokens": budget, "temperature": self.settings.temperature}
        journal, scope = self.journal(), self.scope
        key = request_key(_name(llm), list(messages), fields)
        if journal is not None:
            paid = journal.take(scope, key)
            if paid is not None:  # answered before the run was stopped: not asked again
                return paid
        try:
            reply = chat(
                llm,
                _lc(messages),
                max_tokens=budget,
                temperature=self.settings.temperature,
                config=config,
                **official_fields(llm),
            )
        except (BudgetReached, RunCancelled) as stop:  # nothing more is sent, at any depth
            self.stopped = stop
            raise
        text = _text(reply)
        if journal is not None:
            journal.put(scope, key, text)
        return text

    def record(self, call: SubCall) -> None:
        """Keep a sub-call (thread-safe) and report it to a listener."""
        with self._lock:
            self.sub_calls.append(call)
        report_step({"node": "sub_call", **call.to_dict()})

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
        """``fn`` over ``items`` with at most ``workers`` at once, results in order; each task
        runs in a copy of this context (the run's report sink)."""
        if len(items) <= 1 or workers <= 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
            futures = [pool.submit(contextvars.copy_context().run, fn, x) for x in items]
            return [f.result() for f in futures]


class Session:
    """One RLM: its REPL, its message history and its turns."""

    def __init__(
        self,
        runner: Runner,
        context: str | list[Any],
        root_prompt: str | None,
        *,
        depth: int = 0,
        model: BaseChatModel | None = None,
    ) -> None:
        self.runner = runner
        self.depth = depth
        self.model = model or runner.llm
        self.root_prompt = root_prompt
        self.turn = 0
        self.final: str | None = None
        self._turn_calls = 0
        self._count_lock = threading.Lock()
        #: Recorded replies by :func:`call_key` while finished turns are replayed (resume).
        self._replay: dict[str, list[str]] | None = None
        s = runner.settings
        tools = {"search": runner.search_description} if runner.search is not None else {}
        # a child RLM is built with the official default (orchestrator=True), whatever the root's
        self.messages: list[Message] = first_messages(
            s.protocol, context, root_prompt, tools=tools, orchestrator=s.orchestrator or depth > 0
        )
        self.repl: Repl = runner.repl_factory(
            bindings={"_rlm_context_0": context},
            functions=self._functions(),
            limits=s.limits,
        )
        self.repl.run_silently(scaffold.scaffold_source(s.protocol))
        if runner.search is not None:
            self.repl.run_silently(scaffold.tools_source(["search"]))
        self.repl.run_silently(scaffold.load_source("_rlm_context_0"))

    # -- host functions -------------------------------------------------------------------------

    def _functions(self) -> dict[str, Callable[..., Any]]:
        fns: dict[str, Callable[..., Any]] = {
            "_rlm_host_llm_query": self.llm_query,
            "_rlm_host_llm_query_batched": self.llm_query_batched,
            "_rlm_host_rlm_query": self.rlm_query,
            "_rlm_host_rlm_query_batched": self.rlm_query_batched,
        }
        if self.runner.search is not None:
            fns["_rlm_host_search"] = self._search
        return {name: self._guarded(fn) for name, fn in fns.items()}

    def _guarded(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` as the REPL calls it: once the run is stopped (a budget stop or a
        cancellation, at any depth), this call and every later one raise :class:`HostStop`, which
        ends the turn whatever the code does (the code cannot catch it)."""

        def call(*args: Any, **kwargs: Any) -> Any:
            runner = self.runner
            if runner.stopped is not None:
                raise HostStop(str(runner.stopped))
            try:
                value = function(*args, **kwargs)
            except (BudgetReached, RunCancelled) as stop:
                runner.stopped = runner.stopped or stop
                raise HostStop(str(stop)) from stop
            if runner.stopped is not None:  # stopped under this call (a batch, a child)
                raise HostStop(str(runner.stopped))
            return value

        return call

    def _search(self, query: str, k: int = 5) -> Any:
        search = self.runner.search
        assert search is not None
        return search(query, k)

    def _sub_model(self, model: str | None, env_depth: int) -> BaseChatModel:
        """The client a plain sub-call goes to (``LMHandler.get_client``): a model named ``model``
        when it is the root's or the sub-model's, else the sub-model at REPL depth 1, else the
        session's own model."""
        r = self.runner
        named = {getattr(m, "model_name", None): m for m in (r.llm, r.sub_llm) if m is not None}
        if model is not None and model in named:
            return named[model]
        if r.settings.protocol == "final":
            return r.sub_llm or self.model
        if env_depth == 1 and r.sub_llm is not None:
            return r.sub_llm
        return self.model

    def _refused(self) -> str | None:
        """Why the next sub-call is not made (disabled, or this turn's limit reached), else
        ``None``; counts the call."""
        s = self.runner.settings
        if not s.sub_calls:
            return "Error: sub-calls are disabled"
        with self._count_lock:
            if (
                s.max_sub_calls_per_turn is not None
                and self._turn_calls >= s.max_sub_calls_per_turn
            ):
                return f"Error: sub-call limit reached ({s.max_sub_calls_per_turn} per turn)"
            self._turn_calls += 1
        return None

    def _replayed(self, kind: str, prompt: str) -> str | None:
        """The recorded reply of this call while a finished turn is replayed, else ``None``."""
        if self._replay is None:
            return None
        with self._count_lock:
            replies = self._replay.get(call_key(kind, prompt))
            return replies.pop(0) if replies else None

    def _plain(self, prompt: str, model: str | None, kind: str) -> str:
        refused = self._refused()
        if refused is not None:
            return refused
        replayed = self._replayed(kind, prompt)
        if replayed is not None:
            return replayed
        llm = self._sub_model(model, self.depth + 1)
        name = f"rlm {kind} depth={self.depth + 1} turn={self.turn + 1}"
        try:
            reply = self.runner.complete(
                llm, [{"role": "user", "content": prompt}], name=name, sub=True
            )
        except (BudgetReached, RunCancelled):  # the run stops (_guarded)
            raise
        except Exception as e:  # noqa: BLE001 - the official handler returns the error as text
            return f"Error: {e}"
        self.runner.record(
            SubCall(
                self.depth + 1,
                self.turn + 1,
                kind,
                _name(llm),
                len(prompt),
                reply,
                call_key(kind, prompt),
            )
        )
        return reply

    def llm_query(self, prompt: str, model: str | None = None) -> str:
        """One plain sub-call."""
        return self._plain(str(prompt), model, "llm_query")

    def llm_query_batched(self, prompts: list[str], model: str | None = None) -> list[str]:
        """Plain sub-calls, at most ``batch_concurrency`` at once, replies in order."""
        return self.runner.map(
            lambda q: self._plain(str(q), model, "llm_query_batched"),
            list(prompts),
            self.runner.settings.batch_concurrency,
        )

    def rlm_query(self, prompt: str, model: str | None = None) -> str:
        """A child RLM over ``prompt`` (its context), or a plain call at ``max_depth``
        (``RLM._subcall``); without recursion (``max_depth`` 1) a plain ``llm_query``."""
        s = self.runner.settings
        if s.max_depth <= 1:
            return self._plain(str(prompt), model, "llm_query")
        refused = self._refused()
        if refused is not None:
            return refused
        replayed = self._replayed("rlm_query", str(prompt))
        if replayed is not None:
            return replayed
        next_depth = self.depth + 1
        if next_depth >= s.max_depth:
            llm = self.runner.sub_llm or self._sub_model(model, -1)
            name = f"rlm rlm_query depth={next_depth} turn={self.turn + 1}"
            try:
                reply = self.runner.complete(
                    llm, [{"role": "user", "content": str(prompt)}], name=name, sub=True
                )
            except (BudgetReached, RunCancelled):  # the run stops (_guarded)
                raise
            except Exception as e:  # noqa: BLE001 - the official text
                return f"Error: LM query failed at max depth - {e}"
            key = call_key("rlm_query", str(prompt))
            self.runner.record(
                SubCall(next_depth, self.turn + 1, "rlm_query", _name(llm), len(prompt), reply, key)
            )
            return reply
        return self._child(str(prompt), model)

    def _child(self, prompt: str, model: str | None) -> str:
        r = self.runner
        named = {getattr(r.llm, "model_name", None): r.llm}
        child_model = named.get(model, self.model) if model is not None else self.model
        try:
            child = Session(r, prompt, None, depth=self.depth + 1, model=child_model)
            try:
                reply = child.run()
            finally:
                child.close()
        except (BudgetReached, RunCancelled):  # the run stops (_guarded)
            raise
        except Exception as e:  # noqa: BLE001 - the official text
            return f"Error: Child RLM completion failed - {e}"
        r.record(
            SubCall(
                self.depth + 1,
                self.turn + 1,
                "rlm_query",
                _name(child_model),
                len(prompt),
                reply,
                call_key("rlm_query", prompt),
            )
        )
        return reply

    def rlm_query_batched(self, prompts: list[str], model: str | None = None) -> list[str]:
        """Children over ``prompts``, at most ``max_concurrent_subcalls`` at once (without
        recursion: ``llm_query_batched``)."""
        s = self.runner.settings
        if s.max_depth <= 1:
            return self.llm_query_batched(prompts, model)
        return self.runner.map(
            lambda q: self.rlm_query(str(q), model), list(prompts), s.max_concurrent_subcalls
        )

    # -- the loop -------------------------------------------------------------------------------

    def step(self) -> dict[str, Any]:
        """One turn: the model's reply, each ```repl``` block run in order, the final answer
        checked; returns the turn's facts (code, outputs, the answer when there is one)."""
        s = self.runner.settings
        i = self.turn
        self._turn_calls = 0
        if self.depth == 0:
            self.runner.scope = f"turn {i + 1}"
        prompt = turn_prompt(s.protocol, i, self.root_prompt, s.max_iterations)
        if s.protocol == "final":
            request = [*self.messages, prompt]
        else:
            self.messages.append(prompt)
            request = self.messages
        first_sub = len(self.runner.sub_calls)
        reply = self.runner.complete(
            self.model, request, name=f"rlm turn depth={self.depth} turn={i + 1}"
        )
        blocks: list[BlockResult] = []
        final: str | None = None
        for code in code_blocks(reply):
            block, block_final = self._execute(code)
            blocks.append(block)
            if final is None:
                final = block_final
            if self.runner.stopped is not None:
                raise self.runner.stopped
        if s.protocol == "final":
            final = self._paper_final(reply)
        self.turn += 1
        self.final = final
        if final is None:
            self.messages.extend(feedback(s.protocol, reply, blocks))
        return {
            "depth": self.depth,
            "turn": i + 1,
            "reply": reply,
            "code": [b.code for b in blocks],
            "stdout": [b.stdout for b in blocks],
            "stderr": [b.stderr for b in blocks],
            "sub_calls": [c.to_dict() for c in self.runner.sub_calls[first_sub:]],
            "final": final,
        }

    def _execute(self, code: str) -> tuple[BlockResult, str | None]:
        syntax = scaffold.syntax_error(code)
        if syntax is not None:  # exec would raise before running anything
            report = json.loads(self.repl.value(scaffold.REPORT) or "{}")
            return BlockResult(code, "", syntax, tuple(report.get("variables", ()))), None
        try:
            result = self.repl.execute(scaffold.cell(code))
        except HostStop as stop:  # the turn ended at a budget stop or a cancellation
            raise self.runner.stopped or stop from None
        report = json.loads(self.repl.value(scaffold.REPORT) or "{}")
        stderr = result.stderr + (report.get("error") or "")
        if result.violation is not None and not stderr:
            stderr = f"\n{result.violation}"
        block = BlockResult(code, result.stdout, stderr, tuple(report.get("variables", ())))
        return block, report.get("final")

    def _paper_final(self, reply: str) -> str | None:
        marker = final_marker(reply)
        if marker is None:
            return None
        kind, content = marker
        if kind == "FINAL":
            return content
        block, _ = self._execute(f"print(FINAL_VAR({content!r}))")
        return block.stdout.strip() or block.stderr.strip() or ""

    def replay(self, turns: Sequence[dict[str, Any]]) -> None:
        """Bring a fresh session to where ``turns`` (finished turns' facts, as :meth:`step`
        returned them) left it, without a model call: each turn's prompt and recorded reply join
        the history, its code runs again with every sub-call of this RLM answered from the record
        (matched by kind and prompt; a call the record lacks is made), and its REPL output is
        fed back as then."""
        s = self.runner.settings
        for facts in turns:
            if self.depth == 0:
                self.runner.scope = f"turn {self.turn + 1}"
            prompt = turn_prompt(s.protocol, self.turn, self.root_prompt, s.max_iterations)
            if s.protocol != "final":
                self.messages.append(prompt)
            replies: dict[str, list[str]] = {}
            for call in facts.get("sub_calls") or []:
                if call.get("depth") == self.depth + 1 and call.get("key"):
                    replies.setdefault(call["key"], []).append(call["reply"])
            self._replay, self._turn_calls = replies, 0
            try:
                blocks = [self._execute(code)[0] for code in facts.get("code") or []]
            finally:
                self._replay = None
            self.turn += 1
            self.messages.extend(feedback(s.protocol, facts["reply"], blocks))

    def default_answer(self) -> str:
        """The answer asked for when the turns run out (``RLM._default_answer``)."""
        request = [*self.messages, {"role": "assistant", "content": p.DEFAULT_ANSWER_PROMPT}]
        if self.depth == 0:
            self.runner.scope = "default answer"
        return self.runner.complete(
            self.model, request, name=f"rlm default_answer depth={self.depth}"
        )

    def run(self) -> str:
        """Turns until an answer or ``max_iterations``, then the default answer."""
        while self.turn < self.runner.settings.max_iterations:
            self.step()
            if self.final is not None:
                return self.final
        return self.default_answer()

    def close(self) -> None:
        """Free the REPL."""
        self.repl.close()


def _name(llm: BaseChatModel) -> str:
    return str(
        getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__
    )
