"""The batch runner's contract: MemAgent's run keys are pinned (existing checkpoints must
still resume), and a second, toy batched strategy with its own names runs through ``answer_many``."""

from pathlib import Path

import pytest

from agents import Question, answer_many
from graphs import STRATEGIES
from graphs.run import run_strategy
from retrieval import Corpus
from tests.test_memagent import echo_model

PINNED_CORPUS = Corpus.from_texts(["The vault code is 7421. " * 40, "The library is in Oulu. " * 30])


def _run_dirs(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


@pytest.mark.parametrize(
    "options,key_prefix,key",
    [
        ({}, None, "91c3a84b0f7e9c661cfc50f8cd6be9eb"),
        ({"chunk_tokens": 400, "continue_from_prefix": True, "concurrency": 2, "trace_chars": 10}, None, "6271a0f3334c08a3d916a77050200279"),
        ({"max_new_tokens": 64, "resume": True}, "self_route>memagent", "19bbaeec25c702456d235c825195a8cd"),
    ],
)
def test_memagent_run_keys_are_pinned(tmp_path, options, key_prefix, key):
    """The key of a fixed input never changes: a checkpoint written before a refactor still resumes."""
    spec = STRATEGIES.get("memagent")
    questions = [Question(text="What is the vault code?"), Question(text="Where is the library?", instruction="Answer in one word.")]
    run_strategy(spec, spec.make_config(**options), questions, llm=echo_model(), corpus=PINNED_CORPUS, cache_dir=tmp_path, key_prefix=key_prefix)
    assert _run_dirs(tmp_path / "memagent") == [key]
