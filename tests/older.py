"""A store as an older version left it, for the tests of its upgrade."""

from __future__ import annotations

from pathlib import Path

from memory.db import Database, Migration, Migrations


def database_as_of(path: Path, scope: str, *steps: Migration) -> Database:
    """A database with only the given migrations of `scope` applied."""
    database = Database(path)
    older = Migrations(scope)
    for step in steps:
        older(step)
    database.migrate(older)
    return database
