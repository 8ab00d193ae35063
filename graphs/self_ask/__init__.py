"""Self-Ask (Press et al. 2023), retrieval-backed: follow-up questions answered from the corpus."""

from graphs.self_ask.config import SelfAskConfig
from graphs.self_ask.graph import NOT_FOUND, build_graph, clean_final, cut_at_stops, parse_step
from graphs.self_ask.prompts import PROMPTS_VERSION

__all__ = ["NOT_FOUND", "PROMPTS_VERSION", "SelfAskConfig", "build_graph", "clean_final", "cut_at_stops", "parse_step"]
