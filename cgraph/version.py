"""The release of cgraph, in a module of its own so any layer may read it."""

__version__ = "0.1.0"
