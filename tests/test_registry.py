import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from longctx.graphs import STRATEGIES
from longctx.retrieval import RETRIEVERS, Registry, make_retriever
from longctx.retrieval.contract import registry as registry_module


def test_register_and_get():
    reg = Registry("thing")
    reg.register("a", 1)

    @reg.register("b")
    def b():
        return 2

    assert reg.get("a") == 1 and reg.get("b") is b
    assert reg.names() == ["a", "b"] and "a" in reg and len(reg) == 2


def test_collision_raises_but_reregistering_same_object_is_fine():
    reg = Registry("thing")
    obj = object()
    reg.register("a", obj)
    reg.register("a", obj)
    with pytest.raises(ValueError, match="already registered"):
        reg.register("a", object())


def test_unknown_name_suggests_close_matches():
    with pytest.raises(KeyError, match="Did you mean: bm25"):
        RETRIEVERS.get("bm52")
    with pytest.raises(KeyError, match="Available: full_context, .*rag"):
        STRATEGIES.get("zzz")


def test_builtin_registries():
    assert {"bm25", "dense", "contriever", "openai"} <= set(RETRIEVERS)
    assert {"rag", "full_context"} <= set(STRATEGIES)


def test_unknown_retriever_option_lists_valid_ones():
    with pytest.raises(TypeError, match="valid: \\['b', 'engine', 'k1'\\]"):
        make_retriever("bm25", modle="x")


def test_strategy_config_rejects_typos_with_hint():
    with pytest.raises(TypeError, match="did you mean 'top_k'"):
        STRATEGIES.get("rag").make_config(topk=3)


def test_strategy_presets():
    rag = STRATEGIES.get("rag")
    cfg = rag.make_config("longbench-500x3")
    assert (cfg.chunk_size, cfg.top_k, cfg.chunk_unit) == (500, 3, "words")
    assert rag.make_config().chunk_size == 200 and rag.make_config().top_k == 7
    with pytest.raises(KeyError, match="no preset"):
        rag.make_config("nope")


def _module(tmp_path, monkeypatch, name: str, source: str) -> None:
    """A module ``name`` on ``sys.path`` that nothing has imported yet."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_a_lazy_target_is_imported_on_the_first_lookup_of_its_name(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "lazy_things", "THING = {'made': True}\n")
    reg = Registry("thing")
    reg.register("t", target="lazy_things:THING", colour="red")
    assert reg.names() == ["t"] and "t" in reg and reg.declared("t") == {"colour": "red"}
    assert "lazy_things" not in sys.modules  # listed, checked and described without importing it
    reg.check("t")
    with pytest.raises(KeyError, match="Did you mean: t"):
        reg.check("tt")
    assert "lazy_things" not in sys.modules
    assert reg.get("t") == {"made": True} and "lazy_things" in sys.modules


def test_a_declared_name_is_fulfilled_by_the_decorator_its_module_runs(tmp_path, monkeypatch):
    """The target's module registers the entry itself (the decorator form); declared attributes
    must agree."""
    _module(
        tmp_path,
        monkeypatch,
        "lazy_plugin",
        "from tests.test_registry import PLUGINS\n\n"
        "@PLUGINS.register('p', size=3)\ndef build():\n    return 'built'\n",
    )
    with PLUGINS.scoped("p", target="lazy_plugin:build", size=3):
        entry = PLUGINS.get("p")
        assert entry.obj() == "built" and entry.size == 3
    assert "p" not in PLUGINS
    wrong = Registry("thing", make_entry=_Sized)
    wrong.register("q", target="x:y", size=4)
    with pytest.raises(ValueError, match="declares size=4, its entry has 3"):
        wrong.register("q", lambda: None, size=3)


@dataclass(frozen=True)
class _Sized:
    name: str
    obj: object
    size: int


PLUGINS: Registry[_Sized] = Registry("plugin", make_entry=_Sized)


def test_a_frozen_registry_refuses_new_names_but_loads_declared_ones(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "frozen_things", "THING = 1\n")
    reg = Registry("thing")
    reg.register("declared", target="frozen_things:THING")
    reg.freeze()
    with pytest.raises(RuntimeError, match="frozen: cannot register 'new'"):
        reg.register("new", 2)
    with pytest.raises(RuntimeError, match="frozen"):
        reg.register("new", target="frozen_things:THING")
    assert reg.get("declared") == 1


def test_a_scoped_registration_is_undone_on_exit_even_when_frozen():
    reg = Registry("thing")
    reg.register("kept", 1)
    reg.freeze()
    with reg.scoped("temporary", 2) as entry:
        assert entry == 2 and reg.get("temporary") == 2 and reg.names() == ["kept", "temporary"]
        reg.register("inside", 3)  # anything registered in the block goes too
    assert reg.names() == ["kept"]
    with pytest.raises(RuntimeError):
        reg.register("temporary", 2)  # frozen again


def test_plugin_toml_files_declare_the_entries_of_a_package_and_its_subpackages(
    tmp_path, monkeypatch
):
    root = tmp_path / "toy_kinds"
    (root / "inner").mkdir(parents=True)
    (root / "__init__.py").write_text(
        "raise AssertionError('declarations are read without importing the package')\n"
    )
    (root / "plugin.toml").write_text(
        '[things]\nplain = "toy_kinds_impl:PLAIN"\n[others]\nnot_ours = "x:y"\n'
    )
    (root / "inner" / "plugin.toml").write_text(
        '[things.rich]\ntarget = "toy_kinds_impl:RICH"\nlarge = true\n'
    )
    _module(tmp_path, monkeypatch, "toy_kinds_impl", "PLAIN, RICH = 'plain', 'rich'\n")
    reg = Registry("thing", group="toy.things", packages=("toy_kinds",))
    assert (
        reg.names() == ["plain", "rich"]
        and reg.declared("rich") == {"large": True}
        and reg.declared("plain") == {}
    )
    assert "toy_kinds" not in sys.modules and "toy_kinds_impl" not in sys.modules
    assert (reg.get("plain"), reg.get("rich")) == ("plain", "rich")


def test_every_builtin_strategy_and_retriever_is_declared_as_its_module_registers_it():
    """Each ``plugin.toml`` names the target that registers the name, with the ``uses_index`` its
    entry has."""
    for name in STRATEGIES.names():
        spec = STRATEGIES.get(name)
        assert STRATEGIES.declared(name)["uses_index"] == spec.uses_index and spec.name == name
    assert {"bm25", "dense", "contriever", "openai", "hybrid"} <= set(RETRIEVERS.names())
    assert all(callable(RETRIEVERS.get(n)) for n in RETRIEVERS.names())


def test_metric_versions_are_every_metric_module_version():
    from longctx.experiments import metrics
    from longctx.experiments.metrics import VERSIONS, text

    modules = {p.stem for p in Path(metrics.__file__).parent.glob("*.py")} - {
        "__init__",
        "registry",
    }
    assert set(VERSIONS) == modules and VERSIONS["text"] == text.VERSION


class _WatchedLock:
    """A re-entrant lock that reports when the thread called ``name`` starts waiting for it."""

    def __init__(self, name: str):
        self.lock, self.name, self.asked = threading.RLock(), name, threading.Event()

    def __enter__(self):
        if threading.current_thread().name == self.name:
            self.asked.set()
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


def test_a_lookup_while_another_thread_reads_the_declarations_waits_for_them(tmp_path, monkeypatch):
    """Two threads' first lookups at once: the second waits for the first's reading (it saw an
    empty registry, 'Unknown strategy 'rag'. Available: ', when the reading was not locked)."""
    (tmp_path / "race_kinds").mkdir()
    (tmp_path / "race_kinds" / "plugin.toml").write_text('[things]\nplain = "race_impl:PLAIN"\n')
    _module(tmp_path, monkeypatch, "race_impl", "PLAIN = 'plain'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = Registry("thing", group="toy.things", packages=("race_kinds",))
    reg._lock = watched = _WatchedLock("second")  # the test sees the second lookup reach the lock
    reading, done = threading.Event(), threading.Event()
    real_files = registry_module.declaration_files

    def held_files(packages):  # the first reader is held mid-reading until the second has asked
        reading.set()
        while not (watched.asked.is_set() or done.is_set()):
            done.wait(0.01)
        return real_files(packages)

    monkeypatch.setattr(registry_module, "declaration_files", held_files)
    results: dict[str, object] = {}

    def look_up():
        try:
            results[threading.current_thread().name] = reg.get("plain")
        except KeyError as exc:
            results[threading.current_thread().name] = exc
        finally:
            if threading.current_thread().name == "second":
                done.set()

    first = threading.Thread(target=look_up, name="first")
    first.start()
    reading.wait()
    second = threading.Thread(target=look_up, name="second")
    second.start()
    first.join()
    second.join()
    assert results == {"first": "plain", "second": "plain"}


def test_the_tests_built_in_names_leave_out_an_installed_plugin(monkeypatch):
    """``tests.registries.built_in``, behind the tests of every strategy, lists the library's
    own names only."""
    from importlib import metadata

    from tests.registries import built_in

    plugin = metadata.EntryPoint("echo", "echo_strategy", "longctx.things")
    monkeypatch.setattr(
        metadata, "entry_points", lambda group=None: [plugin] if group == "longctx.things" else []
    )
    things: Registry = Registry("thing", group="longctx.things")
    things.register("ours")(object())
    assert things.names() == ["echo", "ours"] and built_in(things) == ["ours"]
