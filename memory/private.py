"""The data directory is private to its owner (SPEC S4): the folder 0700, its files 0600.

It holds conversations, conclusions, traces, the API token and logs. Files are created by
many hands (SQLite, Chroma's segments, APScheduler's SQLAlchemy store, the log handler),
each with the process umask, so the owner of the directory sets a umask of 077 for the
process (what the shipped systemd unit's `UMask=0077` does) and tightens whatever an
earlier run left open. Only this user's own regular files and folders are touched;
symbolic links are neither followed nor changed.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077
DIRECTORY_MODE = 0o700
FILE_MODE = 0o600


def make_private(home: Path) -> int:
    """Create `home` (0700) if needed, set the process umask to 077 and tighten every
    folder and file under it; the number of modes changed. The lock that owns the
    directory puts the previous umask back when it is released."""
    os.umask(PRIVATE_UMASK)
    home.mkdir(mode=DIRECTORY_MODE, parents=True, exist_ok=True)
    changed = _tighten(home, DIRECTORY_MODE)
    for root, folders, files in os.walk(home):
        for name in folders:
            changed += _tighten(Path(root, name), DIRECTORY_MODE)
        for name in files:
            changed += _tighten(Path(root, name), FILE_MODE)
    if changed:
        log.info("data directory %s: made %d file(s) and folder(s) private", home, changed)
    return changed


def _tighten(path: Path, mode: int) -> int:
    try:
        found = os.lstat(path)
    except OSError:
        return 0  # gone meanwhile
    if stat.S_ISLNK(found.st_mode) or found.st_uid != getattr(os, "getuid", lambda: 0)():
        return 0
    if not (stat.S_ISDIR(found.st_mode) or stat.S_ISREG(found.st_mode)):
        return 0
    if stat.S_IMODE(found.st_mode) & ~mode == 0:
        return 0
    try:
        os.chmod(path, stat.S_IMODE(found.st_mode) & mode)
    except OSError as exc:
        log.warning("cannot make %s private: %s", path, exc)
        return 0
    return 1
