"""A tiny cross-encoder built from a config, with random weights: no reranker model ships offline
here, so this one only shows that the cross-encoder path runs end to end (its scores are noise,
not relevance).

A 2-layer BERT sequence classifier (hidden size 32, one label, ``torch.manual_seed(seed)``) with the
offline MiniLM's word-piece tokenizer, saved as a local checkpoint that ``rerank="cross-encoder"``
loads. Nothing is downloaded. ``python -m benchmarks.bench_hybrid --tiny-reranker`` adds its row to
the recall table.
"""

from __future__ import annotations

from pathlib import Path

from longctx.retrieval.embedders import offline_minilm_path


def build_tiny_reranker(folder: str | Path, *, seed: int = 0) -> str:
    """Write the tiny random cross-encoder into ``folder`` and return its path (for
    ``rerank_options={"model": ...}``)."""
    import torch  # the dense extras: only for this perf script
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(offline_minilm_path()))
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    return str(folder)
