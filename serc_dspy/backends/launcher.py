"""Start an inference server, wait until it answers, and always stop it again.

The paper ran its backbones behind SGLang on one GPU; a run should not leave a multi-GB server
process behind when it finishes, fails or is interrupted. `managed_server` runs any command
that brings up an OpenAI-compatible server; `sglang_server` builds SGLang's command.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from serc_dspy.core.errors import StepFailed, UserError


class ServerError(StepFailed):
    """The managed server could not be started; the message says why and where its log is."""


class ServerNotInstalled(ServerError, UserError):
    pass


class PortInUse(ServerError, UserError):
    pass


class ServerDied(ServerError):
    pass


class ServerTimeout(ServerError):
    pass


@dataclass
class RunningServer:
    process: subprocess.Popen
    host: str
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL, ready for `sglang_lm(url, model)`."""
        return f"http://{self.host}:{self.port}/v1"


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return 200 <= response.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _stop(process: subprocess.Popen, grace: float) -> None:
    """Stop the whole process group: servers fork workers (SGLang starts several), and the
    workers must go even when the group's leader has already died."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + grace
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _die_with_parent() -> None:
    """Runs in the child before exec: on Linux, SIGTERM it when the parent dies (even by
    SIGKILL), so a killed client never leaves a server holding a GPU."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into SystemExit while the server runs, so the `finally` that
    stops it runs too (by default they kill the client at once and orphan the server)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def leave(signum, frame):
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, leave) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def managed_server(
    command: Sequence[str],
    *,
    port: int,
    host: str = "127.0.0.1",
    ready_path: str = "/v1/models",
    timeout: float = 600.0,
    log_path: str | Path | None = None,
    env: dict[str, str] | None = None,
    grace: float = 10.0,
) -> Iterator[RunningServer]:
    """Run `command` (which must listen on host:port) for the duration of the `with` block.

    Raises PortInUse before starting if the port is taken, ServerDied if the process exits
    during start-up, ServerTimeout if `ready_path` does not answer within `timeout` seconds.
    The process group is stopped on exit, including on exceptions and Ctrl-C.
    """
    if not port_is_free(host, port):
        raise PortInUse(f"port {port} on {host} is already in use; pick another port")
    if log_path is None:
        log_path = Path(tempfile.mkdtemp(prefix="serc-server-")) / "server.log"
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            list(command), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, **(env or {})},
            preexec_fn=_die_with_parent,
        )
    server = RunningServer(process=process, host=host, port=port, log_path=log_path)
    with _stop_on_signals():
        try:
            deadline = time.monotonic() + timeout
            probe = f"http://{host}:{port}{ready_path}"
            while not _answers(probe):
                if process.poll() is not None:
                    raise ServerDied(
                        f"server exited with status {process.returncode} during start-up; "
                        f"log {log_path}:\n{_log_tail(log_path)}"
                    )
                if time.monotonic() > deadline:
                    raise ServerTimeout(
                        f"server did not answer {probe} within {timeout:.0f}s; log {log_path}:\n"
                        f"{_log_tail(log_path)}"
                    )
                time.sleep(0.25)
            yield server
        finally:
            _stop(process, grace)


def sglang_command(
    model_path: str,
    *,
    port: int,
    host: str = "127.0.0.1",
    tp_size: int = 1,
    extra_args: Sequence[str] = (),
    python: str = sys.executable,
) -> list[str]:
    """The launch command. `--enable-cache-report` makes SGLang report the prompt tokens its
    radix cache served (`prompt_tokens_details.cached_tokens`), which the trace records."""
    return [python, "-m", "sglang.launch_server", "--model-path", model_path, "--host", host,
            "--port", str(port), "--tp-size", str(tp_size), "--enable-cache-report",
            *extra_args]


def sglang_server(
    model_path: str,
    *,
    port: int = 30000,
    host: str = "127.0.0.1",
    tp_size: int = 1,
    extra_args: Sequence[str] = (),
    timeout: float = 900.0,
    log_path: str | Path | None = None,
):
    """`with sglang_server("meta-llama/Meta-Llama-3-8B-Instruct") as server:` then
    `sglang_lm(server.url, "meta-llama/Meta-Llama-3-8B-Instruct")`."""
    if importlib.util.find_spec("sglang") is None:
        raise ServerNotInstalled(
            "sglang is not installed: on a CUDA machine run `pip install 'sglang[all]'` "
            "(see https://docs.sglang.ai), or attach to a running server with --lm sglang=URL#MODEL"
        )
    command = sglang_command(model_path, port=port, host=host, tp_size=tp_size,
                             extra_args=extra_args)
    return managed_server(command, port=port, host=host, timeout=timeout, log_path=log_path)
