"""The short crash test (issue 6, item 4): a real daemon, five turns with tool calls and
writes, two SIGKILLs at seeded-random moments with a restart after each; then nothing
acknowledged is lost, no note is torn, no tool call dangles, and SQLite and Chroma agree.
The long form is `python bench/crash_test.py --turns 50`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def load_crash_test() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_crash_test", ROOT / "bench" / "crash_test.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_kill_9_at_random_moments_loses_nothing_acknowledged(tmp_path: Path) -> None:
    crash_test = load_crash_test()
    run = crash_test.CrashRun(turns=5, kills=2, seed=7, root=tmp_path / "crash")
    result = run.run()

    assert result["kills"] == 2 and result["daemon_starts"] == 4
    assert result["acknowledged"] >= 3  # the turns without a kill are always answered
    assert result["missing"] == []
    assert result["torn_notes"] == {} and result["lost_writes"] == []
    assert result["loaded_dangling_tool_calls"] == []
    assert result["only_in_sqlite"] == [] and result["only_in_chroma"] == []
    assert result["conclusion_vectors"] == result["conclusions"] >= result["active_conclusions"]
    assert result["final_exit_code"] == 0
    assert result["passed"], result
