"""PAI, property-based agentic inference (seed 002), and its PAI- ablation.

Modules: ``config`` (settings), ``prompts`` (templates and function schemas), ``calls``
(tool / JSON calls with validation and retries), ``decompose`` (properties or
sub-questions), ``graph`` (judging fan-out, sub-answers, summary; registration).
"""

from graphs.pai.config import PaiConfig
from graphs.pai.graph import build_graph, build_graph_minus, choose_mode
from graphs.pai.prompts import PROMPTS_VERSION

__all__ = ["PROMPTS_VERSION", "PaiConfig", "build_graph", "build_graph_minus", "choose_mode"]
