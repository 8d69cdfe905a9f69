"""The note vault (SPEC §3): an Obsidian-style markdown folder the assistant reads and
writes safely, and its hybrid search index.

    vault = Vault(path, database)                 # jail, journal, undo, own writes
    index = VaultIndex(vault, database, vectors)  # keeps itself current after writes
    tools = vault_tools(vault, index)             # vault_* tools for the registry
"""

from __future__ import annotations

from tools.vault.index import IndexReport, VaultHit, VaultIndex
from tools.vault.jail import VaultJail, VaultPath
from tools.vault.store import UndoResult, Vault, VaultEvent, WriteResult
from tools.vault.tools import vault_tools

__all__ = [
    "IndexReport",
    "UndoResult",
    "Vault",
    "VaultEvent",
    "VaultHit",
    "VaultIndex",
    "VaultJail",
    "VaultPath",
    "WriteResult",
    "vault_tools",
]
