"""The results file: one JSON line per item, durable line by line, resumable, with its meta.

Every experiment writes here, whether it runs a method (`runner`) or scores a run (`scoring`):
- every finished item is appended as one JSON line, then flushed and fsynced, under a lock, so
  a killed run loses at most the items in flight;
- re-running with the same output file skips every id already present; before that the file is
  compacted: a torn last line (a kill mid-write; a warning says so, and `RunSummary.torn`
  counts it) and records of FAILED items are dropped, so failed items are retried on resume
  and each id still appears exactly once; any other malformed line is an error naming it;
- one process writes a file at a time (an advisory lock the OS drops if the process dies);
- `process_items` runs the work on a bounded thread pool, each record appended by the worker
  that made it, so an item finishing after an interrupt is still saved.

Kept apart from `runner` so that the store's promises (durability, resume, one writer) are
read and tested in one place, whoever is writing.
"""

from __future__ import annotations

import contextvars
import json
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dspy
from filelock import FileLock, Timeout
from pydantic import BaseModel, ValidationError

from serc_dspy.core.errors import UserError, first_problem, redact
from serc_dspy.core.io import json_line, read_jsonl, read_jsonl_rows, write_jsonl

RESULTS_SUFFIX = ".jsonl"


def sibling(path: str | os.PathLike[str], suffix: str) -> Path:
    """`results/RUN.jsonl` + `.meta.json` -> `results/RUN.meta.json`."""
    path = Path(path)
    stem = path.name[: -len(RESULTS_SUFFIX)] if path.name.endswith(RESULTS_SUFFIX) else path.name
    return path.with_name(stem + suffix)


def read_score_rows(path: str | os.PathLike[str], model: type[BaseModel], what: str
                    ) -> dict[str, Any]:
    """A per-item score file (`RUN.noise.jsonl`, `RUN.factcheck.jsonl`) as {id: score, or None
    for a failed item}. Every row is validated (no negative count, no id twice, no row
    without an id): a malformed file is refused naming the file and line, never scored."""
    scores: dict[str, Any] = {}
    for number, row in read_jsonl_rows(path, what=what):
        where = f"{path}, line {number}"
        if not isinstance(row.get("id"), (str, int)) or isinstance(row.get("id"), bool):
            raise UserError(f"{where}: a score row needs an id")
        ident = str(row["id"])
        if ident in scores:
            raise UserError(f"{where}: item {ident!r} is scored twice")
        if row.get("failed"):
            scores[ident] = None
            continue
        try:
            scores[ident] = model.model_validate(row)
        except ValidationError as exc:
            raise UserError(f"{where}: {first_problem(exc)}") from None
    return scores


def timestamp() -> str:
    """Now, in UTC, as a run's meta records its start and finish."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def read_results(path: str | os.PathLike[str],
                 on_torn: Callable[[int, str], None] | None = None) -> list[dict[str, Any]]:
    """Records of a results file, or of a score file the `score_*` functions append to.

    Strict like every JSON-lines reader (`serc_dspy.core.io.read_jsonl`), except for a torn last
    line (a run killed mid-write): it is skipped with a warning and handed to `on_torn`, and
    the next resume drops it from the file and runs its item again.
    """
    return read_jsonl(path, what="results file", torn_last_line="skip", on_torn=on_torn)


class JsonlStore:
    """An append-only JSONL file of per-item records keyed by `"id"`, durable line by line."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.lock = threading.Lock()
        self.dropped_failed = 0
        self.dropped_torn = 0

    def claim(self) -> None:
        """Become the file's only writer (an advisory lock the OS drops if the process dies).

        Two runs on one file would compute everything twice and make scoring double-count.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.path.with_name(self.path.name + ".lock"), thread_local=False)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise UserError(f"another process is writing {self.path}; wait for it to finish "
                            "or use another output file") from None
        self._claim = lock

    def close(self) -> None:
        lock = getattr(self, "_claim", None)
        if lock is not None:
            lock.release()
            self._claim = None

    def resume(self, *, retry_failed: bool = True) -> dict[str, dict[str, Any]]:
        """Claim the file, compact it (see module docs) and return the kept records by id."""
        self.claim()
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return {}
        torn: list[int] = []
        kept: dict[str, dict[str, Any]] = {}
        rows = read_jsonl_rows(self.path, what="results file", torn_last_line="skip",
                               on_torn=lambda number, _text: torn.append(number))
        self.dropped_torn = len(torn)
        changed = bool(torn) or not _ends_a_line(self.path)
        for number, record in rows:
            if "id" not in record:
                raise UserError(f"{self.path}, line {number}: a record without an 'id'; "
                                "this is not a results file, or it was edited by hand")
            ident = str(record["id"])
            if ident in kept or (retry_failed and record.get("error")):
                self.dropped_failed += bool(record.get("error"))
                changed = True
                continue
            kept[ident] = record
        if changed:
            write_jsonl(self.path, kept.values())
        return kept

    def append(self, record: Mapping[str, Any]) -> None:
        line = json_line(record)
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _ends_a_line(path: Path) -> bool:
    """Whether a file is empty or ends in a newline (else the next append would continue its
    last line)."""
    with open(path, "rb") as handle:
        if handle.seek(0, os.SEEK_END) == 0:
            return True
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def check_results_path(out: Path) -> None:
    """Refuse a results path that cannot be written, before any work: a folder, a folder at
    its meta or lock file's path, a parent that is a file or cannot be created."""
    for path, what in ((out, "the results file"), (sibling(out, ".meta.json"), "its meta file"),
                       (out.with_name(out.name + ".lock"), "its lock file")):
        if path.is_dir():
            raise UserError(f"{what} {path} is a folder; give the results a file path such as "
                            f"{out / 'run.jsonl' if path == out else 'another --out'}")
    folder = out.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the folder {folder} of the results file {out}: "
                        f"{exc.strerror or exc}") from None
    if not os.access(folder, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise UserError(f"the results file {out} is not writable")


def progress_bar(total: int, initial: int, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="item", file=sys.stderr,
                disable=not enabled, dynamic_ncols=True, smoothing=0.1)


def process_items(todo: Sequence[Any], work: Callable[[Any], dict[str, Any]], store: JsonlStore, *,
             workers: int, bar) -> tuple[int, int]:
    """Run `work` over `todo` on a bounded thread pool; each record is appended by the worker
    that made it, so an item finishing after an interrupt is still saved.

    Every task runs in its own copy of the caller's context, so `dspy.context` settings (LM,
    adapter) reach the workers. At most `workers` tasks are queued at once, so an interrupt
    leaves nothing else to run. Returns (completed, failed).
    """
    if not todo:
        return 0, 0

    def task(item: Any) -> dict[str, Any]:
        record = work(item)
        store.append(record)
        return record

    completed = failed = 0
    queue = iter(todo)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(todo)))) as pool:
        pending = set()
        try:
            for item in queue:
                pending.add(pool.submit(contextvars.copy_context().run, task, item))
                if len(pending) >= workers:
                    break
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    record = future.result()
                    completed += 1
                    failed += bool(record.get("error"))
                    bar.set_postfix(failed=failed, refresh=False)
                    bar.update(1)
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(pool.submit(contextvars.copy_context().run, task, nxt))
        except BaseException:
            running = [f for f in pending if not f.cancel()]
            if running:
                print(f"\ninterrupted: waiting for {len(running)} item(s) in flight to finish "
                      "and be saved (kill the process to drop them)", file=sys.stderr)
            raise
    return completed, failed


def jsonable(options: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in options.items():
        try:
            json.dumps(value)
        except TypeError:
            value = repr(value)
        out[key] = value
    return out


def lm_name(lm: Any) -> str | None:
    """The LM's model name, with the server URL for a server LM (a results file is one
    experiment: another endpoint may serve another model under the same name)."""
    if lm is None:
        lm = dspy.settings.lm
    if lm is None:
        return None
    url = getattr(getattr(lm, "engine", None), "url", None)
    name = str(getattr(lm, "model", None))
    return redact(f"{name}@{url}") if isinstance(url, str) and not name.startswith("local/") \
        else name
