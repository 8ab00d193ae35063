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

from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from graphs.llm import add_usage, complete_with_usage, prompt_codec
from graphs.prompts import format_documents
from graphs.registry import Strategy, register_strategy
from graphs.types import Question, StrategyContext
from memory import NO_MEMORY, MemoryTrace, bound_memory

PROMPTS_VERSION = 1

#: Verbatim (note the space after ``<problem>`` and the trailing newline).
MEMORY_TEMPLATE = """You are presented with a problem, a section of an article that may contain the answer to the problem, and a previous memory. Please read the provided section carefully and update the memory with the new information that helps to answer the problem. Be sure to retain all relevant details from the previous memory while adding any new, useful information.

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

<section>
{chunk}
</section>

Updated memory:
"""

#: Verbatim with ``{instruction}`` = DEFAULT_FINAL_INSTRUCTION; a benchmark's instruction replaces it.
FINAL_TEMPLATE = """You are presented with a problem and a previous memory. Please answer the problem based on the previous memory{instruction}

<problem> 
{prompt}
</problem>

<memory>
{memory}
</memory>

Your answer:
"""

DEFAULT_FINAL_INSTRUCTION = """ and format your response as follows "Therefore, the answer is (insert answer here)"."""


@dataclass(frozen=True, kw_only=True)
class MemAgentConfig:
    """MemAgent's paper defaults.

    Attributes:
        chunk_tokens: Tokens of corpus per step, in the serving model's tokenizer when it
            exposes one (as the official loop), else cl100k.
        max_new_tokens: Budget of every generated memory and of the final answer.
        temperature / top_p: The official evaluation's sampling.
        concurrency: Calls in flight at once (questions advanced together per chunk).
        resume: Checkpoint every step on disk and resume an interrupted run.
        trace_chars: Characters of each memory snapshot kept in ``Answer.steps`` (None = all).
    """

    chunk_tokens: int = field(default=5000, metadata={"source": "MemAgent RECURRENT_CHUNK_SIZE=5000"})
    max_new_tokens: int = field(default=1024, metadata={"source": "MemAgent RECURRENT_MAX_NEW=1024"})
    temperature: float = field(default=0.7, metadata={"source": "MemAgent memory_eval: temperature=0.7"})
    top_p: float = field(default=0.95, metadata={"source": "MemAgent memory_eval: top_p=0.95"})
    concurrency: int = field(default=8, metadata={"source": "official --n_proc 64; 8 suits one local server"})
    resume: bool = True
    trace_chars: int | None = 2000


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
    """The token stream of ``text`` in windows of ``size`` tokens, as ``(text, n_tokens)``."""
    ids = encode(text)
    return [(decode(ids[i : i + size]), len(ids[i : i + size])) for i in range(0, len(ids), size)]


def prepare_context(ctx: StrategyContext, *, trace: MemoryTrace, thread: str) -> MemAgentContext:
    """Cut the whole corpus (documents in order, titled) into ``chunk_tokens`` windows."""
    encode, decode = prompt_codec(ctx.llm)
    pieces = split_stream(format_documents(ctx.corpus.documents), ctx.config.chunk_tokens, encode, decode)
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
        "questions": [{"problem": q.render(), "instruction": q.instruction} for q in questions],
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
    encode, decode = prompt_codec(ctx.llm)
    update = bound_memory(text, cfg.max_new_tokens, encode, decode)
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
    text, usage = complete_with_usage(ctx.llm, prompt, max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p)
    return {"finals": {qi: text}, "usage": {qi: usage}}


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


register_strategy(
    Strategy(
        name="memagent",
        config_cls=MemAgentConfig,
        build_graph=build_graph,
        uses_index=False,
        description="Stream the whole corpus through a 1,024-token overwritten memory, 5,000 tokens per step.",
        batched=True,
    )
)
