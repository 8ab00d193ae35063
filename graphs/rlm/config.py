"""Recursive Language Models' settings: alexzhang13/rlm @ 72d6940's defaults (``RLM.__init__``,
``LMHandler``), the paper's protocol as the ``paper`` preset, and the REPL the code runs in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import ConfigError, RetrievalSettings, option


@dataclass(frozen=True, kw_only=True)
class RlmConfig(RetrievalSettings):
    """The root model sees the question and the context's metadata; the context lives in a Python
    REPL as ``context`` and the model's ```repl``` code reads it, with sub-calls.

    Attributes:
        repl: ``"sandbox"`` (the jailed worker, the default) or ``"unsafe_inprocess"`` (``exec``
            in this process: the model's code can do anything this process can).
        protocol: ``"answer_dict"`` (72d6940: ``answer["ready"] = True``) or ``"final"`` (the
            paper's FINAL(...) / FINAL_VAR(...), a30805b; its prompts).
        context_form: ``"documents"``: ``context`` is the list of the corpus's documents (title
            line, then text); ``"text"``: one string of them all.
        max_iterations: Root turns at most; then one more call asks for the answer.
        max_depth: 1: ``rlm_query`` is a plain sub-call; 2: it opens a child RLM whose own
            ``rlm_query`` is a plain call (official ``max_depth``).
        max_concurrent_subcalls: Children of one ``rlm_query_batched`` at once.
        batch_concurrency: Requests of one ``llm_query_batched`` at once.
        max_sub_calls_per_turn: Sub-calls one turn's code may make (each child's calls counted in
            its own turns); past it a sub-call returns an error text. Ours: the plan's bound.
        orchestrator: Append the official ``ORCHESTRATOR_ADDENDUM`` to the system prompt.
        sub_model: The model name of ``llm_query`` at depth 1 on the root model's server (the
            paper's GPT-5 / GPT-5-mini split); ``None``: the root model.
        sub_calls: ``False``: ``llm_query`` / ``rlm_query`` return an error text (with
            ``tools="search"``: the paper's CodeAct + BM25 baseline).
        tools: ``"search"``: ``search(query, k)`` in the REPL over this config's retriever.
        max_new_tokens / sub_max_new_tokens: Reply budget of a root turn / of a sub-call;
            ``None`` (the official client's): none sent, the plan bounds a reply by the window.
        temperature: Sent with every request when set; ``None`` (the official's): not sent.
        cpu_seconds, memory_mb, output_chars: The sandbox's limits per turn.
    """

    repl: Literal["sandbox", "unsafe_inprocess"] = option(
        "sandbox", source="ours: the jailed worker unless asked (issue #48)"
    )
    protocol: Literal["answer_dict", "final"] = option(
        "answer_dict", source="rlm 72d6940 local_repl.py _AnswerDict"
    )
    context_form: Literal["documents", "text"] = option(
        "documents", source="rlm QueryMetadata: a list of strings as list[str]"
    )
    max_iterations: int = option(30, min=1, source="rlm 72d6940 RLM.__init__ max_iterations=30")
    max_depth: int = option(1, min=1, max=2, source="rlm 72d6940 RLM.__init__ max_depth=1")
    max_concurrent_subcalls: int = option(
        4, min=1, source="rlm 72d6940 RLM.__init__ max_concurrent_subcalls=4"
    )
    batch_concurrency: int = option(
        16, min=1, source="rlm 72d6940 LMHandler batch_max_concurrent=16"
    )
    max_sub_calls_per_turn: int = option(
        100, min=0, source="ours: the official code sets none; the plan's bound"
    )
    orchestrator: bool = option(True, source="rlm 72d6940 RLM.__init__ orchestrator=True")
    sub_model: str | None = option(
        None, source="rlm other_backends (paper: GPT-5 root, GPT-5-mini sub-calls)"
    )
    sub_calls: bool = option(True, source="paper section 4: CodeAct + BM25 has none")
    tools: Literal["none", "search"] = option("none", source="paper section 4: CodeAct + BM25")
    top_k: int = option(5, min=1, source="ours: search(query, k) default k")
    max_new_tokens: int | None = option(
        None,
        min=1,
        source="rlm 72d6940 OpenAIClient.completion: no answer budget sent (the server's default)",
    )
    sub_max_new_tokens: int | None = option(
        None,
        min=1,
        source="rlm 72d6940 OpenAIClient.completion: no answer budget sent (the server's default)",
    )
    temperature: float | None = option(
        None, min=0.0, source="rlm 72d6940 OpenAIClient.completion: no temperature sent"
    )
    cpu_seconds: float = option(60.0, min=0.1, source="graphs/sandbox/protocol.py SandboxLimits")
    memory_mb: int = option(4096, min=64, source="graphs/sandbox/protocol.py SandboxLimits")
    output_chars: int = option(
        1_000_000, min=1000, source="graphs/sandbox/protocol.py SandboxLimits"
    )

    def check(self) -> None:
        """The paper's protocol has no recursion (a30805b supports depth 1 only)."""
        super().check()
        if self.protocol == "final" and self.max_depth != 1:
            raise ConfigError("protocol='final' (the paper's code) has no rlm_query: max_depth=1")
