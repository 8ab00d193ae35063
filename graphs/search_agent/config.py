"""The search agent's settings: ``SearchAgentConfig``, the shared retrieval settings (the search
backend) plus BrowseComp-Plus's agent settings, each default from texttron/BrowseComp-Plus @
97c637c ``search_agent/openai_client.py`` (its argparse defaults) and ``docs/openai.md`` (the
documented runs: search only, no ``--get-document``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import RetrievalSettings, option

#: The official template names (``--query-template``).
QueryTemplate = Literal[
    "QUERY_TEMPLATE", "QUERY_TEMPLATE_NO_GET_DOCUMENT", "QUERY_TEMPLATE_NO_GET_DOCUMENT_NO_CITATION"
]

OFFICIAL = "BrowseComp-Plus@97c637c search_agent/openai_client.py"


@dataclass(frozen=True, kw_only=True)
class SearchAgentConfig(RetrievalSettings):
    """BrowseComp-Plus's search agent over our retrievers.

    Attributes:
        k: Documents one ``search`` returns.
        snippet_max_tokens: A search result's snippet: the document's first tokens (0: whole).
        snippet_tokenizer: What snippets are counted with: ``"cl100k"`` (ours) or a Hugging Face
            tokenizer (``"Qwen/Qwen3-0.6B"``, the official one, when its files are at hand).
        get_document: Offer the ``get_document`` tool (the official ``--get-document``).
        query_template: The official user-turn template, by name.
        max_iterations: Model calls at most (the official ``--max-iterations``).
        max_tokens: Output tokens of the whole conversation (the official ``--max_tokens``, sent
            as each request's cap less what the earlier replies used).
        temperature: ``None``: not sent (the official default).
        tool_mode: ``"tools"`` (native tool calls), ``"json"`` (tools described in the text, for a
            model without them) or ``"auto"`` (native when the model has them).
        context_window: The model's window in tokens where it reports none (an OpenAI-compatible
            server's): a request whose prompt fills it is refused before it is sent, and each
            request's cap is cut to the room left; ``None``: the model's own (the embedded
            model's ``n_ctx``), else unchecked.
        top_k: Chunks one search reads before they are grouped into ``k`` documents (fewer than
            ``k``: at most ``top_k`` documents).
        chunk_unit, chunk_size: Our index's chunks (the official index holds whole documents).
    """

    k: int = option(5, min=1, source=f"{OFFICIAL} --k 5")
    snippet_max_tokens: int = option(512, min=0, source=f"{OFFICIAL} --snippet-max-tokens 512")
    snippet_tokenizer: str = option(
        "cl100k", source="ours; official: Qwen/Qwen3-0.6B (docs/protocols.md)"
    )
    get_document: bool = option(False, source="docs/openai.md runs: no --get-document")
    query_template: QueryTemplate = option(
        "QUERY_TEMPLATE_NO_GET_DOCUMENT",
        source=f"{OFFICIAL} --query-template QUERY_TEMPLATE_NO_GET_DOCUMENT",
    )
    max_iterations: int = option(100, min=1, source=f"{OFFICIAL} --max-iterations 100")
    max_tokens: int = option(10_000, min=1, source=f"{OFFICIAL} --max_tokens 10000")
    temperature: float | None = option(None, source=f"{OFFICIAL} --temperature: model default")
    tool_mode: Literal["auto", "tools", "json"] = option("auto")
    context_window: int | None = option(None, min=1, source="ours: the official has no check")
    chunk_unit: Literal["words", "tokens"] = option("tokens", source="ours: document search")
    chunk_size: int = option(512, min=1, source="ours: the official dense index reads 512 tokens")
    top_k: int = option(50, min=1, source="ours: chunks read to find k documents")
