"""Index artefacts and retrieval for strategies: cached artefacts, embeddings, reranking."""
