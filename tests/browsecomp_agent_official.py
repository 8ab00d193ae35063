"""Runs BrowseComp-Plus's official search agent (texttron/BrowseComp-Plus @ 97c637c,
``search_agent/openai_client.py`` with ``search_agent/prompts.py``, ``search_agent/utils.py`` and
``searcher/searchers/base.py``, unchanged, exported with ``git archive``) against the recording
stub's ``/v1/responses`` route with scripted model turns and a fixed searcher, and writes what it
sent as JSON: the oracle ``tests/test_search_agent_parity.py`` compares ours with
(``tests/fixtures/browsecomp_agent/official_requests.json``).

    python -m tests.browsecomp_agent_official OUT.json [--mirror GIT_DIR]

For each scenario of :data:`SCENARIOS` it calls the official ``build_request`` and
``run_conversation_with_tools`` (``SearchToolHandler`` with ``k=5``, the scenario's
``snippet_max_tokens`` and ``--get-document``) and records every request body the stub received,
the final response's text and the number of model calls, and the query's file as the official
``_persist_response`` writes it (``tool_call_counts``, ``status``, ``retrieved_docids``,
``result``: what ``evaluate_run.py`` reads). Stood in for, and only these:

- ``transformers.AutoTokenizer``: ``from_pretrained("Qwen/Qwen3-0.6B")`` returns cl100k (our
  declared snippet tokenizer, docs/protocols.md) with the official call's signature, since the
  Qwen files are not at hand offline; the truncation rule around it is the official code's;
- the searcher: :class:`FixedSearcher`, a subclass of the official ``BaseSearcher`` (its tool
  descriptions are the official ones) returning the scenario's given results and documents in
  place of Pyserini / FAISS (``searcher.searchers``'s ``__init__``, which imports them, is inert);
- ``rich.print`` (not installed; its output is not recorded);
- the client: ``openai.OpenAI(base_url=<stub>, api_key="x")``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.recording_server import RecordingServer, tool_call, tool_reply

COMMIT = "97c637c"
MIRROR = Path("/work/.mirror/texttron+BrowseComp-Plus/repo")
QUESTION = "Which harbour town, founded in 1048, lies at the head of a fjord?"
QUERY_ID = "7001"

#: What the fixed searcher returns for each query (``{"docid", "score", "text"}``), and documents.
RESULTS: dict[str, list[dict[str, Any]]] = {
    "harbour town fjord 1048": [
        {
            "docid": "101",
            "score": 12.5,
            "text": "Oslo is the capital of Norway. It lies at the head of the Oslofjord and was "
            "founded around 1048 by King Harald Hardrada, according to the sagas.",
        },
        {
            "docid": "102",
            "score": 9.25,
            "text": "Bergen — «the city between the seven mountains» — is a harbour town on "
            "Norway's west coast.",
        },
        {"docid": "103", "score": 3.0, "text": "Short text."},
        {"docid": "104", "score": None, "text": "A hit without a score, in Zürich: café ☕."},
    ],
    "Harald Hardrada founded": [
        {
            "docid": "105",
            "score": 7.0,
            "text": "Harald Hardrada, king of Norway from 1046 to 1066, is said to have founded "
            "Oslo.",
        }
    ],
}
#: A document no search returns (the model opens it by id).
UNLISTED = {"106": "Christiania was the name of Oslo from 1624 to 1924."}
DOCUMENTS = {r["docid"]: r["text"] for rs in RESULTS.values() for r in rs} | UNLISTED

ANSWER = (
    "Explanation: Oslo lies at the head of the Oslofjord and was founded around 1048 [101]. "
    "Harald Hardrada is said to have founded it [105, 101].\n"
    "Exact Answer: Oslo\n"
    "Confidence: 90%"
)


def _search(query: str, call_id: str) -> dict[str, Any]:
    return tool_call("search", {"query": query}, call_id)


#: Each scenario: the official settings and the scripted model turns (a ``tool_reply`` or text).
SCENARIOS: dict[str, dict[str, Any]] = {
    "answers": {
        "settings": {"max_tokens": 10_000, "max_iterations": 100, "snippet_max_tokens": 12},
        "turns": [
            tool_reply(_search("harbour town fjord 1048", "call_a1"), content="Let me search."),
            tool_reply(
                tool_call("get_document", {"docid": "101"}, "call_b1"),
                tool_call("get_document", {"docid": "999"}, "call_b2"),
                tool_call("browse", {"url": "x"}, "call_b3"),
                tool_call("get_document", {}, "call_b4"),
                _search("Harald Hardrada founded", "call_b5"),
                # last: LangChain sends an unreadable call after the readable ones
                tool_call("search", '{"query": "unfinished', "call_b6"),
            ),
            ANSWER,
        ],
    },
    "turn_limit": {
        "settings": {"max_tokens": 10_000, "max_iterations": 2, "snippet_max_tokens": 0},
        "turns": [
            tool_reply(_search("harbour town fjord 1048", "call_c1")),
            tool_reply(_search("Harald Hardrada founded", "call_c2")),
            ANSWER,
        ],
    },
    "opened_unlisted": {
        "settings": {"max_tokens": 10_000, "max_iterations": 100, "snippet_max_tokens": 0},
        "turns": [
            tool_reply(_search("Harald Hardrada founded", "call_e1")),
            tool_reply(
                tool_call("get_document", {"docid": "106"}, "call_e2"),
                tool_call("search", {"query": "nothing matches this"}, "call_e3"),
            ),
            "Explanation: Christiania [106], founded by Harald [105].\nExact Answer: Oslo\n"
            "Confidence: 80%",
        ],
    },
    "token_cap": {
        "settings": {"max_tokens": 10, "max_iterations": 100, "snippet_max_tokens": 512},
        "turns": [
            tool_reply(_search("harbour town fjord 1048", "call_d1")),
            tool_reply(_search("Harald Hardrada founded", "call_d2")),
            tool_reply(_search("harbour town fjord 1048", "call_d3")),
            ANSWER,
        ],
    },
}


def export(mirror: Path, into: Path) -> Path:
    """The official files at :data:`COMMIT`, exported with ``git archive`` under ``into``."""
    tar = subprocess.run(
        ["git", "-C", str(mirror), "archive", COMMIT, "search_agent", "searcher"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    return into


class _Cl100kAsAutoTokenizer:
    """cl100k behind the two calls the official client makes of its tokenizer."""

    @classmethod
    def from_pretrained(cls, name: str) -> _Cl100kAsAutoTokenizer:
        return cls()

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        from longctx.retrieval.tokens import encode

        return encode(text)

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        from longctx.retrieval.tokens import decode

        return decode(ids)


@contextlib.contextmanager
def official_modules(root: Path) -> Iterator[types.ModuleType]:
    """The official ``openai_client`` module, imported from ``root`` with the stand-ins above."""
    stand_ins = {
        "transformers": types.ModuleType("transformers"),
        "rich": types.ModuleType("rich"),
        "searcher.searchers": types.ModuleType("searcher.searchers"),
    }
    stand_ins["transformers"].AutoTokenizer = _Cl100kAsAutoTokenizer  # type: ignore[attr-defined]
    stand_ins["rich"].print = print  # type: ignore[attr-defined]
    stand_ins["searcher.searchers"].SearcherType = object  # type: ignore[attr-defined]
    stand_ins["searcher.searchers"].__path__ = [str(root / "searcher" / "searchers")]  # type: ignore[attr-defined]
    saved = {k: sys.modules.get(k) for k in [*stand_ins, "prompts", "utils", "openai_client"]}
    sys.modules.update(stand_ins)
    sys.path[:0] = [str(root / "search_agent"), str(root)]
    try:
        yield importlib.import_module("openai_client")
    finally:
        del sys.path[:2]
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def fixed_searcher(root: Path) -> Any:
    """A subclass of the official ``BaseSearcher`` answering from :data:`RESULTS`."""
    spec = importlib.util.spec_from_file_location(
        "bcp_base", root / "searcher" / "searchers" / "base.py"
    )
    assert spec is not None and spec.loader is not None
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)

    class FixedSearcher(base.BaseSearcher):  # type: ignore[name-defined,misc]
        @classmethod
        def parse_args(cls, parser: Any) -> None:
            return None

        def __init__(self, args: Any = None) -> None:
            return None

        def search(self, query: str, k: int = 10) -> list[dict[str, Any]]:
            return [dict(r) for r in RESULTS.get(query, [])][:k]

        def get_document(self, docid: str) -> dict[str, Any] | None:
            text = DOCUMENTS.get(docid)
            return None if text is None else {"docid": docid, "text": text}

        @property
        def search_type(self) -> str:
            return "fixed"

    return FixedSearcher()


def scripted(turns: list[Any]) -> Any:
    """``reply(request)`` giving the scenario's turns in order."""
    count = {"n": 0}

    def reply(request: dict[str, Any]) -> Any:
        count["n"] += 1
        return turns[count["n"] - 1]

    return reply


def run_scenario(client_module: Any, searcher: Any, scenario: dict[str, Any]) -> dict[str, Any]:
    """One official conversation at the stub: its requests, final text and model calls."""
    import openai

    s = scenario["settings"]
    with RecordingServer(scripted(scenario["turns"])) as server:
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        handler = client_module.SearchToolHandler(
            searcher, snippet_max_tokens=s["snippet_max_tokens"], k=5, include_get_document=True
        )
        body = client_module.build_request(
            query=QUESTION,
            model="rec",
            max_tokens=s["max_tokens"],
            tool_handler=handler,
            query_template="QUERY_TEMPLATE",
        )
        with contextlib.redirect_stdout(io.StringIO()):
            response, output, usage, tool_outputs = client_module.run_conversation_with_tools(
                client, body, handler, s["max_iterations"]
            )
            persisted = persist(client_module, body, response, output, usage, tool_outputs)
        requests = json.loads(json.dumps(server.requests))
    return {
        "requests": requests,
        "final_text": response.output_text,
        "model_calls": len(requests),
        "output_tokens": usage["output_tokens"],
        "persisted": persisted,
    }


def persist(
    client_module: Any,
    body: dict[str, Any],
    response: Any,
    output: list[Any],
    usage: dict[str, Any],
    tool_outputs: dict[str, Any],
) -> dict[str, Any]:
    """The query's file as the official ``_persist_response`` writes it (its fields but
    ``metadata``, which names the temporary folder; ``retrieved_docids`` sorted: the official
    list comes from a set, in no fixed order)."""
    with tempfile.TemporaryDirectory() as out:
        client_module._persist_response(
            out, body, response, output, usage, tool_outputs, query_id=QUERY_ID
        )
        (path,) = Path(out).glob("run_*.json")
        written = json.loads(path.read_text(encoding="utf-8"))
    written.pop("metadata")
    written["retrieved_docids"] = sorted(written["retrieved_docids"])
    return dict(written)


def run_official(mirror: Path = MIRROR) -> dict[str, Any]:
    """Every scenario through the official code, with the inputs the test replays."""
    with tempfile.TemporaryDirectory() as tmp:
        root = export(mirror, Path(tmp))
        with official_modules(root) as client_module:
            searcher = fixed_searcher(root)
            runs = {n: run_scenario(client_module, searcher, sc) for n, sc in SCENARIOS.items()}
    return {
        "source": f"texttron/BrowseComp-Plus@{COMMIT} search_agent/openai_client.py",
        "question": QUESTION,
        "query_id": QUERY_ID,
        "results": RESULTS,
        "documents": DOCUMENTS,
        "scenarios": {name: {**SCENARIOS[name], "official": runs[name]} for name in SCENARIOS},
    }


if __name__ == "__main__":
    args = sys.argv[1:]
    mirror = MIRROR
    if "--mirror" in args:
        mirror = Path(args[args.index("--mirror") + 1])
    out = Path(args[0])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run_official(mirror), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {out}")
