"""Bounded memory for the streaming (MemAgent) strategy and PAI's sub-answer store.

Empty until the MemAgent and PAI strategies land (issues #3 and #4); the package exists
so the fixed top-level layout installs as one distribution.
"""
