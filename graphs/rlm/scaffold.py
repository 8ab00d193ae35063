"""The RLM scaffold as Python source, run in the REPL with ``run_silently`` so it is the same in
every REPL kind (the jailed worker and the unsafe in-process one).

It keeps the official ``LocalREPL``'s namespace semantics (alexzhang13/rlm @ 72d6940,
``rlm/environments/local_repl.py``; the ``paper`` preset: @ a30805b): a globals dict (restricted
builtins, the helpers) and a locals dict (the ``answer`` dict, ``context_0`` / ``context``, the
model's variables); each cell runs in a fresh merge of the two, its new public names are copied
back only when it finishes without an exception (a cell that raises leaves no new variables),
the exception reaches the model as ``"\\n<Type>: <message>"`` on stderr, and the reserved names
are restored after each cell. Written for this project from that behaviour; the host reads what a
cell left (the final answer, the listed variables) with ``value(REPORT)``.

The host functions arrive as ``_rlm_host_<name>``; the model sees them under their official
names, each returning the official error text when the host call fails.
"""

from __future__ import annotations

import json

#: The builtins the model's code gets (the official ``_SAFE_BUILTINS``: names kept; ``None``
#: for the six it blocks).
SAFE_BUILTIN_NAMES = (
    "print len str int float list dict set tuple bool type isinstance issubclass enumerate zip "
    "map filter sorted reversed range min max sum abs round any all pow divmod chr ord hex bin "
    "oct repr ascii format hash id iter next slice callable hasattr getattr setattr delattr dir "
    "vars bytes bytearray memoryview complex object super property staticmethod classmethod "
    "__import__ open Exception BaseException ValueError TypeError KeyError IndexError "
    "AttributeError FileNotFoundError OSError IOError RuntimeError NameError ImportError "
    "StopIteration AssertionError NotImplementedError ArithmeticError LookupError Warning"
).split()
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
#: ``None``) and ``variables`` (the names the feedback lists). Reading it clears ``final``.
REPORT = "_rlm_report()"

_COMMON = '''
import builtins as _rlm_builtins
import json as _rlm_json
import sys as _rlm_sys

class _RlmState:
    pass

_rlm = _RlmState()
_rlm.final = None
_rlm.G = {
    "__builtins__": {
        **{n: getattr(_rlm_builtins, n) for n in %(safe)r},
        **{n: None for n in %(blocked)r},
    },
    "__name__": "__main__",
}
_rlm.L = {}


class TextIOWrapper:
    """Stands in for the closed file ``f`` the official loader's ``with open(...) as f`` leaves
    among the variables (SHOW_VARS lists it)."""


def _rlm_host_call(name, fallback, *args):
    try:
        return globals()["_rlm_host_" + name](*args)
    except Exception as e:
        return fallback(e)


def _rlm_llm_query(prompt, model=None):
    return _rlm_host_call("llm_query", lambda e: f"Error: LM query failed - {e}", prompt, model)


def _rlm_llm_query_batched(prompts, model=None):
    return _rlm_host_call(
        "llm_query_batched",
        lambda e: [f"Error: LM query failed - {e}"] * len(prompts),
        list(prompts),
        model,
    )


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
    return _rlm_json.dumps({"final": final, "variables": _rlm_listed(_rlm.L)})


def _rlm_exec(code):
    combined = {**_rlm.G, **_rlm.L}
    try:
        exec(code, combined, combined)
        for key, value in combined.items():
            if key not in _rlm.G and not key.startswith("_"):
                _rlm.L[key] = value
        _rlm_restore()
    except Exception as e:
        _rlm_sys.stderr.write(f"\\n{type(e).__name__}: {e}")


def _rlm_run(code):
    """One cell of the model's code (what ``execute`` is given)."""
    _rlm_exec(code)
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
    return _rlm_host_call("rlm_query", lambda e: f"Error: RLM query failed - {e}", prompt, model)


def _rlm_rlm_query_batched(prompts, model=None):
    return _rlm_host_call(
        "rlm_query_batched",
        lambda e: [f"Error: RLM query failed - {e}"] * len(prompts),
        list(prompts),
        model,
    )


_rlm.helpers = {
    "SHOW_VARS": _rlm_show_vars,
    "llm_query": _rlm_llm_query,
    "llm_query_batched": _rlm_llm_query_batched,
    "rlm_query": _rlm_rlm_query,
    "rlm_query_batched": _rlm_rlm_query_batched,
}
_rlm.G.update(_rlm.helpers)
_rlm.L["answer"] = _AnswerDict(on_ready=_rlm_capture)


def _rlm_restore():
    _rlm.G.update(_rlm.helpers)
    current = _rlm.L.get("answer")
    if not isinstance(current, _AnswerDict):
        replacement = _AnswerDict(on_ready=_rlm_capture)
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
    _rlm.L["f"] = TextIOWrapper()
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


_rlm.G["FINAL_VAR"] = _rlm_final_var
_rlm.G["llm_query"] = _rlm_llm_query
_rlm.G["llm_query_batched"] = _rlm_llm_query_batched


def _rlm_restore():
    pass


def _rlm_load_context(index, value):
    if not isinstance(value, str):
        _rlm.L["json"] = _rlm_json
    _rlm.L["f"] = TextIOWrapper()
    _rlm.L["context"] = value
"""


def scaffold_source(protocol: str) -> str:
    """The scaffold for ``protocol`` (``"answer_dict"``: 72d6940; ``"final"``: the paper's)."""
    body = _CURRENT if protocol == "answer_dict" else _PAPER
    common = _COMMON % {"safe": tuple(SAFE_BUILTIN_NAMES), "blocked": BLOCKED_BUILTIN_NAMES}
    return common + body


def tools_source(names: list[str]) -> str:
    """Binds each custom tool (a host function ``_rlm_host_<name>``) among the globals, as the
    official ``custom_tools`` puts a callable."""
    return "".join(f"_rlm.G[{n!r}] = _rlm_host_{n}\n" for n in names)


def load_source(binding: str) -> str:
    """Loads the bound context (``binding``, loaded once with the REPL) as ``context_0``."""
    return f"_rlm_load_context(0, {binding})\ndel {binding}\n"


def cell(code: str) -> str:
    """What ``execute`` runs for one ```repl``` block."""
    return f"_rlm_run({json.dumps(code)})"
