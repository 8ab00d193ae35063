"""Which tokenizer counts for a chat model, and a server's own tokenize routes, probed."""
