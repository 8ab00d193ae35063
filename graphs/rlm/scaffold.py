"""The RLM scaffold as Python source, run in the REPL with ``run_silently`` so it is the same in
every REPL kind (the jailed worker and the unsafe in-process one), with no ``exec``, ``eval``,
``compile`` or ``globals`` (which the official REPL, and the jail with it, block) and no import
beyond ``json``.

It keeps the official ``LocalREPL``'s namespace semantics (alexzhang13/rlm @ 72d6940,
``rlm/environments/local_repl.py``; the ``paper`` preset: @ a30805b): the helpers (``llm_query``,
``SHOW_VARS``...) and the variables (``answer``, ``context_0`` / ``context``, the model's) are
kept apart; each cell runs in the REPL's namespace reset to exactly those two (so names the model
gave the helpers, or that start with ``_``, do not outlive the cell); a cell's new public names
become variables only when it finishes without an exception (a cell that raises leaves none); the
exception reaches the model as ``"\\n<Type>: <message>"`` after what the cell wrote to stderr; the
reserved names are restored after each cell. Written for this project from that behaviour.

A cell (:func:`cell`) is the model's code indented into ``try`` / ``except Exception`` (lines that
begin inside a multi-line string are left as they are, so no string changes), between the reset
and the bookkeeping. Code that does not compile is not run: the host compiles it (no execution) to
give the official ``SyntaxError`` text (:func:`syntax_error`). The host reads what a cell left
(the final answer, the listed variables, the exception) with ``value(REPORT)``.

The host functions arrive as ``_rlm_host_<name>``; the model sees them under their official
names, each returning the official error text when the host call fails.
"""

from __future__ import annotations

import io
import tokenize

#: Builtins the model's code may not call (the official ``_SAFE_BUILTINS``' ``None`` entries);
#: the jail blocks the same ones, and in the in-process REPL the scaffold blocks them.
BLOCKED_BUILTIN_NAMES = ("input", "eval", "exec", "compile", "globals", "locals")

#: Names restored after each cell (official ``RESERVED_TOOL_NAMES``).
RESERVED_NAMES = (
    "llm_query",
    "llm_query_batched",
    "rlm_query",
    "rlm_query_batched",
    "SHOW_VARS",
    "answer",
    "context",
    "history",
)

#: The expression whose value (JSON) is what the last cell left: ``final`` (the answer text, or
#: ``None``), ``variables`` (the names the feedback lists) and ``error`` (the exception's text, or
#: ``None``). Reading it clears ``final`` and ``error``.
REPORT = "_rlm_report()"

_COMMON = '''
import json as _rlm_json


class _RlmState:
    pass


_rlm = _RlmState()
_rlm.N = vars()
_rlm.final = None
_rlm.error = None
_rlm.G = {}
_rlm.L = {}
_rlm_b = __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)
if _rlm_b.get("exec") is not None:  # the in-process REPL: block what the official REPL blocks
    _rlm.N["__builtins__"] = {**_rlm_b, **{n: None for n in %(blocked)r}}
del _rlm_b


class TextIOWrapper:
    """Stands in for the closed file ``f`` the official loader's ``with open(...) as f`` leaves
    among the variables (SHOW_VARS lists it)."""


_rlm_TextIOWrapper = TextIOWrapper
del TextIOWrapper


def _rlm_llm_query(prompt, model=None):
    try:
        return _rlm_host_llm_query(prompt, model)
    except Exception as e:
        return f"Error: LM query failed - {e}"


def _rlm_llm_query_batched(prompts, model=None):
    try:
        return _rlm_host_llm_query_batched(list(prompts), model)
    except Exception as e:
        return [f"Error: LM query failed - {e}"] * len(prompts)


def _rlm_listed(space):
    return [
        k
        for k, v in space.items()
        if not k.startswith("_")
        and k not in ("__builtins__", "__name__", "__doc__")
        and isinstance(v, (str, int, float, bool, list, dict, tuple))
    ]


def _rlm_report():
    final, _rlm.final = _rlm.final, None
    error, _rlm.error = _rlm.error, None
    return _rlm_json.dumps({"final": final, "variables": _rlm_listed(_rlm.L), "error": error})


def _rlm_pre():
    space = _rlm.N
    kept = ("__builtins__", "__name__")
    for k in [k for k in space if not k.startswith("_rlm") and k not in kept]:
        del space[k]
    space.update(_rlm.G)
    space.update(_rlm.L)


def _rlm_ok():
    for key, value in list(_rlm.N.items()):
        if key not in _rlm.G and not key.startswith("_"):
            _rlm.L[key] = value
    _rlm_restore()


def _rlm_failed(e):
    _rlm.error = f"\\n{type(e).__name__}: {e}"
'''

_CURRENT = """
class _AnswerDict(dict):
    def __init__(self, on_ready=None):
        super().__init__()
        super().__setitem__("content", "")
        super().__setitem__("ready", False)
        self._on_ready = on_ready

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if key == "ready" and value and self._on_ready is not None:
            try:
                self._on_ready(self.get("content", ""))
            except Exception:
                pass


_rlm_AnswerDict = _AnswerDict
del _AnswerDict


def _rlm_capture(content):
    _rlm.final = str(content)


def _rlm_show_vars():
    available = {
        k: type(v).__name__ for k, v in _rlm.L.items() if not k.startswith("_") and k != "answer"
    }
    if not available:
        return "No variables created yet. Use ```repl``` blocks to create variables."
    return f"Available variables: {available}"


def _rlm_rlm_query(prompt, model=None):
    try:
        return _rlm_host_rlm_query(prompt, model)
    except Exception as e:
        return f"Error: RLM query failed - {e}"


def _rlm_rlm_query_batched(prompts, model=None):
    try:
        return _rlm_host_rlm_query_batched(list(prompts), model)
    except Exception as e:
        return [f"Error: RLM query failed - {e}"] * len(prompts)


_rlm.G.update(
    {
        "SHOW_VARS": _rlm_show_vars,
        "llm_query": _rlm_llm_query,
        "llm_query_batched": _rlm_llm_query_batched,
        "rlm_query": _rlm_rlm_query,
        "rlm_query_batched": _rlm_rlm_query_batched,
    }
)
_rlm.L["answer"] = _rlm_AnswerDict(on_ready=_rlm_capture)


def _rlm_restore():
    current = _rlm.L.get("answer")
    if not isinstance(current, _rlm_AnswerDict):
        replacement = _rlm_AnswerDict(on_ready=_rlm_capture)
        if isinstance(current, dict):
            for k, v in current.items():
                dict.__setitem__(replacement, k, v)
            if current.get("ready") and _rlm.final is None:
                _rlm.final = str(current.get("content", ""))
        _rlm.L["answer"] = replacement
    if "context_0" in _rlm.L:
        _rlm.L["context"] = _rlm.L["context_0"]
    if "history_0" in _rlm.L:
        _rlm.L["history"] = _rlm.L["history_0"]


def _rlm_load_context(index, value):
    if not isinstance(value, str):
        _rlm.L["json"] = _rlm_json
    _rlm.L["f"] = _rlm_TextIOWrapper()
    _rlm.L[f"context_{index}"] = value
    _rlm_restore()
    if index == 0:
        _rlm.L["context"] = _rlm.L["context_0"]
"""

_PAPER = """
def _rlm_final_var(variable_name):
    variable_name = variable_name.strip().strip("\\"'")
    if variable_name in _rlm.L:
        return str(_rlm.L[variable_name])
    return f"Error: Variable '{variable_name}' not found"


_rlm.G.update(
    {
        "FINAL_VAR": _rlm_final_var,
        "llm_query": _rlm_llm_query,
        "llm_query_batched": _rlm_llm_query_batched,
    }
)


def _rlm_restore():
    pass


def _rlm_load_context(index, value):
    if not isinstance(value, str):
        _rlm.L["json"] = _rlm_json
    _rlm.L["f"] = _rlm_TextIOWrapper()
    _rlm.L["context"] = value
"""


def scaffold_source(protocol: str) -> str:
    """The scaffold for ``protocol`` (``"answer_dict"``: 72d6940; ``"final"``: the paper's)."""
    body = _CURRENT if protocol == "answer_dict" else _PAPER
    return _COMMON % {"blocked": BLOCKED_BUILTIN_NAMES} + body


def tools_source(names: list[str]) -> str:
    """Binds each custom tool (a host function ``_rlm_host_<name>``) among the helpers, as the
    official ``custom_tools`` puts a callable among the globals."""
    return "".join(f"_rlm.G[{n!r}] = _rlm_host_{n}\n" for n in names)


def load_source(binding: str) -> str:
    """Loads the bound context (``binding``, loaded once with the REPL) as ``context_0``."""
    return f"_rlm_load_context(0, {binding})\ndel {binding}\n"


def syntax_error(code: str) -> str | None:
    """The official error text of code that does not compile (``exec`` of the string raises
    before running anything: ``"\\nSyntaxError: <message> (<string>, line N)"``), else ``None``.
    Compiled in the host, never run."""
    try:
        compile(code, "<string>", "exec", dont_inherit=True)
    except SyntaxError as e:  # IndentationError and TabError are SyntaxErrors
        return f"\n{type(e).__name__}: {e}"
    except (ValueError, MemoryError, RecursionError) as e:  # null bytes, absurd nesting
        return f"\n{type(e).__name__}: {e}"
    return None


def _rows_inside_strings(code: str) -> set[int]:
    """1-based rows of ``code`` that begin inside a multi-line string (left unindented)."""
    rows: set[int] = set()
    opened: list[int] = []
    fstring_start = getattr(tokenize, "FSTRING_START", None)
    fstring_end = getattr(tokenize, "FSTRING_END", None)
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type == tokenize.STRING:
            rows.update(range(tok.start[0] + 1, tok.end[0] + 1))
        elif fstring_start is not None and tok.type == fstring_start:
            opened.append(tok.start[0])
        elif fstring_end is not None and tok.type == fstring_end and opened:
            rows.update(range(opened.pop() + 1, tok.end[0] + 1))
    return rows


def cell(code: str) -> str:
    """What ``execute`` runs for one ```repl``` block that compiles: the reset, the code inside
    ``try`` (each line indented unless it begins inside a string), then the bookkeeping."""
    inside = _rows_inside_strings(code)
    lines = code.split("\n")
    body = "\n".join(
        line if i in inside else "    " + line for i, line in enumerate(lines, start=1)
    )
    if not code.strip():
        body = "    pass"
    return (
        f"_rlm_pre()\ntry:\n{body}\n    pass\n"
        "except Exception as _rlm_e:\n    _rlm_failed(_rlm_e)\nelse:\n    _rlm_ok()\n"
    )
