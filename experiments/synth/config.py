"""Generator settings: corpus size tiers, domains, needle options, all as frozen dataclasses."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: CorpusQA's four length settings (seed 004, Table 2: Set1 128K ... Set4 10M), in tokens.
TIERS: dict[str, int] = {"128K": 128_000, "1M": 1_000_000, "4M": 4_000_000, "10M": 10_000_000}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_tokens(text: str | int) -> int:
    """Parse a corpus size such as ``"128K"``, ``"4M"``, ``"1.5m"`` or ``"250000"`` into tokens.

    Suffixes are decimal (K = 1,000; M = 1,000,000), as CorpusQA names its tiers.

    Raises:
        ValueError: the text is not a positive integer with an optional K/M suffix.
    """
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(str(text))
        if not match:
            raise ValueError(
                f"Bad token count {text!r}: use an integer or a K/M suffix, e.g. 128K, 1M, 4M, 10M"
            )
        scale = {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2).lower()]
        value = int(round(float(match.group(1)) * scale))
    if value <= 0:
        raise ValueError(f"Token count must be positive, got {text!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class NeedleConfig:
    """A single LV-Eval factrecall-style needle planted in the corpus.

    Attributes:
        depth: Share of the corpus's tokens that precede the needle (0.0 start, 1.0 end).
        confusing_facts: Insert look-alike facts elsewhere (LV-Eval "CFI").
        keyword_replacement: Replace the well-known key phrase by an unexpected one, so the
            answer cannot come from the model's own knowledge (LV-Eval "KPR").
        template: Index into the needle bank (``needle.NEEDLES``), chosen by seed when None.
    """

    depth: float = 0.5
    confusing_facts: bool = field(default=True, metadata={"source": "LV-Eval CFI (seed 003)"})
    keyword_replacement: bool = field(default=True, metadata={"source": "LV-Eval KPR (seed 003)"})
    template: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.depth <= 1.0:
            raise ValueError(f"needle depth must be in [0, 1], got {self.depth}")


@dataclass(frozen=True, kw_only=True)
class SynthConfig:
    """Everything that determines a generated corpus; equal configs give identical output.

    Attributes:
        domain: ``finance`` (company annual reports) or ``education`` (university fact books).
        target_tokens: Total corpus size in cl100k tokens; the result lands within 5%.
        seed: Seed of every random choice.
        doc_tokens: Typical document length. CorpusQA keeps documents over 10,240 tokens
            (seed 004, section 3.2); we default lower so a 128K corpus still holds about ten
            entities, which keeps top-k and filter questions meaningful.
        report_years: Reporting years; each report also restates the previous year.
        restatement_rate: Share of prior-year values that a later report restates with a
            different value (resolved by CorpusQA's latest-file rule, appendix C rule 3).
        noise_rate: Share of documents that are noise (newsletters with no schema fact).
        num_questions: Questions generated (CorpusQA mix: Easy 296, Medium 648, Hard 372).
        needle: Plant an LV-Eval-style needle and add its question, when set.
    """

    domain: str = "finance"
    target_tokens: int = 128_000
    seed: int = 0
    doc_tokens: int = 4_000
    report_years: tuple[int, ...] = (2022, 2023, 2024)
    restatement_rate: float = 0.3
    noise_rate: float = 0.1
    num_questions: int = 30
    #: Difficulty shares after CorpusQA Table 2 (296 / 648 / 372 of 1,316).
    difficulty_mix: tuple[float, float, float] = (0.225, 0.492, 0.283)
    needle: NeedleConfig | None = None

    def __post_init__(self) -> None:
        if self.target_tokens < 10_000:
            raise ValueError(f"target_tokens must be at least 10,000, got {self.target_tokens}")
        if not 500 <= self.doc_tokens <= 100_000:
            raise ValueError(f"doc_tokens must be in [500, 100000], got {self.doc_tokens}")
        if not self.report_years or list(self.report_years) != sorted(set(self.report_years)):
            raise ValueError(
                f"report_years must be distinct and increasing, got {self.report_years}"
            )
        if not 0.0 <= self.restatement_rate <= 1.0 or not 0.0 <= self.noise_rate < 0.5:
            raise ValueError("restatement_rate must be in [0, 1] and noise_rate in [0, 0.5)")
        if self.num_questions < 1:
            raise ValueError(f"num_questions must be positive, got {self.num_questions}")


def config_from_dict(data: dict) -> SynthConfig:
    """Rebuild a :class:`SynthConfig` from its ``asdict`` form (e.g. a manifest's ``config``)."""
    data = dict(data)
    needle = data.pop("needle", None)
    for key in ("report_years", "difficulty_mix"):
        if key in data:
            data[key] = tuple(data[key])
    return SynthConfig(**data, needle=NeedleConfig(**needle) if needle else None)
