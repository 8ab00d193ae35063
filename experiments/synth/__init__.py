"""Synthetic CorpusQA-style corpora: facts first, documents rendered from them, answers by SQL.

Public API::

    from longctx.experiments.synth import SynthConfig, generate, load_samples, retrieval_recall
    generate(SynthConfig(domain="finance", target_tokens=parse_tokens("1M"), seed=0), "out/fin-1m")
    samples = load_samples("out/fin-1m")
"""

from longctx.experiments.synth.config import TIERS, NeedleConfig, SynthConfig, parse_tokens
from longctx.experiments.synth.domains import DOMAINS, get_domain
from longctx.experiments.synth.generate import GenerationResult, generate
from longctx.experiments.synth.samples import (
    CORPUSQA_INSTRUCTION,
    SynthSample,
    load_samples,
    read_questions,
    retrieval_recall,
)

__all__ = [
    "CORPUSQA_INSTRUCTION",
    "DOMAINS",
    "GenerationResult",
    "NeedleConfig",
    "SynthConfig",
    "SynthSample",
    "TIERS",
    "generate",
    "get_domain",
    "load_samples",
    "parse_tokens",
    "read_questions",
    "retrieval_recall",
]
