"""HippoRAG 2's OpenIE (``information_extraction/openie_openai.py``, official code @ c617143): per passage
one NER call, then one triple-extraction call given its entities; the replies parsed as the official
code parses them (the first JSON object holding the key, a truncated reply closed first, triples of
three kept once each, in order).

The map asks at most ``concurrency`` passages at once (NER then triples, each passage on its own).
Every finished call is appended to a record log (``memory.records.cache.RecordCache``) keyed by
what the request holds (the passage; the passage and its entities), so a build that stops in the
middle asks again only the calls it had not finished, and a passage seen before (another corpus,
another question) is never asked again under the same model and prompts.
"""

from __future__ import annotations

import ast
import contextvars
import hashlib
import json
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphs.events import report_progress
from graphs.hipporag.requests import Messages, entities_json, ner_messages, triple_messages
from memory.records.cache import RecordCache

_NER = re.compile(r'\{[^{}]*"named_entities"\s*:\s*\[[^\]]*\][^{}]*\}', re.DOTALL)
_TRIPLES = re.compile(r'\{[^{}]*"triples"\s*:\s*\[[^\]]*\][^{}]*\}', re.DOTALL)
#: What a reply that cannot be read raises while it is parsed (the official code then keeps nothing of it).
_UNREADABLE = (
    ValueError,
    SyntaxError,
    TypeError,
    KeyError,
    IndexError,
    RecursionError,
    MemoryError,
)

#: ``(messages) -> (reply text, cut at its budget)``: one OpenIE call.
Ask = Callable[[Messages], tuple[str, bool]]


def close_json(text: str) -> str:
    """A reply cut at its budget, closed as ``llm_utils.fix_broken_generated_json`` does: valid JSON is kept;
    else everything from the last comma on is dropped and the brackets still open (outside strings) are closed."""
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    comma = text.rfind(",")
    if comma != -1:
        text = text[:comma]
    opened: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            opened.append(ch)
        elif ch in "}]" and opened and opened[-1] == {"}": "{", "]": "["}[ch]:
            opened.pop()
    return text + "".join({"{": "}", "[": "]"}[c] for c in reversed(opened))


def _first_object(pattern: re.Pattern[str], reply: str, key: str) -> Any:
    match = pattern.search(reply)
    return [] if match is None else ast.literal_eval(match.group())[key]


def parse_entities(reply: str, truncated: bool = False) -> list[Any]:
    """The named entities of a NER reply, each once in order of appearance; none when it cannot be read."""
    try:
        return list(
            dict.fromkeys(
                _first_object(_NER, close_json(reply) if truncated else reply, "named_entities")
            )
        )
    except _UNREADABLE:
        return []


def valid_triples(triples: Any) -> list[list[str]]:
    """``llm_utils.filter_invalid_triples``: items of exactly three parts, as strings, each kept once in order."""
    seen: set[tuple[str, ...]] = set()
    out: list[list[str]] = []
    for triple in triples:
        if len(triple) != 3:
            continue
        parts = [str(x) for x in triple]
        if tuple(parts) not in seen:
            seen.add(tuple(parts))
            out.append(parts)
    return out


def parse_triples(reply: str, truncated: bool = False) -> list[list[str]]:
    """The valid triples of a triple-extraction reply; none when it cannot be read."""
    try:
        return valid_triples(
            _first_object(_TRIPLES, close_json(reply) if truncated else reply, "triples")
        )
    except _UNREADABLE:
        return []


@dataclass(frozen=True)
class Extraction:
    """One passage's OpenIE: its named entities (sent to the triple call) and its valid triples."""

    entities: list[Any]
    triples: list[list[str]]


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", errors="surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class OpenIELog:
    """Finished OpenIE calls: on disk in two record logs under ``root`` (NER, triples), or in memory."""

    def __init__(self, root: Path | None, settings_key: str, model: str):
        self.ner = RecordCache(root, "ner-" + settings_key, model) if root is not None else None
        self.triples = (
            RecordCache(root, "triples-" + settings_key, model) if root is not None else None
        )
        self.memory: dict[str, dict[str, Any]] = {}

    def get(self, which: str, key: str) -> dict[str, Any] | None:
        """The stored result of a call, or ``None``."""
        cache = self.ner if which == "ner" else self.triples
        if cache is None:
            return self.memory.get(which + key)
        found = cache.get(key)
        return found["records"][0] if found is not None and found["records"] else None

    def put(self, which: str, key: str, record: dict[str, Any]) -> None:
        """Store a finished call (appended before the next one is recorded)."""
        cache = self.ner if which == "ner" else self.triples
        if cache is None:
            self.memory[which + key] = record
        else:
            cache.put(key, [record])


def extract_passage(passage: str, ask: Ask, log: OpenIELog) -> tuple[Extraction, int]:
    """One passage's NER then triples, each from the log where it holds it; and how many calls were asked."""
    asked = 0
    ner_key = _digest(passage)
    ner = log.get("ner", ner_key)
    if ner is None:
        reply, cut = ask(ner_messages(passage))
        ner = {"reply": reply, "truncated": cut, "entities": parse_entities(reply, cut)}
        log.put("ner", ner_key, ner)
        asked += 1
    entities = list(ner["entities"])
    triple_key = _digest(passage, entities_json(entities))
    found = log.get("triples", triple_key)
    if found is None:
        reply, cut = ask(triple_messages(passage, entities))
        found = {"reply": reply, "truncated": cut, "triples": parse_triples(reply, cut)}
        log.put("triples", triple_key, found)
        asked += 1
    return Extraction(entities, [list(t) for t in found["triples"]]), asked


def extract_all(
    passages: Sequence[str], ask: Ask, log: OpenIELog, concurrency: int
) -> tuple[list[Extraction], int]:
    """Every passage's extraction, in order, with at most ``concurrency`` passages in flight; and the calls asked.
    A failed call ends the map: nothing more is asked, and every call that finished is in the log."""
    results: list[Extraction | None] = [None] * len(passages)
    asked = [0] * len(passages)
    failed = threading.Event()

    def run(i: int) -> None:
        if failed.is_set():  # a passage taken up after a failure asks nothing
            return
        try:
            results[i], asked[i] = extract_passage(passages[i], ask, log)
        except BaseException:
            failed.set()
            raise
        report_progress("openie", advance=1)

    if passages:
        report_progress("openie", done=0, total=len(passages))  # then one per passage extracted
        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(passages)))) as pool:
            futures = [
                pool.submit(contextvars.copy_context().run, run, i) for i in range(len(passages))
            ]  # each call sees this run's callbacks
            try:
                for future in futures:
                    future.result()
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    return [r for r in results if r is not None], sum(asked)
