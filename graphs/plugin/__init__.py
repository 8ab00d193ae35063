"""The plug-in contract: a strategy's registry entry, config, run context and shared nodes."""
