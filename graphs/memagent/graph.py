"""MemAgent: read the whole corpus in order, 5,000 tokens at a time, keeping a bounded memory.

Each step sends problem + memory + chunk with the official update template; the reply
*replaces* the memory (text before a closing ``</think>`` stripped, then cut to the
budget by :func:`longctx.memory.bound_memory`). One final call sees problem + memory only. The
corpus is never truncated: calls per question = ceil(T / chunk_tokens) + 1.

Several questions over one corpus advance together: each chunk fans out one ``Send``
task per question, so their calls go out as one concurrent batch, and LangGraph saves
each finished task's writes, so a crash repeats no completed call on resume.
Templates: BytedTsinghua-SIA/MemAgent ``taskutils/memory_eval/utils/recurrent.py``. Beside this
wiring: the state and ``Send`` payloads (``state.py``), the stream and its windows (``stream.py``),
what the official evaluation extracts of a reply (``answer_extraction.py``), the cost model
(``cost_model.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from longctx.graphs.memagent.answer_extraction import official_prediction
from longctx.graphs.memagent.ceiling import MEMAGENT_CEILING
from longctx.graphs.memagent.config import MemAgentConfig
from longctx.graphs.memagent.cost_model import memagent_costs
from longctx.graphs.memagent.presentation import PRESENTATION
from longctx.graphs.memagent.prompts import (
    FINAL_TEMPLATE,
    MEMORY_TEMPLATE,
    PROMPTS_VERSION,
    final_instruction,
)
from longctx.graphs.memagent.state import MemAgentContext, MemAgentState, MemoryTask
from longctx.graphs.memagent.stream import cut_windows, stream_text
from longctx.graphs.plugin.api import (
    NO_MEMORY,
    STRATEGIES,
    BatchAnswer,
    BatchRun,
    BatchSettings,
    CompiledGraph,
    Continuation,
    MemoryTrace,
    StrategyContext,
    StrategyCosts,
    bound_memory,
    complete_with_usage,
    listening,
    report_progress,
    report_step,
    tokenizer_for,
    trace_steps,
)
from longctx.retrieval.contract import Question


def prepare_context(
    ctx: StrategyContext[MemAgentConfig],
    *,
    trace: MemoryTrace,
    thread: str,
    questions: Sequence[Question] = (),
    start_document: int = 0,
) -> MemAgentContext:
    """Cut the corpus stream (:func:`stream_text`) into ``chunk_tokens`` windows of the model's
    tokens.

    The tokenizer is the model's (:func:`longctx.graphs.calls.llm.tokenizer_for`: its own, a local
    HF tokenizer, the server's tokenize endpoint, tiktoken's for OpenAI models, cl100k last),
    as the official loop cuts with the served model's HF tokenizer: ``encode`` the whole
    stream, windows of ``chunk_tokens`` ids, each decoded (moved back to a character
    boundary where a window would split one, unless ``window_cut="token"``: :func:`cut_windows`).
    ``start_document``: stream only the documents from there on (a run continued from an earlier
    corpus's final memories).
    """
    text, layout = stream_text(ctx.corpus, questions, ctx.config.stream, start_document)
    pieces = cut_windows(text, ctx.config, tokenizer_for(ctx.llm))
    return MemAgentContext(
        llm=ctx.llm,
        config=ctx.config,
        corpus=ctx.corpus,
        index=ctx.index,
        chunks=tuple(p for p, _ in pieces),
        chunk_sizes=tuple(n for _, n in pieces),
        trace=trace,
        thread=thread,
        layout=layout,
    )


def initial_state(questions: list[Question], ctx: MemAgentContext) -> MemAgentState:
    """Every question starts with "No previous memory" at chunk 0.

    The final call follows the benchmark (its instruction, answer budget, sampling and stop
    sequences) unless ``final_instruction="memagent"`` (preset ``paper``), which runs
    MemAgent's own evaluation: its instruction, ``max_new_tokens``, ``temperature`` and
    ``top_p``. The benchmark's sampling is its protocol's temperature alone (a protocol carries
    no top-p; LongBench v2's ``pred.py`` sends none), so MemAgent's top-p is not mixed into it
    (``top_p: None``, not sent).
    """
    cfg: MemAgentConfig = ctx.config
    benchmark = cfg.final_instruction == "benchmark"
    return {
        "questions": [
            {
                "problem": q.render().strip(),  # official: item["input"].strip()
                "instruction": q.instruction if benchmark else None,
                "max_new_tokens": q.answer_budget(cfg.max_new_tokens)
                if benchmark
                else cfg.max_new_tokens,
                "temperature": q.answer_temperature(cfg.temperature)
                if benchmark
                else cfg.temperature,
                "top_p": None if benchmark and benchmark_sampling(q) else cfg.top_p,
                "stop": q.answer_stop() if benchmark else None,
            }
            for q in questions
        ],
        "n_chunks": len(ctx.chunks),
        "layout": ctx.layout,
        "chunk_index": 0,
        "memories": {str(i): NO_MEMORY for i in range(len(questions))},
    }


def benchmark_sampling(question: Question) -> bool:
    """Whether the question's protocol sets the final call's sampling (its temperature)."""
    return question.protocol is not None and question.protocol.temperature is not None


def fan_out(state: MemAgentState) -> list[Send]:
    """One memory update per question for the next chunk, or one final answer per question."""
    k = state["chunk_index"]
    node = "update_memory" if k < state["n_chunks"] else "final_answer"
    return [
        Send(node, MemoryTask(qi=str(i), question=q, memory=state["memories"][str(i)], chunk=k))
        for i, q in enumerate(state["questions"])
    ]


def update_memory(task: MemoryTask, runtime: Runtime[MemAgentContext]) -> dict[str, Any]:
    """Problem + memory + chunk -> the new memory, which replaces the old one."""
    ctx, qi, k = runtime.context, task["qi"], task["chunk"]
    cfg: MemAgentConfig = ctx.config
    prompt = MEMORY_TEMPLATE.format(
        prompt=task["question"]["problem"], memory=task["memory"], chunk=ctx.chunks[k]
    )
    text, usage = complete_with_usage(
        ctx.llm, prompt, max_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p
    )
    tok = tokenizer_for(ctx.llm)
    # cut only beyond the budget in the model's own tokens (a server may ignore max_tokens)
    update = bound_memory(text, cfg.max_new_tokens, tok.encode, tok.decode)
    if ctx.trace is not None:
        ctx.trace.record(ctx.thread, int(qi), k, update.text, update.tokens, update.cut)
    if listening():  # the step the answer will carry for this chunk, as soon as it is done
        snapshot = {
            "chunk": k,
            "memory": update.text,
            "tokens": update.tokens,
            "cut": bool(update.cut),
        }
        report_step(trace_steps([snapshot], cfg.trace_chars, "update_memory")[0], question=int(qi))
    return {"memories": {qi: update.text}, "usage": {qi: usage}, "cuts": {qi: int(update.cut)}}


def advance(state: MemAgentState) -> dict[str, Any]:
    """All questions have read chunk k: move to k + 1."""
    report_progress("read", done=state["chunk_index"] + 1, total=state["n_chunks"])
    return {"chunk_index": state["chunk_index"] + 1}


def final_answer(task: MemoryTask, runtime: Runtime[MemAgentContext]) -> dict[str, Any]:
    """Problem + final memory -> the answer, in the benchmark's format when it gives one."""
    ctx, qi = runtime.context, task["qi"]
    cfg: MemAgentConfig = ctx.config
    prompt = FINAL_TEMPLATE.format(
        instruction=final_instruction(task["question"]["instruction"]),
        prompt=task["question"]["problem"],
        memory=task["memory"],
    )
    # the benchmark's answer budget
    budget = task["question"].get("max_new_tokens", cfg.max_new_tokens)
    temperature = task["question"].get("temperature", cfg.temperature)
    # None: the benchmark's sampling, which sends no top-p
    top_p = task["question"].get("top_p", cfg.top_p)
    stop = task["question"].get("stop")
    sampling: dict[str, Any] = {"top_p": top_p} if top_p is not None else {}
    text, usage = complete_with_usage(
        ctx.llm, prompt, max_tokens=budget, temperature=temperature, stop=stop, **sampling
    )
    return {"finals": {qi: text}, "usage": {qi: usage}}


def collect(state: MemAgentState, i: int) -> BatchAnswer:
    """Answer fields of question ``i`` from the final state.

    When the final call asked for MemAgent's own format ("Therefore, the answer is ...":
    preset ``paper``, or a question without a benchmark instruction), the scored text
    (``raw``) is what MemAgent's evaluation extracts (:func:`official_prediction`) and the
    whole reply is kept in the final step's ``reply``; otherwise ``raw`` is the reply, which the
    benchmark's own scorer reads.
    """
    reply = state.get("finals", {}).get(str(i), "")
    own_format = not state["questions"][i]["instruction"]
    scored = official_prediction(reply) if own_format else reply
    facts: dict[str, Any] = {"stream": state.get("layout")} | (
        {"reply": reply} if scored != reply else {}
    )
    if state.get("continued_from"):
        facts["continued_from_documents"] = state["continued_from"]
    facts["memory_cuts"] = state.get("cuts", {}).get(str(i), 0)
    return BatchAnswer(
        raw=scored,
        answer=(scored if own_format else "") or reply.strip(),
        final_step=facts,
        usage=state.get("usage", {}).get(str(i), {}),
    )


def batch_settings(cfg: MemAgentConfig) -> BatchSettings:
    """What the batch runner reads of MemAgent's config."""
    return BatchSettings(
        resume=cfg.resume,
        concurrency=cfg.concurrency,
        answer_budget=cfg.max_new_tokens,
        trace_chars=cfg.trace_chars,
        continue_from_prefix=cfg.continue_from_prefix,
    )


def chunk_sizes(ctx: MemAgentContext) -> tuple[int, ...]:
    """Tokens of each chunk the run reads (one step a chunk)."""
    return ctx.chunk_sizes


def carried_memories(final: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a run over a grown corpus takes from the finished earlier run: its final memories."""
    return {"memories": dict(final["memories"])} if final.get("memories") else None


#: How the batch runner runs MemAgent: one step a chunk, closed by ``advance``; the progress key and
#: the runtime fields are part of every checkpoint and run key already written, so they never
#: change.
MEMAGENT_RUN = BatchRun(
    prepare_context=prepare_context,
    initial_state=initial_state,
    collect=collect,
    settings=batch_settings,
    step_sizes=chunk_sizes,
    advance_node="advance",
    progress_key="chunk_index",
    runtime_fields=("concurrency", "resume", "trace_chars"),
    trace_step="update_memory",
    continuation=Continuation(
        option="continue_from_prefix", carry=carried_memories, documents_key="continued_from"
    ),
)


@STRATEGIES.register(
    "memagent",
    costs=StrategyCosts(memagent_costs, always_bounded=True),
    ceiling=MEMAGENT_CEILING,
    config_cls=MemAgentConfig,
    prompts_version=PROMPTS_VERSION,
    run_mode=MEMAGENT_RUN,
    presets={"paper": MemAgentConfig(final_instruction="memagent", window_cut="token")},
    presentation=PRESENTATION,
    description=(
        "Stream the whole corpus through a 1,024-token overwritten memory, 5,000 tokens per step."
    ),
)
def build_graph(config: MemAgentConfig | None = None, checkpointer: Any = None) -> CompiledGraph:
    """START -> (update_memory per question -> advance)* -> final_answer per question -> END."""
    graph = StateGraph(MemAgentState, context_schema=MemAgentContext)
    # LangGraph types node inputs as state schemas; Send payloads are plain dicts: both nodes
    # are given untyped (cast), their own signatures checked where they are defined.
    graph.add_node("update_memory", cast(Any, update_memory))
    graph.add_node("advance", advance)
    graph.add_node("final_answer", cast(Any, final_answer))
    graph.add_conditional_edges(START, fan_out, ["update_memory", "final_answer"])
    graph.add_edge("update_memory", "advance")
    graph.add_conditional_edges("advance", fan_out, ["update_memory", "final_answer"])
    graph.add_edge("final_answer", END)
    return graph.compile(checkpointer=checkpointer, name="memagent")
