"""PAI, property-based agentic inference (seed 002), and its PAI- ablation.

Modules: ``config`` (settings), ``prompts`` (templates and function schemas), ``calls``
(tool / JSON calls with validation and retries), ``decompose`` (properties or
sub-questions), ``judging`` (the judge fan-out and the kept chunks), ``state`` (the state and the
``Send`` payloads), ``cost_model``, ``graph`` (sub-answers, summary, wiring; registration).
"""

from longctx.graphs.pai.config import PaiConfig
from longctx.graphs.pai.graph import build_graph, build_graph_minus
from longctx.graphs.pai.judging import choose_mode
from longctx.graphs.pai.prompts import PROMPTS_VERSION

__all__ = ["PROMPTS_VERSION", "PaiConfig", "build_graph", "build_graph_minus", "choose_mode"]
