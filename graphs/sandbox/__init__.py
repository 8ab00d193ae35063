"""Where model-written code runs: a REPL the host drives turn by turn (see ``protocol``)."""
