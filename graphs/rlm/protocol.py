"""The RLM message protocol as pure functions: the first messages, the per-turn prompt, the
```repl``` block parse, the REPL feedback (truncated as the official code truncates it) and the
paper's FINAL(...) / FINAL_VAR(...) parse.

Written for this project from alexzhang13/rlm @ 72d6940 (``rlm/utils/prompts.py``
``build_rlm_system_prompt`` / ``build_user_prompt``, ``rlm/utils/parsing.py`` ``find_code_blocks``
/ ``format_iteration`` / ``format_execution_result``, ``rlm/core/types.py`` ``QueryMetadata``) and,
for the ``paper`` protocol, @ a30805b (the same files, and ``find_final_answer``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from longctx.graphs.rlm import prompts as p

Protocol = Literal["answer_dict", "final"]
Message = dict[str, str]

#: Per-block cap on the REPL feedback (``format_iteration(max_character_length=20000)``).
FEEDBACK_CHARS = 20_000

_CODE_BLOCK = re.compile(r"```repl\s*\n(.*?)\n```", re.DOTALL)
_FINAL_VAR = re.compile(r"^\s*FINAL_VAR\((.*?)\)", re.MULTILINE | re.DOTALL)
_FINAL = re.compile(r"^\s*FINAL\((.*?)\)", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class BlockResult:
    """One executed block: its code, what it printed and raised, the variables it left."""

    code: str
    stdout: str
    stderr: str
    variables: tuple[str, ...]


def context_metadata(context: str | Sequence[Any]) -> tuple[str, list[int]]:
    """The context's type name and chunk lengths (``QueryMetadata``: a ``str``, or a ``list``
    of strings, or of dicts measured by their ``content`` or their JSON)."""
    if isinstance(context, str):
        return "str", [len(context)]
    items = list(context)
    if not items:
        return "list", [0]
    if isinstance(items[0], dict):
        if "content" in items[0]:
            return "list", [len(str(c.get("content", ""))) for c in items]
        return "list", [len(json.dumps(c, default=str)) for c in items]
    return "list", [len(c) for c in items]


def tools_section(tools: dict[str, str]) -> str:
    """The system prompt's custom tools section (``format_tools_for_prompt``): one line per
    callable tool, its description or "A custom function"."""
    if not tools:
        return ""
    lines = "\n".join(f"- `{name}`: {desc or 'A custom function'}" for name, desc in tools.items())
    return p.CUSTOM_TOOLS_SECTION.format(tools=lines)


def first_messages(
    protocol: Protocol,
    context: str | Sequence[Any],
    root_prompt: str | None,
    *,
    tools: dict[str, str] | None = None,
    orchestrator: bool = True,
) -> list[Message]:
    """The system message and the context's metadata message an RLM starts with."""
    kind, lengths = context_metadata(context)
    if protocol == "final":
        shown: Any = lengths
        if len(lengths) > 100:
            shown = str(lengths[:100]) + "... [" + str(len(lengths) - 100) + " others]"
        meta = p.PAPER_METADATA.format(
            context_type=kind, context_total_length=sum(lengths), context_lengths=shown
        )
        return [
            {"role": "system", "content": p.PAPER_SYSTEM_PROMPT},
            {"role": "assistant", "content": meta},
        ]
    system = p.SYSTEM_PROMPT.format(custom_tools_section=tools_section(tools or {}))
    if orchestrator:
        system = f"{system}\n\n{p.ORCHESTRATOR_ADDENDUM}"
    body = p.METADATA_BODY.format(context_type=kind, context_total_length=sum(lengths))
    if root_prompt:
        body = p.ROOT_PROMPT_PREFIX.format(root_prompt=root_prompt) + body
    return [{"role": "system", "content": system}, {"role": "user", "content": body}]


def turn_prompt(
    protocol: Protocol, iteration: int, root_prompt: str | None, max_iterations: int
) -> Message:
    """The user message that opens turn ``iteration`` (0-based)."""
    if protocol == "final":
        body = (
            p.PAPER_USER_PROMPT_WITH_ROOT.format(root_prompt=root_prompt)
            if root_prompt
            else p.PAPER_USER_PROMPT
        )
        prefix = p.PAPER_FIRST_TURN_SAFEGUARD if iteration == 0 else p.PAPER_LATER_TURN_PREFIX
        return {"role": "user", "content": prefix + body}
    body = p.USER_PROMPT.format(iter_1=iteration + 1, max_iter=max_iterations)
    return {"role": "user", "content": (p.FIRST_TURN_SAFEGUARD + body) if iteration == 0 else body}


def code_blocks(text: str) -> list[str]:
    """The ```repl``` blocks of a reply, stripped, in order."""
    return [m.group(1).strip() for m in _CODE_BLOCK.finditer(text)]


def execution_text(block: BlockResult) -> str:
    """One block's result as the official feedback renders it (``format_execution_result``)."""
    parts = []
    if block.stdout:
        parts.append(f"\n{block.stdout}")
    if block.stderr:
        parts.append(f"\n{block.stderr}")
    if block.variables:
        parts.append(f"REPL variables: {list(block.variables)}\n")
    return "\n\n".join(parts) if parts else "No output"


def truncated(text: str, limit: int = FEEDBACK_CHARS) -> str:
    """``text`` cut at ``limit`` characters with the official "... + [N chars...]" tail."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"... + [{len(text) - limit} chars...]"


def feedback(protocol: Protocol, reply: str, blocks: Sequence[BlockResult]) -> list[Message]:
    """The messages a turn adds to the history: the reply, then the REPL output (72d6940: one
    user message for all blocks; the paper's: one per block, with its code)."""
    messages: list[Message] = [{"role": "assistant", "content": reply}]
    if protocol == "final":
        for b in blocks:
            result = truncated(execution_text(b))
            messages.append(
                {
                    "role": "user",
                    "content": (
                        f"Code executed:\n```python\n{b.code}\n```\n\nREPL output:\n{result}"
                    ),
                }
            )
        return messages
    multi = len(blocks) > 1
    parts = []
    for i, b in enumerate(blocks):
        header = f"REPL output (block {i + 1}):" if multi else "REPL output:"
        parts.append(f"{header}\n{truncated(execution_text(b))}")
    if parts:
        messages.append({"role": "user", "content": "\n\n".join(parts)})
    return messages


def final_marker(reply: str) -> tuple[str, str] | None:
    """The paper's answer in a reply: ``("FINAL_VAR", name)`` (checked first) or
    ``("FINAL", text)``, each at the start of a line; ``None`` when there is neither."""
    match = _FINAL_VAR.search(reply)
    if match:
        return "FINAL_VAR", match.group(1).strip().strip('"').strip("'")
    match = _FINAL.search(reply)
    if match:
        return "FINAL", match.group(1).strip()
    return None
