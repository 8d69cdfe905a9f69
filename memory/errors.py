"""Storage faults, with messages that name the file and what to do about it."""

from __future__ import annotations


class StorageError(Exception):
    """A database file is unreadable, corrupt, locked, read-only or on a full disk."""
