"""MemAgent: read the whole corpus in order, 5,000 tokens at a time, keeping a bounded memory.

Each step sends problem + memory + chunk with the official update template; the reply
*replaces* the memory (text before a closing ``</think>`` stripped, then cut to the
budget by :func:`memory.bound_memory`). One final call sees problem + memory only. The
corpus is never truncated: calls per question = ceil(T / chunk_tokens) + 1.

Several questions over one corpus advance together: each chunk fans out one ``Send``
task per question, so their calls go out as one concurrent batch, and LangGraph saves
each finished task's writes, so a crash repeats no completed call on resume.
Templates: BytedTsinghua-SIA/MemAgent ``taskutils/memory_eval/utils/recurrent.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from graphs.context import StrategyContext
from graphs.llm import add_usage, complete_with_usage, tokenizer_for
from graphs.memagent.config import MemAgentConfig
from graphs.memagent.prompts import DEFAULT_FINAL_INSTRUCTION, FINAL_TEMPLATE, MEMORY_TEMPLATE, PROMPTS_VERSION
from graphs.prompts import format_documents
from graphs.registry import STRATEGIES, BatchRun
from memory import NO_MEMORY, MemoryTrace, bound_memory
from retrieval.contract import Question
from retrieval.tokenizers import Tokenizer, split_ids


@dataclass(frozen=True)
class MemAgentContext(StrategyContext):
    """The run context plus the corpus stream cut into chunks and the memory trace."""

    chunks: tuple[str, ...] = ()
    chunk_sizes: tuple[int, ...] = ()
    trace: MemoryTrace | None = None
    thread: str = ""


def _merge(a: dict | None, b: dict | None) -> dict:
    return {**(a or {}), **(b or {})}


def _sum_counts(a: dict | None, b: dict | None) -> dict:
    a, b = a or {}, b or {}
    return {k: a.get(k, 0) + b.get(k, 0) for k in {*a, *b}}


class MemAgentState(TypedDict, total=False):
    """Checkpointed state: small and fixed-size per question (snapshots live in the trace)."""

    questions: list[dict[str, Any]]
    n_chunks: int
    chunk_index: int
    memories: Annotated[dict[str, str], _merge]
    finals: Annotated[dict[str, str], _merge]
    cuts: Annotated[dict[str, int], _sum_counts]
    usage: Annotated[dict[str, dict], add_usage]


def final_instruction(instruction: str | None) -> str:
    """The clause ending the final prompt's first paragraph."""
    return DEFAULT_FINAL_INSTRUCTION if not instruction else ". " + instruction


def extract_answer(text: str) -> str | None:
    """MemAgent's ``extract_answer``: text after the last "the answer is", stripped of ``*``, spaces and dots."""
    text = text.replace("*", "")
    if "the answer is" not in text:
        return None
    return text.rsplit("the answer is", 1)[-1].strip().strip(".").strip()


def split_stream(text: str, size: int, encode, decode) -> list[tuple[str, int]]:
    """The token stream of ``text`` in windows of ``size`` tokens, as ``(text, n_tokens)``
    (cut at character boundaries; see :func:`retrieval.tokenizers.split_ids`)."""
    return split_ids(text, size, Tokenizer(id="given", encode_fn=encode, decode_fn=decode))


def prepare_context(ctx: StrategyContext, *, trace: MemoryTrace, thread: str) -> MemAgentContext:
    """Cut the whole corpus (documents in order, titled) into ``chunk_tokens`` windows of the model's tokens.

    The tokenizer is the model's (:func:`graphs.llm.tokenizer_for`: its own, a local HF
    tokenizer, the server's tokenize endpoint, tiktoken's for OpenAI models, cl100k last),
    as the official loop cuts with the served model's HF tokenizer.
    """
    pieces = split_ids(format_documents(ctx.corpus.documents), ctx.config.chunk_tokens, tokenizer_for(ctx.llm))
    return MemAgentContext(
        llm=ctx.llm,
        config=ctx.config,
        corpus=ctx.corpus,
        index=ctx.index,
        chunks=tuple(p for p, _ in pieces),
        chunk_sizes=tuple(n for _, n in pieces),
        trace=trace,
        thread=thread,
    )


def initial_state(questions: list[Question], ctx: MemAgentContext) -> MemAgentState:
    """Every question starts with "No previous memory" at chunk 0."""
    return {
        "questions": [
            {
                "problem": q.render(),
                "instruction": q.instruction if ctx.config.final_instruction == "benchmark" else None,
                "max_new_tokens": q.answer_budget(ctx.config.max_new_tokens),
                "temperature": q.answer_temperature(ctx.config.temperature),
            }
            for q in questions
        ],
        "n_chunks": len(ctx.chunks),
        "chunk_index": 0,
        "memories": {str(i): NO_MEMORY for i in range(len(questions))},
    }


def fan_out(state: MemAgentState) -> list[Send]:
    """One memory update per question for the next chunk, or one final answer per question."""
    k = state["chunk_index"]
    node = "update_memory" if k < state["n_chunks"] else "final_answer"
    return [
        Send(node, {"qi": str(i), "question": q, "memory": state["memories"][str(i)], "chunk": k})
        for i, q in enumerate(state["questions"])
    ]


def update_memory(task: dict[str, Any], runtime: Runtime[MemAgentContext]) -> dict:
    """Problem + memory + chunk -> the new memory, which replaces the old one."""
    ctx, qi, k = runtime.context, task["qi"], task["chunk"]
    cfg: MemAgentConfig = ctx.config
    prompt = MEMORY_TEMPLATE.format(prompt=task["question"]["problem"], memory=task["memory"], chunk=ctx.chunks[k])
    text, usage = complete_with_usage(ctx.llm, prompt, max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p)
    tok = tokenizer_for(ctx.llm)
    # cut only beyond the budget in the model's own tokens (a server may ignore max_tokens)
    update = bound_memory(text, cfg.max_new_tokens, tok.encode, tok.decode)
    if ctx.trace is not None:
        ctx.trace.record(ctx.thread, int(qi), k, update.text, update.tokens, update.cut)
    return {"memories": {qi: update.text}, "usage": {qi: usage}, "cuts": {qi: int(update.cut)}}


def advance(state: MemAgentState) -> dict:
    """All questions have read chunk k: move to k + 1."""
    return {"chunk_index": state["chunk_index"] + 1}


def final_answer(task: dict[str, Any], runtime: Runtime[MemAgentContext]) -> dict:
    """Problem + final memory -> the answer, in the benchmark's format when it gives one."""
    ctx, qi = runtime.context, task["qi"]
    cfg: MemAgentConfig = ctx.config
    prompt = FINAL_TEMPLATE.format(
        instruction=final_instruction(task["question"]["instruction"]), prompt=task["question"]["problem"], memory=task["memory"]
    )
    budget = task["question"].get("max_new_tokens", cfg.max_new_tokens)  # the benchmark's answer budget
    temperature = task["question"].get("temperature", cfg.temperature)
    text, usage = complete_with_usage(ctx.llm, prompt, max_tokens=budget, temperature=temperature, top_p=cfg.top_p)
    return {"finals": {qi: text}, "usage": {qi: usage}}


def collect(state: MemAgentState, i: int) -> dict[str, Any]:
    """Answer fields of question ``i`` from the final state."""
    raw = state.get("finals", {}).get(str(i), "")
    instruction = state["questions"][i]["instruction"]
    extracted = extract_answer(raw) if not instruction else None
    return {
        "raw": raw,
        "answer": extracted if extracted is not None else raw.strip(),
        "usage": state.get("usage", {}).get(str(i), {}),
        "memory_cuts": state.get("cuts", {}).get(str(i), 0),
    }


@STRATEGIES.register(
    "memagent",
    config_cls=MemAgentConfig,
    prompts_version=PROMPTS_VERSION,
    run_mode=BatchRun(prepare_context=prepare_context, initial_state=initial_state, collect=collect),
    presets={"paper": MemAgentConfig(final_instruction="memagent")},
    description="Stream the whole corpus through a 1,024-token overwritten memory, 5,000 tokens per step.",
)
def build_graph(config: MemAgentConfig | None = None, checkpointer: Any = None):
    """START -> (update_memory per question -> advance)* -> final_answer per question -> END."""
    graph = StateGraph(MemAgentState, context_schema=MemAgentContext)
    graph.add_node("update_memory", update_memory)
    graph.add_node("advance", advance)
    graph.add_node("final_answer", final_answer)
    graph.add_conditional_edges(START, fan_out, ["update_memory", "final_answer"])
    graph.add_edge("update_memory", "advance")
    graph.add_conditional_edges("advance", fan_out, ["update_memory", "final_answer"])
    graph.add_edge("final_answer", END)
    return graph.compile(checkpointer=checkpointer, name="memagent")
