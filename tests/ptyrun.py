"""Run the real `assistant` CLI as a child process whose stdout (and, optionally, stderr)
is a pseudo-terminal, so the terminal-only behaviour (tokens as they arrive, spinner,
tool activity) is what a user at a terminal gets. Output is read by a thread as it comes;
`wait_for` polls it with a generous deadline (nothing asserts on timing)."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import polling


def cli_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env["ASSISTANT_HOME"] = str(home)
    env["NO_PROXY"] = "127.0.0.1,localhost,::1"
    env["COLUMNS"] = "200"
    env.update(extra or {})
    return env


# `python -m assistant ARGS`, with Ctrl-C raising KeyboardInterrupt as at a terminal even when
# the test run itself ignores SIGINT (a background job of a non-interactive shell does, and
# a child inherits that; Python then leaves SIGINT ignored)
_AS_AT_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'assistant'; runpy.run_module('assistant', run_name='__main__', alter_sys=True)"
)


class TerminalRun:
    """`python -m assistant ARGS` with stdout on a pty (stderr on a pty too, or a pipe)."""

    def __init__(
        self,
        env: dict[str, str],
        *args: str,
        stderr_tty: bool = True,
        stdin: int | None = subprocess.DEVNULL,
    ) -> None:
        out_master, out_slave = os.openpty()
        if stderr_tty:
            err_master, err_slave = os.openpty()
        else:
            err_master, err_slave = os.pipe()
        self._buffers = {out_master: bytearray(), err_master: bytearray()}
        self._out, self._err = out_master, err_master
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _AS_AT_A_TERMINAL, *args],
            stdin=stdin,
            stdout=out_slave,
            stderr=err_slave,
            env=env,
        )
        os.close(out_slave)
        os.close(err_slave)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        # a selector, not select(): a long test run holds more than 1024 descriptors, and
        # select() cannot wait on one numbered above that
        with selectors.DefaultSelector() as selector:
            for fd in self._buffers:
                selector.register(fd, selectors.EVENT_READ)
            while selector.get_map():
                for key, _ in selector.select(0.2):
                    try:
                        data = os.read(key.fd, 65536)
                    except OSError:  # EIO: the pty's child side is closed
                        data = b""
                    if not data:
                        selector.unregister(key.fd)
                        continue
                    with self._lock:
                        self._buffers[key.fd].extend(data)

    @property
    def stdout(self) -> str:
        with self._lock:
            return self._buffers[self._out].decode("utf-8", errors="replace")

    @property
    def stderr(self) -> str:
        with self._lock:
            return self._buffers[self._err].decode("utf-8", errors="replace")

    def wait_for(self, text: str, *, on: str = "stdout", timeout_s: float = 120.0) -> None:
        def seen() -> bool:
            if text in getattr(self, on):
                return True
            if self.proc.poll() is not None:
                time.sleep(0.3)  # what the process wrote last may still be in the pty
                if text in getattr(self, on):
                    return True
                raise AssertionError(
                    f"exited {self.proc.returncode} before {text!r} appeared on {on}:\n"
                    f"stdout: {self.stdout!r}\nstderr: {self.stderr!r}"
                )
            return False

        polling.wait_for(seen, f"{text!r} on {on}", timeout_s, interval_s=0.05)

    def interrupt(self) -> None:
        self.proc.send_signal(signal.SIGINT)

    def finish(self, timeout_s: float = 120.0) -> int:
        code = self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout=10)
        for fd in self._buffers:
            os.close(fd)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
