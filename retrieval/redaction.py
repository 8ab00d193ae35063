"""The one redaction every string goes through before it leaves the process (files, rows, terminal).

Why: a provider's error body may echo the request's ``Authorization`` header, and a base URL
may carry credentials (``http://user:KEY@host/v1?api_key=KEY2``); either would otherwise be
written verbatim into results, manifests, reports, checkpoints and stderr.

:func:`redact` removes

* every known secret, wherever it appears: values of environment variables named like
  secrets (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD*``), credentials inside URLs
  held by environment variables, and each value :func:`register_secret` /
  :func:`register_url` / :func:`register_options` were given by the code that uses it (chat
  model and embedder keys and base URLs, secret-named strategy options);
* credentials of any URL: its userinfo (``user:pass@``) and query parameters named like keys;
* the generic shapes of an echoed ``Authorization`` header, ``Bearer <token>`` and ``sk-...``.

:func:`redact_value` applies it to every string of a nested structure (and, for configs,
blanks the values of secret-named keys: ``api_key``, ``password``, ...).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import traceback
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

REDACTED = "***"
#: Names (option keys, environment variables, query parameters) whose values are secrets.
SECRET_NAME = re.compile(
    r"(api[_-]?key|secret|password|passwd|authorization|bearer|access[_-]?token|auth[_-]?token"
    r"|(^|_)key$)",
    re.I,
)
#: Query parameters whose values are credentials (besides those :data:`SECRET_NAME` matches).
_QUERY_SECRET = (
    r"(?:[a-z0-9_.-]*(?:key|token|secret|password|passwd|sig|signature|auth|credential)"
    r"[a-z0-9_.-]*|code)"
)
#: Shorter values are not treated as secrets (a one-letter key would blank every such letter).
MIN_SECRET_LENGTH = 6
#: Placeholders the library itself sends to servers that need no key.
_PLACEHOLDERS = frozenset({"not-needed", "unused", "EMPTY", "none", "None"})

_PATTERNS = (
    (
        re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]*@"),
        rf"\1{REDACTED}@",
    ),  # URL userinfo
    (
        re.compile(rf"(?i)([?&;]{_QUERY_SECRET}=)[^&#\s\"'<>]*"),
        rf"\1{REDACTED}",
    ),  # credential query parameters
    # an Authorization header's value as a server echoes it ("Authorization: Basic ...",
    # {"authorization": "..."})
    (
        re.compile(
            r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token)\s+)?)[^\s\"',;}]+"
        ),
        rf"\1{REDACTED}",
    ),
    (
        re.compile(r"\b(Bearer\s+)[A-Za-z0-9._~+/=-]{6,}"),
        rf"\1{REDACTED}",
    ),  # a bearer token anywhere
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), f"sk-{REDACTED}"),  # OpenAI-style keys
)

_registered: set[str] = set()
_lock = threading.Lock()
_compiled: tuple[frozenset[str], re.Pattern[str] | None] = (frozenset(), None)


def _usable(value: Any) -> bool:
    return (
        isinstance(value, str)
        and len(value.strip()) >= MIN_SECRET_LENGTH
        and value not in _PLACEHOLDERS
    )


def register_secret(value: Any) -> None:
    """Redact ``value`` (a key, token or password) from every string from now on in this process."""
    if _usable(value):
        with _lock:
            _registered.add(value.strip())


def url_secrets(url: Any) -> list[str]:
    """Credentials inside ``url``: its userinfo's user and password, and key-like query values."""
    if not isinstance(url, str) or "://" not in url:
        return []
    try:
        parts = urllib.parse.urlsplit(url.strip())
        found = [parts.username, parts.password]
        found += [
            v
            for k, v in urllib.parse.parse_qsl(parts.query)
            if re.fullmatch(_QUERY_SECRET, k, re.I) or SECRET_NAME.search(k)
        ]
    except ValueError:
        return []
    out = []
    for value in found:
        if value:
            out += [value, urllib.parse.unquote(value), urllib.parse.quote(value, safe="")]
    return [v for v in dict.fromkeys(out) if _usable(v)]


def register_url(url: Any) -> None:
    """Redact the credentials inside ``url`` (see :func:`url_secrets`) from now on."""
    for value in url_secrets(url):
        register_secret(value)


def register_options(options: Any) -> None:
    """Register the values of secret-named keys of a (nested) mapping, and credentials
    of its URLs."""
    if isinstance(options, Mapping):
        for key, value in options.items():
            if isinstance(key, str) and SECRET_NAME.search(key) and isinstance(value, str):
                register_secret(value)
            else:
                register_options(value)
    elif isinstance(options, (list, tuple)):
        for value in options:
            register_options(value)
    elif isinstance(options, str):
        register_url(options)


def _environment_secrets(environ: Mapping[str, str]) -> Iterable[str]:
    for name, value in environ.items():
        if SECRET_NAME.search(name) or name.upper().endswith(("_TOKEN", "_SECRET", "_PASSWORD")):
            if _usable(value):
                yield value.strip()
        elif "://" in value:
            yield from url_secrets(value)


def known_secrets() -> frozenset[str]:
    """Every secret :func:`redact` removes literally: the environment's and the registered ones."""
    with _lock:
        registered = set(_registered)
    return frozenset(registered | set(_environment_secrets(os.environ)))


def _literal_pattern() -> re.Pattern[str] | None:
    global _compiled
    secrets = known_secrets()
    cached_for, pattern = _compiled
    if secrets != cached_for:
        ordered = sorted(
            secrets, key=len, reverse=True
        )  # a key containing another is removed whole
        pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        _compiled = (secrets, pattern)
    return pattern


def redact(text: Any) -> Any:
    """``text`` with every known secret and credential shape replaced by ``***``
    (non-strings unchanged)."""
    return _redact(text, _literal_pattern())


def _redact(text: Any, pattern: re.Pattern[str] | None) -> Any:
    if not isinstance(text, str) or not text:
        return text
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    for shape, replacement in _PATTERNS:
        text = shape.sub(replacement, text)
    return text


def redact_value(value: Any, *, by_name: bool = False) -> Any:
    """``value`` with :func:`redact` applied to every string (keys too) of nested mappings,
    lists and tuples; with ``by_name`` (configs), the value of every secret-named key is
    replaced by ``***`` too. A long string held many times over (one SQL cell in every step)
    is redacted once."""
    return _Walk(_literal_pattern(), by_name).walk(value)


class _Walk:
    """One :func:`redact_value` pass: the redacted text of each long string, by the string's id."""

    #: Strings at least this long are redacted once per pass however often they recur.
    LONG = 256

    def __init__(self, pattern: re.Pattern[str] | None, by_name: bool):
        self.pattern, self.by_name = pattern, by_name
        self.done: dict[
            int, tuple[str, str]
        ] = {}  # id -> (the string, kept alive so its id stays its own; its redaction)

    def walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {
                self.text(k): (
                    REDACTED
                    if self.by_name and isinstance(k, str) and SECRET_NAME.search(k) and v
                    else self.walk(v)
                )
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.walk(v) for v in value)
        return value

    def text(self, value: Any) -> Any:
        if not isinstance(value, str) or len(value) < self.LONG:
            return _redact(value, self.pattern)
        known = self.done.get(id(value))
        if known is None:
            known = self.done[id(value)] = (value, _redact(value, self.pattern))
        return known[1]


class RedactingStream:
    """A text stream (``sys.stdout``/``sys.stderr``) whose writes go through :func:`redact`."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _redacting_excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    stream = sys.__stderr__  # None only without a console (pythonw): nowhere to write
    if stream is not None:
        stream.write(redact("".join(traceback.format_exception(kind, value, tb))))


@contextlib.contextmanager
def redacted_terminal() -> Iterator[None]:
    """Send everything written to ``sys.stdout`` / ``sys.stderr`` (prints, logging, warnings,
    progress bars) through :func:`redact` for the ``with`` block, and the traceback of an
    exception that ends the process too (the command-line entry point runs inside this)."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
    sys.excepthook = _redacting_excepthook
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


__all__ = [
    "REDACTED",
    "RedactingStream",
    "SECRET_NAME",
    "known_secrets",
    "redact",
    "redact_value",
    "redacted_terminal",
    "register_options",
    "register_secret",
    "register_url",
    "url_secrets",
]
