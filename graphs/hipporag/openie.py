"""HippoRAG 2's OpenIE (``information_extraction/openie_openai.py``, official code @ c617143): per
passage one NER call, then one triple-extraction call given its entities; the replies parsed as the
official code parses them (the first JSON object holding the key, a truncated reply closed first,
triples of three kept once each, in order).

The map asks at most ``concurrency`` passages at once (NER then triples, each passage on its own).
Every finished call is appended to a record log (``longctx.memory.records.cache.RecordCache``) keyed
by what the request holds (the passage; the passage and its entities), so a build that stops in the
middle asks again only the calls it had not finished, and a passage seen before (another corpus,
another question) is never asked again under the same model and prompts. Each stored call carries
the XXH3-128 digest of its record: a record altered on disk (a flipped byte in a triple) is named in
a warning and asked again, never read into the graph.

Untrusted replies (ours, docs/protocols.md): a reply longer than ``MAX_CHARS_PER_TOKEN`` characters
per token of its budget (a server that ignored ``max_tokens``) is cut there and parsed as a reply
stopped at its budget; a passage keeps at most a quarter of the budget's tokens in triples and half
in entities (what a reply within its budget can hold). Both are warned about, and an unreadable
reply is counted: the graph's build says how many (``degraded``).
"""

from __future__ import annotations

import ast
import contextvars
import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longctx.graphs.hipporag.requests import Messages, entities_json, ner_messages, triple_messages
from longctx.graphs.plugin.api import ALGORITHM, RecordCache, digest_bytes, report_progress

_logger = logging.getLogger(__name__)

_NER = re.compile(r'\{[^{}]*"named_entities"\s*:\s*\[[^\]]*\][^{}]*\}', re.DOTALL)
_TRIPLES = re.compile(r'\{[^{}]*"triples"\s*:\s*\[[^\]]*\][^{}]*\}', re.DOTALL)
#: What a reply that cannot be read raises while it is parsed (the official code then keeps nothing
#: of it).
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
#: Characters per token of its budget beyond which a reply is cut (an English JSON reply runs about
#: 4 a token: an honest reply within ``openie_max_tokens`` does not come near it).
MAX_CHARS_PER_TOKEN = 16
#: Tokens of the budget per triple / per entity kept at most (``["a","b","c"],`` is 6 cl100k tokens,
#: ``"a",`` 2).
TOKENS_PER_TRIPLE, TOKENS_PER_ENTITY = 4, 2


def close_json(text: str) -> str:
    """A reply cut at its budget, closed as ``llm_utils.fix_broken_generated_json`` does: valid JSON
    is kept; else everything from the last comma on is dropped and the brackets still open (outside
    strings) are closed."""
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    comma = text.rfind(",")
    if comma != -1:
        text = text[:comma]
    return text + "".join({"{": "}", "[": "]"}[c] for c in reversed(_open_brackets(text)))


def _open_brackets(text: str) -> list[str]:
    """The brackets of ``text`` still open at its end, outside strings, innermost last."""
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
    return opened


def _first_object(pattern: re.Pattern[str], reply: str, key: str) -> Any:
    match = pattern.search(reply)
    return [] if match is None else ast.literal_eval(match.group())[key]


def readable(reply: str, truncated: bool, which: str) -> bool:
    """Whether a NER (``which="ner"``) or triple reply holds its JSON object in a form the parser
    reads (``False``: the official parser keeps nothing of it, and the graph loses that passage)."""
    pattern, key = (_NER, "named_entities") if which == "ner" else (_TRIPLES, "triples")
    try:
        match = pattern.search(close_json(reply) if truncated else reply)
        return match is not None and isinstance(ast.literal_eval(match.group())[key], list)
    except _UNREADABLE:
        return False


def parse_entities(reply: str, truncated: bool = False) -> list[Any]:
    """The named entities of a NER reply, each once in order of appearance; none when it cannot be
    read."""
    try:
        return list(
            dict.fromkeys(
                _first_object(_NER, close_json(reply) if truncated else reply, "named_entities")
            )
        )
    except _UNREADABLE:
        return []


def valid_triples(triples: Any) -> list[list[str]]:
    """``llm_utils.filter_invalid_triples``: items of exactly three parts, as strings, each kept
    once in order."""
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
    """One passage's OpenIE: its named entities (sent to the triple call) and its valid triples; how
    many of its two replies could not be read, and how many were cut (a server that ignored the
    budget)."""

    entities: list[Any]
    triples: list[list[str]]
    unreadable: int = 0
    capped: int = 0


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", errors="surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class OpenIELog:
    """Finished OpenIE calls: on disk in two record logs under ``root`` (NER, triples), or in
    memory."""

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
        record = found["records"][0] if found is not None and found["records"] else None
        if not isinstance(record, dict):
            return None
        body = {k: v for k, v in record.items() if k != ALGORITHM}
        stored = record.get(ALGORITHM)  # none: written before the checks
        if stored is not None and stored != _record_digest(body):
            _logger.warning(
                "HippoRAG OpenIE log %s: the %s record of %s fails its %s checksum (altered on "
                "disk); not read, asked again",
                cache.path,
                which,
                key[:16],
                ALGORITHM,
            )
            return None
        return body

    def put(self, which: str, key: str, record: dict[str, Any]) -> None:
        """Store a finished call (appended before the next one is recorded)."""
        cache = self.ner if which == "ner" else self.triples
        if cache is None:
            self.memory[which + key] = record
        else:
            cache.put(key, [{**record, ALGORITHM: _record_digest(record)}])


def _record_digest(record: dict[str, Any]) -> str:
    """The digest of a stored call's record (its JSON with sorted keys)."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=False)
    return digest_bytes(text.encode("utf-8", errors="surrogatepass"))


def _asked(ask: Ask, messages: Messages, which: str, most: int | None) -> dict[str, Any]:
    """One call's record: its reply (cut at ``MAX_CHARS_PER_TOKEN`` per budget token, warned, when
    the server sent more than its budget allows), whether it stopped at its budget, and what parses
    of it."""
    reply, cut = ask(messages)
    record: dict[str, Any] = {}
    if most is not None and len(reply) > most * MAX_CHARS_PER_TOKEN:
        _logger.warning(
            "HippoRAG OpenIE: a %s reply of %d characters is over what %d tokens can hold (the "
            "server ignored max_tokens); cut at %d and read as a reply stopped at its budget",
            which,
            len(reply),
            most,
            most * MAX_CHARS_PER_TOKEN,
        )
        record["cut_from_chars"] = len(reply)
        reply, cut = reply[: most * MAX_CHARS_PER_TOKEN], True
    key, parse = ("entities", parse_entities) if which == "ner" else ("triples", parse_triples)
    record.update({"reply": reply, "truncated": cut, key: parse(reply, cut)})
    record["unreadable"] = not readable(reply, cut, which)
    return record


def _kept(record: dict[str, Any], which: str, most: int | None) -> tuple[list[Any], int, int]:
    """A record's entities or triples, at most what a reply within ``most`` tokens holds (warned);
    and whether it was unreadable and whether it was cut (0 or 1 each)."""
    key, per = ("entities", TOKENS_PER_ENTITY) if which == "ner" else ("triples", TOKENS_PER_TRIPLE)
    items = list(record[key])
    unreadable = record.get("unreadable")
    if unreadable is None:  # a record written before they were counted
        unreadable = not readable(record["reply"], record["truncated"], which)
    capped = "cut_from_chars" in record
    if most is not None and len(items) > max(1, most // per):
        _logger.warning(
            "HippoRAG OpenIE: a %s reply names %d %s, more than a reply of %d tokens holds; the "
            "first %d kept",
            which,
            len(items),
            key,
            most,
            max(1, most // per),
        )
        items, capped = items[: max(1, most // per)], True
    return items, int(bool(unreadable)), int(capped)


def extract_passage(
    passage: str, ask: Ask, log: OpenIELog, most: int | None = None
) -> tuple[Extraction, int]:
    """One passage's NER then triples, each from the log where it holds it; and how many calls were
    asked. ``most``: the calls' token budget (``openie_max_tokens``), which bounds what a reply may
    bring."""
    asked = 0
    ner_key = _digest(passage)
    ner = log.get("ner", ner_key)
    if ner is None:
        ner = _asked(ask, ner_messages(passage), "ner", most)
        log.put("ner", ner_key, ner)
        asked += 1
    entities, bad_ner, cut_ner = _kept(ner, "ner", most)
    triple_key = _digest(passage, entities_json(entities))
    found = log.get("triples", triple_key)
    if found is None:
        found = _asked(ask, triple_messages(passage, entities), "triples", most)
        log.put("triples", triple_key, found)
        asked += 1
    triples, bad, cut = _kept(found, "triples", most)
    return Extraction(entities, [list(t) for t in triples], bad_ner + bad, cut_ner + cut), asked


def calls_left(passage: str, log: OpenIELog, most: int | None = None) -> int:
    """How many of a passage's two OpenIE calls the log does not hold (what a build would still
    ask)."""
    ner = log.get("ner", _digest(passage))
    if ner is None:
        return 2
    entities = (
        list(ner["entities"])[: max(1, most // TOKENS_PER_ENTITY)] if most else ner["entities"]
    )
    return int(log.get("triples", _digest(passage, entities_json(list(entities)))) is None)


def extract_all(
    passages: Sequence[str], ask: Ask, log: OpenIELog, concurrency: int, most: int | None = None
) -> tuple[list[Extraction], int]:
    """Every passage's extraction, in order, with at most ``concurrency`` passages in flight; and
    the calls asked. A failed call ends the map: nothing more is asked, and every call that finished
    is in the log."""
    results: list[Extraction | None] = [None] * len(passages)
    asked = [0] * len(passages)
    failed = threading.Event()

    def run(i: int) -> None:
        if failed.is_set():  # a passage taken up after a failure asks nothing
            return
        try:
            results[i], asked[i] = extract_passage(passages[i], ask, log, most)
        except BaseException:
            failed.set()
            raise
        report_progress("openie", advance=1)

    if passages:
        report_progress("openie", done=0, total=len(passages))  # then one per passage extracted
        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(passages)))) as pool:
            # each call sees this run's callbacks
            futures = [
                pool.submit(contextvars.copy_context().run, run, i) for i in range(len(passages))
            ]
            try:
                for future in futures:
                    future.result()
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise
    return [r for r in results if r is not None], sum(asked)
