"""The command line's progress displays, in one place: the stage line of `serc ask` and `serc
correct` (`StageProgress`), and the bar while an offline model is assembled on first use
(`AssemblyProgress`). Long runs over many items show tqdm's bar (`evaluation.results`)."""

from __future__ import annotations

import sys
import threading
import time


class StageProgress:
    """One status line on stderr, so minutes-long CPU runs show where they are: the stage, its
    count and the elapsed time. On a terminal the line is redrawn every second, so it never sits
    frozen while one long LM call runs; elsewhere (a log file) a line per report."""

    TICK_SECONDS = 1.0

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.start = time.monotonic()
        self.interactive = sys.stderr.isatty()
        self.state = ("start", 0, 0)
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if not quiet and self.interactive:
            self._ticker = threading.Thread(target=self._tick_forever, daemon=True)
            self._ticker.start()

    def __call__(self, phase: str, done: int, total: int) -> None:
        self.state = (phase, done, total)
        if not self.quiet:
            self.tick()

    def line(self) -> str:
        phase, done, total = self.state
        unit = {"detect": " checks", "decompose": " sentences", "reconstruct": " sentences",
                "correct": " sentences"}.get(phase, "")
        count = f" {done}/{total}{unit}" if total else ""
        return f"[serc {time.monotonic() - self.start:6.1f}s] {phase}:{count}"

    def tick(self) -> None:
        end = "\r" if self.interactive else "\n"
        print(self.line().ljust(60), end=end, file=sys.stderr, flush=True)

    def _tick_forever(self) -> None:
        while not self._stop.wait(self.TICK_SECONDS):
            self.tick()

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        if not self.quiet and self.interactive:
            print(file=sys.stderr)


class AssemblyProgress:
    """A progress bar on stderr while an offline model is assembled on first use. On a
    terminal it redraws in place; into a log file (not a TTY) it writes a line per tenth, so a
    background run's log does not fill with a hundred redrawn bars."""

    width = 30

    def __init__(self, stream=None) -> None:
        self.stream = stream
        self.last_tenth = -1

    def __call__(self, done: int, total: int) -> None:
        stream = self.stream or sys.stderr
        filled = int(self.width * done / total) if total else self.width
        finished = done >= total
        bar = (f"[serc] preparing the offline model [{'#' * filled}"
               f"{'.' * (self.width - filled)}] {done / 2**20:,.0f}/{total / 2**20:,.0f} MiB")
        if stream.isatty():
            print(bar, end="\n" if finished else "\r", file=stream, flush=True)
            return
        tenth = 10 * done // total if total else 10
        if tenth > self.last_tenth:
            self.last_tenth = tenth
            print(bar, file=stream, flush=True)
