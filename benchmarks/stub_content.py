"""Content-dependent replies and embeddings for the stub server (``stub_server --content``), so
that index builds against it are realistic: RAPTOR's summaries are made of the clustered text's own
words, HippoRAG's OpenIE finds the passage's capitalised names and numbers and relates the ones
that share a sentence, and ``/v1/embeddings`` returns deterministic vectors in which texts sharing
words are near.

Requests are recognised by the official prompts' opening words (RAPTOR @ 2e3e83e, HippoRAG @
c617143, as ``graphs/raptor/prompts.py`` and ``graphs/hipporag/prompts.py`` hold them); the
strings are repeated here because importing ``graphs`` would cost every stub start about a second
(``tests/test_stub_content.py`` checks them against the real requests and parses every reply with
our parsers). Nothing here is a model: the replies have the shape and size of real ones, not
their sense.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from typing import Any

import numpy as np

#: RAPTOR's summary user turn (``SUMMARY_TEMPLATE``) up to its context.
SUMMARY_PREFIX = "Write a summary of the following, including as many key details as possible: "
#: HippoRAG's NER system turn (``NER_SYSTEM``), its start.
NER_SYSTEM_START = "Your task is to extract named entities from the given paragraph."
#: HippoRAG's triple-extraction system turn (``TRIPLE_SYSTEM``), its start.
TRIPLE_SYSTEM_START = "Your task is to construct an RDF (Resource Description Framework) graph"
#: Words per cl100k token in English prose (about 0.75): a summary of ``n``
#: tokens has ``0.75 n`` words.
WORDS_PER_TOKEN = 0.75
#: Dimensions of the stub's embeddings (all-MiniLM-L6-v2's, the offline default embedder).
EMBEDDING_DIM = 384
#: At most this many named entities per passage (a long passage's NER reply stays a plausible size).
MAX_ENTITIES = 60

_NAME = re.compile(r"[A-Z][A-Za-z0-9&'.-]*[A-Za-z0-9](?:[ ][A-Z][A-Za-z0-9&'.-]*[A-Za-z0-9])*")
_NUMBER = re.compile(r"(?<![A-Za-z0-9])\$?\d(?:[\d,.-]*\d)?%?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9]+")


def summary_reply(context: str, max_tokens: int) -> str:
    """About ``max_tokens`` tokens of the context's own words: runs of eight words taken from each
    node in turn (nodes are separated by blank lines), so every clustered node is represented."""
    nodes = [n.split() for n in context.split("\n\n") if n.strip()]
    want = max(int(max_tokens * WORDS_PER_TOKEN), 1)
    out: list[str] = []
    start = 0
    while len(out) < want and any(start < len(n) for n in nodes):
        for words in nodes:
            out.extend(words[start : start + 8])
            if len(out) >= want:
                break
        start += 8
    return " ".join(out[:want])


def _mid_sentence(text: str, at: int) -> bool:
    """Whether the character before position ``at`` (spaces skipped) continues a sentence."""
    before = text[:at].rstrip(" ")
    return bool(before) and (before[-1].isalnum() or before[-1] in ",;(")


def entities_of(passage: str) -> list[str]:
    """The passage's named entities, in order, each once: runs of capitalised words (a lone one only
    inside a sentence, so a sentence's first word is not a name) and numbers."""
    found: list[tuple[int, str]] = []
    for m in _NAME.finditer(passage):
        if " " in m.group() or _mid_sentence(passage, m.start()):
            found.append((m.start(), m.group()))
    found += [(m.start(), m.group()) for m in _NUMBER.finditer(passage)]
    return list(dict.fromkeys(text for _, text in sorted(found)))[:MAX_ENTITIES]


def triples_of(passage: str, entities: list[str]) -> list[list[str]]:
    """Triples over ``entities``: in each sentence, each entity and the next one found there,
    related by the first lowercase word between them (``"has"`` when there is none); at most
    two per entity."""
    out: list[list[str]] = []
    for sentence in _SENTENCE.split(passage):
        spots = sorted((sentence.find(e), e) for e in entities if e in sentence)
        for (i, a), (j, b) in zip(spots, spots[1:]):
            between = [w for w in sentence[i + len(a) : j].split() if w.islower() and w.isalpha()]
            triple = [a, between[0] if between else "has", b]
            if a != b and triple not in out:
                out.append(triple)
    return out[: 2 * len(entities)]


def _triple_request(text: str) -> tuple[str, list[str]]:
    """The passage and the entities of a triple-extraction user turn (``TRIPLE_FRAME`` filled)."""
    passage = text.split("```\n", 1)[1].rsplit("\n```", 1)[0] if "```\n" in text else text
    entities: list[str] = []
    tail = text.rsplit("```", 1)[-1].strip()
    try:
        entities = [str(e) for e in json.loads(tail)["named_entities"]]
    except (ValueError, KeyError, TypeError):
        pass
    return passage, entities


def content_reply(request: dict[str, Any]) -> str | None:
    """The reply to a RAPTOR summary or HippoRAG OpenIE request, or ``None`` for any
    other request."""
    messages = request.get("messages") or []
    if not messages:
        return None
    system = str(messages[0].get("content") or "")
    last = str(messages[-1].get("content") or "")
    if last.startswith(SUMMARY_PREFIX):
        budget = request.get("max_tokens") or request.get("max_completion_tokens") or 100
        return summary_reply(last[len(SUMMARY_PREFIX) :].removesuffix(":"), int(budget))
    if system.startswith(NER_SYSTEM_START):
        return json.dumps({"named_entities": entities_of(last)})
    if system.startswith(TRIPLE_SYSTEM_START):
        passage, entities = _triple_request(last)
        return json.dumps({"triples": triples_of(passage, entities)})
    return None


def hashed_vector(text: str) -> np.ndarray:
    """A unit vector of hashed lowercase words (crc32 picks the dimension and the sign):
    texts sharing words are near, as in a real embedding's rough sense; the zero text gets
    the first axis."""
    v = np.zeros(EMBEDDING_DIM, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        h = zlib.crc32(word.encode())
        v[h % EMBEDDING_DIM] += 1.0 if (h >> 16) & 1 else -1.0
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        v[0] = 1.0
        return v
    return v / norm


def embeddings_reply(request: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI ``/v1/embeddings`` response for the request's inputs (base64 float32 when asked, as
    the openai client asks by default, else lists of floats)."""
    inputs = request.get("input", [])
    texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
    as_base64 = request.get("encoding_format") == "base64"
    data = []
    for i, text in enumerate(texts):
        vec = hashed_vector(text)
        embedding: Any = (
            base64.b64encode(vec.astype("<f4").tobytes()).decode() if as_base64 else vec.tolist()
        )
        data.append({"object": "embedding", "index": i, "embedding": embedding})
    tokens = sum(len(t.encode()) // 4 for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": request.get("model", "stub"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
