"""The command line's error for an argument that cannot work (shared by its verb modules)."""

from __future__ import annotations


class UsageError(Exception):
    """A command-line argument that cannot work (the message says why and what to do)."""
