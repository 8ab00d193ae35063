"""The strategy registry: name -> config class, graph builder, how it runs, presets.

Strategies register with the decorator every plug-in kind uses, on their graph builder::

    @STRATEGIES.register("rag", config_cls=RagConfig, uses_index=True, presets={...})
    def build_graph(config): ...

and declare the name in their package's ``plugin.toml``
(:mod:`longctx.graphs.plugin.strategy_registry`), so it is known, and its module imported on first
use, without any import line elsewhere. A third-party package adds one through the
``longctx.strategies`` entry-point group (its module registers on import, or the entry point names a
:class:`Strategy`).

Everything the library knows of a strategy is on its entry, declared in its own package: how it
runs, its cost model, how reports, plots and the demo show it (``presentation``) and the part of
its work that runs on Ray (``ray_stage``); no module outside ``graphs/<name>/`` names a strategy.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic

from longctx.graphs.calls.prompt_sharing import PromptSharing
from longctx.graphs.metering.costs import StrategyCosts
from longctx.graphs.plugin.answer_state import BatchAnswer
from longctx.graphs.plugin.ceiling import EvidenceCeiling
from longctx.graphs.plugin.config import ConfigError, ConfigT
from longctx.graphs.plugin.presentation import StrategyPresentation

# the registry object: light, so the CLI reads its names
from longctx.graphs.plugin.strategy_registry import STRATEGIES as STRATEGIES
from longctx.retrieval.contract import Question
from longctx.retrieval.contract.errors import OptionError, UnknownName
from longctx.retrieval.extras import Need


@dataclass(frozen=True)
class SingleRun:
    """The graph answers one question per invocation (``{"question": q}`` in, answer fields out).

    Attributes:
        async_fan_out: The graph fans out many model calls from native async nodes (PAI's
            judges): :func:`longctx.graphs.runtime.run.run_strategy` then drives it with ``ainvoke``
            when the model has an async client of its own, which sustains wider fan-outs per CPU
            cycle than threads over the sync client (``benchmarks/bench_pai.py``).
        on_stop: The strategy's final node after a budget stop: ``partial_state -> fields``
            (``answer``, ``raw``, ``hits``, ``evidence``, ``steps``) made of what the run gathered
            (:func:`longctx.graphs.calls.tool_loop.answer_so_far` for a tool loop's), with no model
            call (the guard refuses any: the budget is reached). ``None``: no answer; the steps,
            hits and evidence so far are kept either way
            (:mod:`longctx.graphs.metering.budget_stop`).
    """

    async_fan_out: bool = False
    on_stop: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None

    def __repr__(self) -> str:
        fields = [f"async_fan_out={self.async_fan_out}"] if self.async_fan_out else []
        if self.on_stop is not None:
            fields.append(f"on_stop={getattr(self.on_stop, '__name__', self.on_stop)}")
        return f"SingleRun({', '.join(fields)})"


@dataclass(frozen=True)
class BatchSettings:
    """What the batch runner reads of a batched strategy's config (:attr:`BatchRun.settings`),
    whatever the strategy's own option names are.

    Attributes:
        resume: Checkpoint every step on disk (in the run's own, locked folder) and resume an
            interrupted run, replay a finished one; ``False``: everything in memory.
        concurrency: Tasks in flight at once (LangGraph's ``max_concurrency``).
        answer_budget: The default answer budget in tokens; each question's own budget
            (``Question.answer_budget(answer_budget)``) is part of the run key.
        trace_chars: Characters of each trace snapshot kept in ``Answer.steps`` (``None``: all).
        continue_from_prefix: Start from the finished run over the longest earlier corpus this
            one extends (needs :attr:`BatchRun.continuation`).
    """

    resume: bool
    concurrency: int
    answer_budget: int
    trace_chars: int | None = None
    continue_from_prefix: bool = False


@dataclass(frozen=True)
class Continuation:
    """How a run over a grown corpus (``Corpus.add``) starts from the final state of the finished
    run over its longest earlier prefix, and reads only the documents added since.

    Attributes:
        option: The config field that turns it on (:attr:`BatchSettings.continue_from_prefix`);
            left out of the run key while off, so keys made before the option existed still hold,
            and a run made with it off is found as the earlier run too.
        carry: ``final_state -> state`` a continued run starts with (merged into its initial
            state), or ``None`` when the earlier run left nothing to carry on from.
        documents_key: State key where a continued run records how many documents it continued
            from, read back when it resumes or replays, so it reads the same documents.
    """

    option: str
    carry: Callable[[Mapping[str, Any]], Mapping[str, Any] | None]
    documents_key: str


@dataclass(frozen=True)
class BatchRun:
    """The graph answers many questions over one corpus in one checkpointed invocation.

    The run advances in steps (MemAgent: one chunk of the corpus for every question): each
    step is two LangGraph supersteps, the questions' tasks and then :attr:`advance_node`,
    whose update carries the index of the next step under :attr:`progress_key`.

    Attributes:
        prepare_context:
            ``(StrategyContext, *, trace, thread, questions, start_document=0) -> context`` with
            what the nodes need (e.g. the corpus cut into chunks, laid out for these questions);
            ``start_document``: only the documents from there on (a continued run).
        initial_state: ``(questions, context) -> state`` of a fresh run (the graph's state schema).
        collect: ``(final_state, i) -> {"raw", "answer", "usage", "final_step"}`` of question ``i``
            (``final_step``: facts added to the answer's last step).
        settings: ``config -> BatchSettings``: resume, concurrency, answer budget and trace
            length, read from the strategy's own config fields.
        step_sizes: ``context -> sizes`` of the prepared context's steps (tokens each): their
            number bounds the graph's recursion, their sizes drive the progress bar.
        advance_node: The node that closes a step for all questions.
        progress_key: The state key holding the index of the next step (where a run resumes).
        runtime_fields: Config fields that change how a run executes, not what it computes:
            kept out of its run key, so changing them resumes the same run.
        trace_step: The node name of the steps the run's trace snapshots become in ``Answer.steps``.
        continuation: How a run over a grown corpus continues an earlier one; ``None``: it cannot.
    """

    #: A batched run runs in a worker thread with its sync nodes (a SQLite checkpointer), never with
    #: ``ainvoke``.
    async_fan_out: ClassVar[bool] = False

    prepare_context: Callable[..., Any]
    initial_state: Callable[[list[Question], Any], Mapping[str, Any]]
    collect: Callable[[Any, int], BatchAnswer]
    settings: Callable[[Any], BatchSettings]
    step_sizes: Callable[[Any], Sequence[int]]
    advance_node: str
    progress_key: str
    runtime_fields: tuple[str, ...] = ()
    trace_step: str = "trace"
    continuation: Continuation | None = None


@dataclass(frozen=True)
class RayStage:
    """A part of a strategy's own work that runs as Ray tasks (e.g. an extraction over every
    document).

    Attributes:
        options: ``address -> config options`` that put the stage on Ray (``longctx answer --ray``;
            ``address`` ``None``: ``$RAY_ADDRESS`` or a new local instance).
        spread: ``(options, endpoints) -> options`` spreading the stage's calls over several servers
            of one model (``longctx run --ray --endpoints``); options that keep the stage local come
            back as they are.
    """

    options: Callable[[str | None], Mapping[str, Any]]
    spread: Callable[[Mapping[str, Any], Sequence[str]], Mapping[str, Any]]


@dataclass(frozen=True)
class Strategy(Generic[ConfigT]):
    """A registered strategy, generic in its config class (``Strategy[RagConfig]``): what reads its
    config (the run path, its cost model, its presets) is type-checked against that class.

    Attributes:
        name: Registry name used by ``answer(strategy=...)`` and the CLI.
        build_graph: ``config -> compiled LangGraph`` (dependencies come in the run context; a
            batched strategy's also takes ``checkpointer=``).
        config_cls: Frozen, validated dataclass whose defaults are the paper's numbers.
        uses_index: Whether the strategy needs a retrieval index built before it runs.
        run_mode: How it runs: :class:`SingleRun` (default) or a :class:`BatchRun`.
        presets: Named configs (``paper`` reproduces the source's setting where it differs).
        description: One line for ``--help`` and the README.
        prompts_version: The strategy's ``PROMPTS_VERSION``, recorded with every answer.
        costs: Its one cost model (:class:`~graphs.metering.costs.StrategyCosts`): the least and
            most calls and prompt tokens before any call (``longctx.agents.estimate``, budgets
            refuse a call up front) and the typical calls and tokens the plan printed before a run
            shows (``longctx.agents.run_plan``), from the same terms. ``None``, or a plug-in's half
            (``StrategyCosts(plan=...)`` / ``(expected=...)``): without bounds its budget is
            enforced during the run only; without a typical cost it is left out of the run plan.
            Registering with the older ``cost_plan=`` / ``expected_cost=`` keywords builds the half
            they name.
        ceiling: Its LLM-free evidence-ceiling rule (``longctx.experiments.ceilings.measure``),
            defined in its package; ``None``: no ceiling row is measured.
        presentation: Its colour, demo options and report step views
            (:class:`~graphs.plugin.presentation.StrategyPresentation`); a plug-in without one gets
            a colour by name and its steps shown as their facts.
        ray_stage: The part of its work ``--ray`` puts on Ray (:class:`RayStage`); ``None``: none.
        prompt_sharing: The long text its prompts start with for every question over one corpus
            (:class:`~graphs.calls.prompt_sharing.PromptSharing`), which a provider's prompt cache
            serves to questions 2..N; ``None``: its prompts start with what differs per question.
        needs: ``config -> packages`` (:class:`~retrieval.extras.Need`) the run will import, checked
            all together before its first model call (``None``: the core install runs it).
        index_calls: ``(config, corpus, llm, cache_dir) -> calls`` or ``(calls, prompt tokens)``:
            the index-time calls still to make and the prompt tokens they send at least, which a
            budget's up-front check adds to the plan's least; ``None`` when the index is cached
            (the plan then counts none of the build, at least or at most).
        parts: Functions it lends to a strategy that composes it, by name (Full context's
            ``"prompt"``, its window-fitted prompt, for Self-Route's leg): a composite reaches them
            through the registry, ``STRATEGIES.get(name).parts[...]``, rather than importing
            another strategy's package.
    """

    name: str
    build_graph: Callable[..., Any]
    config_cls: type[ConfigT]
    uses_index: bool = False
    run_mode: SingleRun | BatchRun = field(default_factory=SingleRun)
    presets: Mapping[str, ConfigT] = field(default_factory=dict)
    description: str = ""
    prompts_version: int = 1
    costs: StrategyCosts[ConfigT] | None = None
    ceiling: EvidenceCeiling | None = None
    presentation: StrategyPresentation = field(default_factory=StrategyPresentation)
    ray_stage: RayStage | None = None
    prompt_sharing: PromptSharing | None = None
    needs: Callable[[ConfigT], Sequence[Need]] | None = None
    index_calls: Callable[[ConfigT, Any, Any, Any], int | tuple[int, int] | None] | None = None
    parts: Mapping[str, Callable[..., Any]] = field(default_factory=dict)

    @property
    def batch(self) -> BatchRun | None:
        """Its :class:`BatchRun`, or ``None`` when it answers one question per invocation: the one
        place the ``SingleRun | BatchRun`` union is narrowed."""
        match self.run_mode:
            case BatchRun():
                return self.run_mode
            case SingleRun():
                return None

    @property
    def batched(self) -> bool:
        """Whether many questions share one run of the graph."""
        return self.batch is not None

    @property
    def batch_mode(self) -> BatchRun:
        """Its :class:`BatchRun`, for callers that need one.

        Raises:
            TypeError: The strategy answers one question per invocation.
        """
        if (mode := self.batch) is None:
            raise TypeError(
                f"Strategy {self.name!r} is not batched: its run mode is {self.run_mode!r}"
            )
        return mode

    def make_config(self, preset: str | None = None, **overrides: Any) -> ConfigT:
        """The default (or preset) config with ``overrides``; every value is validated.

        Raises:
            TypeError: An unknown option name (with the closest valid one).
            ConfigError: A value the option cannot take.
            KeyError: An unknown preset.
        """
        if preset is not None and preset not in self.presets:
            raise UnknownName(
                f"Strategy {self.name!r} has no preset {preset!r}; presets: "
                f"{sorted(self.presets) or 'none'}"
            )
        base = self.presets[preset] if preset else self.config_cls()
        valid = [f.name for f in dataclasses.fields(self.config_cls)]
        unknown = [k for k in overrides if k not in valid]
        if unknown:
            hints = [
                f"{k!r} (did you mean {close[0]!r}?)"
                if (close := difflib.get_close_matches(k, valid, n=1))
                else repr(k)
                for k in unknown
            ]
            raise OptionError(
                f"Unknown option(s) for strategy {self.name!r}: {', '.join(hints)}. Valid: "
                f"{', '.join(valid)}"
            )
        try:
            return dataclasses.replace(base, **overrides)
        except ConfigError as exc:
            raise ConfigError(f"Strategy {self.name!r}: {exc}") from None


def _strategy(name: str, build_graph: Callable[..., Any], **attrs: Any) -> Strategy[Any]:
    # the older keywords: one half each
    plan, expected = (
        attrs.pop("cost_plan", None),
        attrs.pop("expected_cost", None),
    )
    if plan is not None or expected is not None:
        if attrs.get("costs") is not None:
            raise TypeError(
                f"Strategy {name!r}: give costs= or the older cost_plan= / expected_cost=, not both"
            )
        attrs["costs"] = StrategyCosts(plan=plan, expected=expected)
    return Strategy(name=name, build_graph=build_graph, **attrs)
