"""Where the data directory is: the one rule, shared by the settings and the light client.

It lives apart from `assistant.config` (pydantic) because the CLI client resolves the data
directory on every call to a daemon and must import nothing heavy; `assistant.config`
re-exports it, so settings and client can never disagree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

APP_NAME = "assistant"


def data_home(environ: Mapping[str, str] | None = None) -> Path:
    """`ASSISTANT_HOME`, else the platform's user data directory."""
    environ = os.environ if environ is None else environ
    if environ.get("ASSISTANT_HOME"):
        return Path(environ["ASSISTANT_HOME"]).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False))
