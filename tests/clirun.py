"""Run the real `assistant` CLI in a child process, on a given data directory, with no
endpoint or vault inherited from the caller's environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_cli(
    home: Path, *args: str, vault: Path | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env["ASSISTANT_HOME"] = str(home)
    if vault is not None:
        env["ASSISTANT_VAULT"] = str(vault)
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
