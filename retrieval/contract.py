"""The answer contract every package shares: corpus, question, answer, usage, steps, registry.

Home and why: the contract sits at the bottom of the import graph so that every package
may import it (``experiments -> agents -> graphs -> memory, retrieval``) and it imports
none of them. The top-level layout is fixed, so the bottom is ``retrieval``, the lowest
layer, which already owned ``Corpus``/``Document``. This module imports only the standard
library; the two heavy helpers it uses (file readers, the tokenizer) are imported where
they are needed, so ``import retrieval.contract`` stays cheap.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


# -- plug-in registry -----------------------------------------------------------------
class Registry(Generic[T]):
    """A name -> plug-in mapping: decorator registration, collisions raise, lookups explain.

    Every kind of plug-in (strategies, retrievers, embedders, chat-model providers,
    benchmarks, metrics, synth domains) has one. Third-party packages add entries without
    editing this repository through an entry-point group (``[project.entry-points."<group>"]``
    in their ``pyproject.toml``): each entry point is loaded on the first lookup; it may
    register itself on import, or be the plug-in object, registered under the entry
    point's name (see :meth:`register`).

    Args:
        kind: What the entries are, for messages (``"strategy"``).
        group: Entry-point group scanned for third-party plug-ins (``"longctx.strategies"``).
        make_entry: Builds the stored entry when the decorator is given attributes,
            e.g. ``Strategy`` for ``@STRATEGIES.register("rag", config_cls=...)``.
    """

    def __init__(self, kind: str, *, group: str | None = None, make_entry: Callable[..., T] | None = None):
        self.kind = kind
        self.group = group
        self.make_entry = make_entry
        self._entries: dict[str, T] = {}
        self._plugins_loaded = group is None

    def register(self, name: str, obj: Any = None, **attrs: Any) -> Any:
        """Register ``obj`` under ``name``; without ``obj``, return a decorator.

        ``@REGISTRY.register("name")`` registers the decorated class or function itself;
        with attributes (``@STRATEGIES.register("rag", config_cls=RagConfig, ...)``) the
        stored entry is ``make_entry(name=name, <decorated>, **attrs)`` and the decorated
        object is returned unchanged. A second, different entry under one name raises.
        """
        if obj is None:
            return lambda o: (self.register(name, o, **attrs), o)[1]
        if attrs and self.make_entry is None:
            raise TypeError(f"The {self.kind} registry takes no attributes: {sorted(attrs)}")
        entry = self.make_entry(name, obj, **attrs) if attrs and self.make_entry else obj
        existing = self._entries.get(name)
        if existing is not None and existing is not entry and existing != entry:
            raise ValueError(f"{self.kind} {name!r} is already registered to {existing!r}")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        """The entry called ``name``; an unknown name raises ``KeyError`` with suggestions.

        Plug-ins are loaded only when the name is not registered yet, so lookups made while
        the library itself is importing never import a third-party package half-way.
        """
        if name not in self._entries:
            self._load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise KeyError(f"Unknown {self.kind} {name!r}.{hint} Available: {', '.join(sorted(self._entries))}") from None

    def names(self) -> list[str]:
        """Registered names, sorted (third-party plug-ins included)."""
        self._load_plugins()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def _load_plugins(self) -> None:
        """Load the entry points of :attr:`group` once; a broken plug-in is logged, not fatal."""
        if self._plugins_loaded or self.group is None:
            return
        self._plugins_loaded = True
        for ep in metadata.entry_points(group=self.group):
            try:
                obj = ep.load()
            except Exception as exc:  # noqa: BLE001 - a third-party package must not break the library
                log.warning("Cannot load %s plug-in %r (%s): %s: %s", self.kind, ep.name, ep.value, type(exc).__name__, exc)
                continue
            if ep.name not in self._entries and not _is_module(obj):
                self.register(ep.name, obj)


def _is_module(obj: Any) -> bool:
    return type(obj).__name__ == "module"


# -- corpus ---------------------------------------------------------------------------
class CorpusError(ValueError):
    """A corpus cannot be built from the given input (empty, missing or unreadable)."""


@dataclass(frozen=True)
class Document:
    """One document of a corpus.

    Attributes:
        doc_id: Stable identifier, unique within the corpus (a file path or an index).
        text: Full text.
        title: Human-readable title shown in prompts and evidence.
        metadata: Free-form fields carried through to evidence (source, date, ...).
    """

    doc_id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)


class Corpus:
    """An ordered list of documents, the unit every strategy answers over.

    Build one with :meth:`from_texts`, :meth:`from_path` or :meth:`from_documents`.
    The :attr:`fingerprint` depends only on ids, titles and texts in order, so it keys
    the on-disk index cache and checkpoints across processes.
    """

    def __init__(self, documents: Sequence[Document]):
        docs = tuple(documents)
        if not docs:
            raise CorpusError("The corpus is empty: give at least one document with text.")
        empty = [d.doc_id for d in docs if not d.text.strip()]
        if len(empty) == len(docs):
            raise CorpusError(f"The corpus is empty: all {len(docs)} documents have no text.")
        ids = [d.doc_id for d in docs]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise CorpusError(f"Document ids must be unique; repeated: {dup}")
        self.documents: tuple[Document, ...] = docs

    @classmethod
    def from_texts(cls, texts: Iterable[str], titles: Iterable[str] | None = None) -> Corpus:
        """Corpus from plain strings; titles default to ``"Document {i}"``."""
        texts = list(texts)
        titles = list(titles) if titles is not None else [f"Document {i + 1}" for i in range(len(texts))]
        if len(titles) != len(texts):
            raise CorpusError(f"Got {len(texts)} texts but {len(titles)} titles.")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise CorpusError(f"Text {i} is a {type(text).__name__}, expected str.")
        return cls([Document(doc_id=str(i), text=t, title=ti) for i, (t, ti) in enumerate(zip(texts, titles))])

    @classmethod
    def from_documents(cls, documents: Iterable[Any]) -> Corpus:
        """Corpus from :class:`Document` objects, or LlamaIndex / LangChain documents.

        Foreign documents are converted at this boundary: the text comes from ``.text``
        (LlamaIndex) or ``.page_content`` (LangChain), the title from ``metadata["title"]``
        or ``metadata["file_name"]``.
        """
        return cls([_as_document(d, i) for i, d in enumerate(documents)])

    @classmethod
    def from_path(cls, path: str | Path, *, show_progress: bool = False) -> Corpus:
        """Corpus from a file or a folder (read recursively, in sorted path order).

        Supported: ``.txt``, ``.md``, ``.json``, ``.jsonl``, and ``.pdf`` / ``.html``
        through LlamaIndex readers. Text files must be UTF-8; a file that is not raises
        :class:`CorpusError` naming it.
        """
        from retrieval.readers import read_path  # heavy: LlamaIndex's file readers

        return cls(read_path(Path(path), show_progress=show_progress))

    def as_retriever(self, retriever: str = "bm25", *, k: int = 7, chunk_size: int = 200, chunk_unit: str = "words",
                     cache_dir: str | Path | None = None, show_progress: bool = False, **retriever_options: Any) -> Any:  # fmt: skip
        """This corpus as a LangChain ``BaseRetriever`` over its cached index: the top ``k`` chunks per query.

        Defaults are LongBench v1's RAG setting (200-word chunks, top-7, BM25); ``retriever`` is any
        registered retriever (``dense``, ``contriever``, ``openai``) with its options. The index is
        built once and shared with every strategy that asks for the same chunking and retriever.
        """
        from retrieval.chunking import ChunkingConfig
        from retrieval.index import build_index  # heavy, and it imports this module

        index = build_index(self, retriever, chunking=ChunkingConfig(unit=chunk_unit, size=chunk_size),  # type: ignore[arg-type]
                            cache_dir=cache_dir, show_progress=show_progress, **retriever_options)  # fmt: skip
        return index.as_retriever(k=k)

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    def __getitem__(self, i: int) -> Document:
        return self.documents[i]

    def __repr__(self) -> str:
        return f"Corpus({len(self)} documents, fingerprint={self.fingerprint[:12]})"

    @cached_property
    def num_tokens(self) -> int:
        """Total cl100k tokens over all document texts."""
        return sum(self.token_counts)

    @cached_property
    def token_counts(self) -> tuple[int, ...]:
        """cl100k tokens of each document's text, counted once per corpus object."""
        from retrieval.tokens import count_tokens_batch  # heavy: loads the BPE ranks

        return tuple(count_tokens_batch([d.text for d in self.documents]))

    @cached_property
    def num_words(self) -> int:
        """Total whitespace-separated words (LongBench-style lengths are in words)."""
        return sum(len(d.text.split()) for d in self.documents)

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 over ids, titles and texts in order; equal corpora share it across runs."""
        return self._hash_prefix(len(self))

    def prefix_fingerprint(self, num_documents: int) -> str:
        """The :attr:`fingerprint` of the corpus made of the first ``num_documents`` documents.

        What a grown corpus (:meth:`add`) looks its shorter self's cached index up by.
        """
        if not 1 <= num_documents <= len(self):
            raise ValueError(f"A prefix holds 1 to {len(self)} documents, got {num_documents}")
        if num_documents == len(self):
            return self.fingerprint
        return self._hash_prefix(num_documents)

    def prefix_fingerprints(self) -> Iterator[str]:
        """The fingerprint of the first 1, 2, ..., ``len(self)`` documents, in one pass."""
        h = hashlib.sha256()
        for d in self.documents:
            for part in (d.doc_id, d.title, d.text):
                data = part.encode("utf-8", errors="surrogatepass")
                h.update(len(data).to_bytes(8, "little"))
                h.update(data)
            yield h.copy().hexdigest()

    def _hash_prefix(self, num_documents: int) -> str:
        fingerprint = ""
        for fingerprint, _ in zip(self.prefix_fingerprints(), range(num_documents)):
            pass
        return fingerprint

    def extends(self, other: Corpus) -> bool:
        """Whether ``other``'s documents are this corpus's first documents, in order (``other`` may equal it)."""
        return len(other) <= len(self) and self.prefix_fingerprint(len(other)) == other.fingerprint

    def add(self, documents: Iterable[Any]) -> Corpus:
        """A new corpus: these documents, then ``documents`` (a corpus is immutable, so its fingerprint stays valid).

        ``documents`` are taken as :meth:`from_documents` takes them (plain strings get the ids
        ``len(self)``, ``len(self) + 1``, ...). Indexes of the grown corpus reuse this corpus's
        cached index and add a segment holding only the new documents' chunks.
        """
        added = [_as_document(d, len(self) + i) for i, d in enumerate(documents)]
        if not added:
            raise CorpusError("Nothing to add: give at least one document.")
        return Corpus(self.documents + tuple(added))

    def rescan(self, path: str | Path, *, show_progress: bool = False) -> Corpus:
        """The folder ``path`` read again, with this corpus's documents first: files not in it are appended.

        The documents of this corpus keep their places when every one of them is read back
        unchanged (same id, title and text), so the result :meth:`extends` this corpus and its
        indexes grow by a segment. When one was edited or removed, the folder is read as
        :meth:`from_path` reads it (sorted path order): a new corpus, indexed from scratch.
        """
        from retrieval.readers import read_path  # heavy: LlamaIndex's file readers

        fresh = read_path(Path(path), show_progress=show_progress)
        by_id = {d.doc_id: (d.title, d.text) for d in fresh}
        if any(by_id.get(d.doc_id) != (d.title, d.text) for d in self.documents):
            log.info("%s: a document of the corpus was edited or removed; reading it as a new corpus", path)
            return Corpus(fresh)
        known = {d.doc_id for d in self.documents}
        added = [d for d in fresh if d.doc_id not in known]
        return Corpus(self.documents + tuple(added)) if added else self


def _as_document(obj: Any, index: int) -> Document:
    if isinstance(obj, Document):
        return obj
    if isinstance(obj, str):
        return Document(doc_id=str(index), text=obj, title=f"Document {index + 1}")
    meta = dict(getattr(obj, "metadata", None) or {})
    if isinstance(getattr(obj, "page_content", None), str):
        text = obj.page_content
    elif isinstance(getattr(obj, "text", None), str):
        text = obj.text
    else:
        raise CorpusError(
            f"Document {index} is a {type(obj).__name__}; expected retrieval.Document, a str, "
            "or an object with .text (LlamaIndex) or .page_content (LangChain)."
        )
    title = str(meta.get("title") or meta.get("file_name") or f"Document {index + 1}")
    doc_id = str(getattr(obj, "id_", None) or getattr(obj, "id", None) or meta.get("doc_id") or index)
    return Document(doc_id=doc_id, text=text, title=title, metadata=meta)


# -- question -------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Protocol:
    """What a benchmark's official code sends for one item; every strategy follows it.

    A benchmark loader attaches one to each question, so strategies honour the protocol
    without knowing the benchmark: the final call of every strategy uses
    ``max_new_tokens`` (intermediate calls keep the strategy's own budgets); the
    full-context baseline sends ``prompt()`` middle-truncated to the input budget; RAG
    with ``assembly="benchmark"`` fills ``prompt(context)`` or ``rag_prompt(chunks)``.

    Attributes:
        benchmark: The benchmark's registry name.
        max_new_tokens: The official answer budget (LongBench ``dataset2maxlen``, ...).
        max_input_tokens: An absolute input budget of the official loop (LongBench v2
            ``model2maxlen``: 120,000), capped by the model's own window.
        window_reserve: Tokens the official loop keeps free of the model window for the
            answer (LongBench v1 / LV-Eval ``model2maxlen`` = window - 500).
        temperature: The official sampling temperature of the final call (``None``: the strategy's).
        chat_template: ``False`` where the official loop sends a raw completion (LongBench v1
            trec, triviaqa, samsum, lsht, lcc, repobench-p); chat endpoints still get one user message.
        stop: Stop sequences of the official final call (LongBench v1 samsum: ``"\n"``, its
            ``eos_token_id`` list); ``None``: none.
        prompt: ``prompt(context=None) -> str``, the official prompt around ``context``
            (``None``: the item's own full context).
        rag_prompt: ``rag_prompt(chunks) -> str``, the official RAG prompt around retrieved chunks.
        reasoning_max_new_tokens: Budget of the official prompt's call when ``answer_prompt`` follows
            it (LongBench v2 CoT: 1,024); ``max_new_tokens`` is then the answer call's.
        answer_prompt: ``answer_prompt(reasoning) -> str``, the official second call around the first
            reply (LongBench v2 CoT ``0shot_cot_ans.txt``), whose reply is scored. Strategies that send
            the benchmark's own prompt (full context, RAG's ``benchmark`` assembly, Self-Route) make it.
        rag_order: The chunk order of the official RAG prompt, which RAG's ``benchmark`` assembly
            follows: ``"document"`` (LongBench v2 ``pred.py --rag`` sorts by ``c_idx``); ``None``:
            the strategy's own ``order``.
    """

    benchmark: str
    max_new_tokens: int | None = None
    max_input_tokens: int | None = None
    window_reserve: int | None = None
    temperature: float | None = None
    chat_template: bool = True
    stop: tuple[str, ...] | None = None
    rag_order: Literal["document", "rank"] | None = None
    reasoning_max_new_tokens: int | None = None
    prompt: Callable[..., str] | None = field(default=None, repr=False, compare=False)
    rag_prompt: Callable[[Sequence[str]], str] | None = field(default=None, repr=False, compare=False)
    answer_prompt: Callable[[str], str] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The protocol's settings, JSON-ready (the prompt builders are named, not dumped)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("prompt", "rag_prompt", "answer_prompt")}
        return data | {
            "official_prompt": self.prompt is not None,
            "official_rag_prompt": self.rag_prompt is not None,
            "official_answer_prompt": self.answer_prompt is not None,
        }


@dataclass(frozen=True, kw_only=True)
class Question:
    """A question, optionally multiple-choice, with the output format the benchmark wants.

    Attributes:
        text: The question itself.
        choices: Multiple-choice options keyed by letter, e.g. ``{"A": "...", "B": "..."}``.
        instruction: Output-format instruction set by the benchmark (e.g. ``Format your
            response as follows: "The correct answer is (insert answer here)".``); strategies
            append it verbatim and never invent their own when it is given.
        metadata: Free-form fields (sample id, benchmark) carried into traces.
        protocol: The benchmark's official settings for this item (``None`` outside benchmarks).
    """

    text: str
    choices: Mapping[str, str] | None = None
    instruction: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    protocol: Protocol | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or not self.text.strip():
            raise ValueError("The question is empty.")

    def render(self) -> str:
        """The question text followed by its lettered choices, if any."""
        if not self.choices:
            return self.text
        options = "\n".join(f"({letter}) {option}" for letter, option in self.choices.items())
        return f"{self.text}\nChoices:\n{options}"

    def answer_budget(self, default: int) -> int:
        """Max new tokens of a strategy's final call: the protocol's, else ``default``."""
        return self.protocol.max_new_tokens if self.protocol and self.protocol.max_new_tokens else default

    def answer_temperature(self, default: float) -> float:
        """Temperature of a strategy's final call: the protocol's, else ``default``."""
        return self.protocol.temperature if self.protocol and self.protocol.temperature is not None else default

    def answer_stop(self) -> list[str] | None:
        """Stop sequences of a strategy's final call: the protocol's, else none."""
        return list(self.protocol.stop) if self.protocol and self.protocol.stop else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "text": self.text,
            "choices": dict(self.choices) if self.choices else None,
            "instruction": self.instruction,
            "metadata": dict(self.metadata),
            "protocol": self.protocol.to_dict() if self.protocol else None,
        }


def as_question(question: str | Question) -> Question:
    """Accept a plain string or a :class:`Question` at the API boundary."""
    if isinstance(question, Question):
        return question
    if isinstance(question, str):
        return Question(text=question)
    raise TypeError(f"question must be a str or Question, got {type(question).__name__}")


# -- answer ---------------------------------------------------------------------------
@dataclass
class Usage:
    """What an answer cost; the one usage schema (answers, graph states, result rows).

    Attributes:
        llm_calls: Chat-model calls that returned.
        failed_calls: Chat-model calls that raised (after the client's own retries).
        prompt_tokens: Input tokens as reported by the model (or counted, see ``estimated``).
        completion_tokens: Output tokens as reported by the model (or counted).
        seconds: The answer's own wall time, retrieval included, waiting for a model shared
            with concurrent answers excluded (a batch's time is shared out over its answers,
            so sums over answers add up to the batch).
        index_seconds: Part of ``seconds`` spent building or loading the index.
        queued_seconds: Wall time spent waiting for a model busy with other answers (the
            embedded model serves one call at a time); not part of ``seconds``.
        estimated: True when some call reported no usage and its tokens were counted.
        cached_calls: Calls answered from the on-disk LLM cache (free: not in the other counts).
    """

    llm_calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    index_seconds: float = 0.0
    estimated: bool = False
    cached_calls: int = 0
    queued_seconds: float = 0.0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        """Field-wise sum (``estimated`` if either is)."""
        return Usage(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self) if f.name != "estimated"},
            estimated=self.estimated or other.estimated,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with ``total_tokens``."""
        return {**asdict(self), "total_tokens": self.total_tokens}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        """The inverse of :meth:`to_dict` (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in names})


class Step(dict):
    """One graph node's record in ``Answer.steps``: ``{"node": <graph node name>, **facts}``.

    A dict, so it is JSON as it stands and survives checkpoints; the node name is
    required and always the graph node that wrote it (``retrieve``, ``update_memory``,
    ``route``, ...), so a reader filters steps by ``step.node``.
    """

    def __init__(self, node: str | Mapping[str, Any] | Iterable[tuple[str, Any]], /, **facts: Any):
        if isinstance(node, str):
            super().__init__(node=node, **facts)
        else:  # a mapping or key/value pairs, as dict() takes (copies, dataclasses.asdict)
            super().__init__(node, **facts)
        if not isinstance(self.get("node"), str) or not self["node"]:
            raise ValueError(f"A step needs the name of the graph node that wrote it, got {dict(self)!r}")

    @property
    def node(self) -> str:
        """The graph node that wrote this step."""
        return self["node"]

    @classmethod
    def coerce(cls, data: Mapping[str, Any]) -> Step:
        """A :class:`Step` from a mapping with a ``node`` key (checkpoints give plain dicts back)."""
        return data if isinstance(data, Step) else cls(data)


@dataclass(frozen=True)
class Evidence:
    """A piece of the corpus the answer was based on."""

    doc_id: str
    title: str
    text: str
    score: float | None = None
    chunk_id: int | None = None
    rank: int | None = None


@dataclass
class Answer:
    """The result of ``agents.answer``: the same for every strategy.

    Attributes:
        answer: Final answer text (the model's reply, stripped; benchmarks extract their format).
        raw: The text a benchmark scores: the model's final reply (a multi-step strategy's
            final call only, never its transcript), or, where the strategy's own paper defines
            how its reply is read (MemAgent's "the answer is" extraction), what that keeps; the
            whole reply is then in the last step's ``reply``.
        evidence: What the answer was based on, best first.
        usage: Calls, tokens and seconds of this answer alone.
        steps: One :class:`Step` per graph node that ran (retrievals, routes, memories...).
        strategy: Registry name of the strategy that answered.
        question: The question as asked.
        config: The effective strategy config (preset, model, secrets redacted).
        messages: The messages of the answer's last model call (``role``, ``content``; each
            content kept up to 24,000 characters, head and tail): the prompt that produced it.
            Empty for batched strategies (MemAgent's final prompts are in its steps).
        stopped: Why the run stopped before finishing, or ``None`` when it finished:
            ``"budget"`` when it reached its :class:`~graphs.budget.Budget` (the answer then
            holds what was done; MemAgent's checkpoint is kept, so a larger budget resumes).
    """

    answer: str
    raw: str
    evidence: list[Evidence]
    usage: Usage
    steps: list[Step]
    strategy: str
    question: Question
    config: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, str]] = field(default_factory=list)
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (for result files)."""
        return {
            "answer": self.answer,
            "raw": self.raw,
            "evidence": [asdict(e) for e in self.evidence],
            "usage": self.usage.to_dict(),
            "steps": [dict(s) for s in self.steps],
            "strategy": self.strategy,
            "question": self.question.to_dict(),
            "config": self.config,
            "messages": self.messages,
            "stopped": self.stopped,
        }
