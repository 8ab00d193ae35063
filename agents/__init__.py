"""The public API's modules: ``answer`` and its async and streaming forms, chat models, events.

The names are exported from the top of the namespace (``from longctx import answer``); this package
holds the modules that define them.
"""
