"""RAPTOR (Sarthi et al., ICLR 2024): recursive abstractive processing for tree-organized retrieval.

START -> build_tree -> retrieve -> build_prompt -> generate -> END

``build_tree`` loads the corpus's tree from the cache or builds it (index-time work: its summary
calls count in ``Usage.index_*`` of the answer that built it); ``retrieve`` ranks the tree's nodes
(collapsed tree by default, tree traversal as an option); the answer call is our RAG prompt over
the retrieved nodes, or with ``qa_prompt="paper"`` the official ``GPT3TurboQAModel`` request.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    MAP_ON_RAY,
    RAG_TEMPLATE,
    SEAM_TOKENS,
    STRATEGIES,
    CompiledGraph,
    LoadedArtifacts,
    Need,
    PromptState,
    Source,
    StrategyContext,
    StrategyCosts,
    budget_kwargs,
    cache_root,
    complete,
    dimension_error,
    embedder_needs,
    fill,
    generate,
    index_time,
    linear_graph,
    open_store,
    query_vector,
    report_index_seconds,
    root_of,
    source_of,
    text_of,
)
from longctx.graphs.raptor import prompts as P
from longctx.graphs.raptor.ceiling import RAPTOR_CEILING
from longctx.graphs.raptor.config import RaptorConfig
from longctx.graphs.raptor.cost_model import raptor_costs, summary_prompt_tokens
from longctx.graphs.raptor.presentation import PRESENTATION
from longctx.graphs.raptor.ray_summaries import summaries_on_ray
from longctx.graphs.raptor.retrieve import collapsed, traversal
from longctx.graphs.raptor.store import (
    NODE_NAMESPACE,
    TREE_STORE,
    official_openai,
    summary_key,
    summary_log,
    summary_log_path,
    tree_key,
)
from longctx.graphs.raptor.tree import PAID_FACTS, Summarize, Tree, build_tree, leaf_count
from longctx.retrieval.contract import Corpus, Evidence, Step

#: Trees loaded or built in this process, by key (the last few: a 10M-token tree is ~100K nodes).
_LOADED: LoadedArtifacts[Tree] = LoadedArtifacts()
_TREES = _LOADED.entries


class RaptorState(PromptState, total=False):
    """What evolves during one RAPTOR answer (the tree itself stays in the process's cache, by
    ``tree``)."""

    tree: str
    nodes: list[dict[str, Any]]


def embedder_for(cfg: RaptorConfig) -> Any:
    """The configured embedder, loaded once per process."""
    return _LOADED.embedder(cfg)


def summarizer(ctx: StrategyContext[RaptorConfig]) -> Summarize:
    """One summary call (``GPT3TurboSummarizationModel.summarize``): its system and user turns,
    ``max_tokens`` = ``summary_tokens``; temperature sent only when configured (the official call
    sends none)."""
    cfg, llm = ctx.config, ctx.llm
    extra: dict[str, Any] = {**budget_kwargs(llm, cfg.summary_tokens)}
    if cfg.summary_temperature is not None:
        extra["temperature"] = cfg.summary_temperature

    def summarize(context: str) -> str:
        turns = [
            SystemMessage(content=P.SUMMARY_SYSTEM),
            HumanMessage(content=P.SUMMARY_TEMPLATE.format(context=context)),
        ]
        return text_of(llm.invoke(turns, **extra))

    return summarize


def tree_for(ctx: StrategyContext[RaptorConfig]) -> tuple[str, Tree, Source]:
    """The corpus's tree (key, tree, and where it came from: ``memory``, ``disk`` or ``built``)."""
    cfg = ctx.config
    key = tree_key(ctx.corpus, cfg, ctx.llm)
    root = cache_root(ctx, cfg.cache)

    def build(folder: Path | None) -> Tree:
        emb = embedder_for(cfg)
        store = open_store(root, cfg.embedder, emb, NODE_NAMESPACE, **official_openai(cfg))
        log = summary_log(root, summary_key(cfg, ctx.llm))
        on_ray = summaries_on_ray(ctx, summarizer) if cfg.map_executor == "ray" else None
        with index_time():
            return build_tree(ctx.corpus, cfg, summarizer(ctx), store, log, on_ray)

    tree, source = _LOADED.obtain(key, root, TREE_STORE, build, hold=lambda tree: tree)
    return key, tree, source


def build_tree_node(
    state: RaptorState, runtime: Runtime[StrategyContext[RaptorConfig]]
) -> dict[str, Any]:
    """Load or build the tree (index-time work, paid by the first answer over the corpus: its
    wall seconds, leaves to the tree on disk, are that answer's ``Usage.index_seconds``)."""
    started = time.perf_counter()
    key, tree, source = tree_for(runtime.context)
    if source == "built":
        report_index_seconds(time.perf_counter() - started)
    nodes_per_layer = [len(tree.layer(i)) for i in range(tree.num_layers + 1)]
    facts = {**tree.facts, **({} if source == "built" else dict.fromkeys(PAID_FACTS, 0))}
    return {
        "tree": key,
        "steps": [
            Step(
                "build_tree",
                source=source,
                key=key[:16],
                num_layers=tree.num_layers,
                nodes_per_layer=nodes_per_layer,
                stopped=tree.stopped,
                **facts,
            )
        ],
    }


def retrieve(state: RaptorState, runtime: Runtime[StrategyContext[RaptorConfig]]) -> dict[str, Any]:
    """The nodes for the question: collapsed tree (``top_k`` within ``context_tokens``) or tree
    traversal."""
    cfg = runtime.context.config
    tree = _LOADED[state["tree"]]
    emb = embedder_for(cfg)
    query = query_vector(emb, state["question"].render(), **official_openai(cfg))
    if tree.embeddings.size and query.shape != tree.embeddings.shape[1:]:
        raise dimension_error(source_of(emb), query.size, tree.embeddings.shape[1])
    picked = (
        collapsed(tree, query, cfg.top_k, cfg.context_tokens)
        if cfg.retrieval == "collapsed"
        else traversal(tree, query, cfg.traversal_top_k)
    )
    nodes = [
        {
            "index": n.index,
            "layer": n.layer,
            "cluster": n.cluster,
            "distance": round(d, 6),
            "text": n.text,
        }
        for n, d in picked
    ]
    evidence = [
        Evidence(
            doc_id=doc, title=title, text=n.text, score=round(1 - d, 6), chunk_id=n.index, rank=rank
        )
        for rank, (n, d) in enumerate(picked)
        for doc, title in zip(n.docs, n.titles)
    ]
    step = Step(
        "retrieve",
        mode=cfg.retrieval,
        nodes=[{k: v for k, v in x.items() if k != "text"} for x in nodes],
    )
    return {"nodes": nodes, "evidence": evidence, "steps": [step]}


def build_prompt(
    state: RaptorState, runtime: Runtime[StrategyContext[RaptorConfig]]
) -> dict[str, Any]:
    """The context (``get_text`` of the nodes, in retrieval order) in our RAG prompt, or the
    official QA turn."""
    cfg = runtime.context.config
    context = P.node_context([n["text"] for n in state["nodes"]])
    if cfg.qa_prompt == "paper":
        prompt = P.QA_TEMPLATE.format(context=context, question=state["question"].render())
    else:
        prompt = fill(RAG_TEMPLATE, context.strip(), state["question"])
    return {
        "prompt": prompt,
        "official_prompt": False,
        "steps": [Step("build_prompt", qa_prompt=cfg.qa_prompt, nodes=len(state["nodes"]))],
    }


def answer(state: RaptorState, runtime: Runtime[StrategyContext[RaptorConfig]]) -> dict[str, Any]:
    """The answer call: the shared ``generate`` for our prompt; the official system turn and
    temperature 0 for ``paper``."""
    cfg = runtime.context.config
    if cfg.qa_prompt != "paper":
        return generate(state, cast(Runtime[StrategyContext[Any]], runtime))
    raw = complete(
        runtime.context.llm,
        state["prompt"],
        max_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        system=P.QA_SYSTEM,
    )
    return {
        "raw": raw,
        "answer": raw.strip(),
        "steps": [Step("generate", max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature)],
    }


def needs(cfg: RaptorConfig) -> tuple[Need, ...]:
    """What a run imports from extras: its embedder's packages, UMAP and scikit-learn for the
    clustering."""
    return (
        *embedder_needs(cfg.embedder),
        Need("umap", "raptor", "RAPTOR's clustering (UMAP)"),
        Need("sklearn", "raptor", "RAPTOR's clustering (Gaussian mixtures)"),
    )


def index_calls_left(
    cfg: RaptorConfig, corpus: Corpus, llm: Any, cache_dir: str | Path | None
) -> tuple[int, int] | None:
    """The summary calls an answer over ``corpus`` makes at least, and their prompt tokens: one (a
    layer holds at least one cluster) with the summary prompt's own tokens (the texts it reads not
    claimed: a node may be in no cluster), none when the summary log holds summaries already (they
    may be all the tree needs); ``None`` when its tree is held or on disk, or its leaves stop the
    tree at layer 0 (nothing to summarise)."""
    key, root = tree_key(corpus, cfg, llm), root_of(cache_dir, cfg.cache)
    if (
        _LOADED.held(key, root, TREE_STORE)
        or leaf_count(corpus, cfg.chunk_tokens) <= cfg.reduction_dimension + 1
    ):
        return None
    logged = summary_log_path(root, summary_key(cfg, llm)) if root is not None else None
    if logged is not None and logged.exists() and logged.stat().st_size > 0:
        return 0, 0
    return 1, max(0, summary_prompt_tokens(llm) - 2 * SEAM_TOKENS)


@STRATEGIES.register(
    "raptor",
    costs=StrategyCosts(raptor_costs, always_bounded=True),
    ceiling=RAPTOR_CEILING,
    config_cls=RaptorConfig,
    prompts_version=P.PROMPTS_VERSION,
    uses_index=False,
    presets={"paper": RaptorConfig(qa_prompt="paper")},
    presentation=PRESENTATION,
    ray_stage=MAP_ON_RAY,  # the summaries of each layer (map_executor="ray")
    needs=needs,
    index_calls=index_calls_left,
    description=(
        "RAPTOR: a tree of cluster summaries built once per corpus (UMAP + GMM), collapsed-tree "
        "retrieval, one answer call."
    ),
)
def build_graph(config: RaptorConfig | None = None) -> CompiledGraph:
    """START -> build_tree -> retrieve -> build_prompt -> generate -> END."""
    return linear_graph(
        "raptor",
        RaptorState,
        ("build_tree", build_tree_node),
        ("retrieve", retrieve),
        ("build_prompt", build_prompt),
        ("generate", answer),
    )
