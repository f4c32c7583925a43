"""The package's JSON and JSON-lines files, read and written one way everywhere.

Reading (`read_jsonl`, `read_jsonl_rows`, `read_json`) is strict: a missing or unreadable file
and a line that is not UTF-8 text or not a JSON object are errors (a `UserError`, or the
subclass the caller names) that name the file and the line. Blank lines are skipped. Input is
parsed with `text.parse_json` (lone surrogates cleaned, nesting too deep refused).

Only a file that a writer appends to line by line (the resumable results store,
`evaluation.runner.read_results`) may end in a torn line, the part of a record that a killed
run wrote: `torn_last_line="skip"` leaves that one last line out and says so (a `logging`
warning naming the file and line, and `on_torn(number, text)` for a caller that counts).

Writing (`write_json`, `write_jsonl`) is atomic: the text goes to a temporary file beside the
target, is flushed to disk, and replaces the target in one `os.replace`, so a reader never
sees half a file and a killed writer leaves the previous version.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from serc_dspy.core.errors import UserError
from serc_dspy.core.text import parse_json

logger = logging.getLogger("serc_dspy")

TornLastLine = Literal["error", "skip"]
"""What a bad last line of a JSON-lines file is: an error (input files), or a torn write that
is skipped with a warning (files appended to line by line)."""


def _read_bytes(path: Path, what: str, error: type[UserError]) -> bytes:
    if not path.is_file():
        raise error(f"{what} not found: {path}")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None


def read_jsonl_rows(
    path: str | os.PathLike[str], *, what: str = "JSON lines file",
    error: type[UserError] = UserError, torn_last_line: TornLastLine = "error",
    on_torn: Callable[[int, str], None] | None = None,
) -> list[tuple[int, dict[str, Any]]]:
    """`(line number, object)` of every non-blank line of a JSON-lines file, numbered from 1.

    `what` names the file in messages ("data file" -> "data file not found: PATH"); `error` is
    the `UserError` subclass raised. A line that is not UTF-8, not JSON or not an object raises
    `error` naming the file and line ("PATH, line 3: invalid JSON (...)"), except, with
    `torn_last_line="skip"`, the last non-blank line: it is skipped, logged as a warning and
    handed to `on_torn(number, text)`.
    """
    path = Path(path)
    lines = _read_bytes(path, what, error).split(b"\n")
    last = max((n for n, raw in enumerate(lines, 1) if raw.strip()), default=0)
    rows = []
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        row, problem = _object(raw)
        if row is not None:
            rows.append((number, row))
        elif torn_last_line == "skip" and number == last:
            logger.warning("%s, line %d: a torn last line (%s; a run killed mid-write), "
                           "skipped", path, number, problem)
            if on_torn is not None:
                on_torn(number, raw.decode("utf-8", errors="replace"))
        else:
            raise error(f"{path}, line {number}: {problem}")
    return rows


def _object(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """One JSON-lines line as `(object, "")`, or `(None, what is wrong with it)`."""
    try:
        row = parse_json(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON ({exc.msg})"
    if not isinstance(row, dict):
        return None, f"expected an object, got {type(row).__name__}"
    return row, ""


def read_jsonl(
    path: str | os.PathLike[str], *, what: str = "JSON lines file",
    error: type[UserError] = UserError, torn_last_line: TornLastLine = "error",
    on_torn: Callable[[int, str], None] | None = None,
) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file, in order (see `read_jsonl_rows` for the rules)."""
    return [row for _, row in read_jsonl_rows(path, what=what, error=error,
                                              torn_last_line=torn_last_line, on_torn=on_torn)]


def read_json(path: str | os.PathLike[str], *, what: str = "JSON file",
              error: type[UserError] = UserError) -> Any:
    """The parsed content of a JSON file; a missing, unreadable or invalid file raises `error`
    naming it (and, for invalid JSON, the line)."""
    path = Path(path)
    data = _read_bytes(path, what, error)
    try:
        return parse_json(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise error(f"cannot read {what} {path}: it is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise error(f"{what} {path} is not valid JSON: {exc.msg} (line {exc.lineno})") from None


def json_line(record: Mapping[str, Any]) -> str:
    """One record as a JSON-lines line (newline included), as every JSONL writer writes it."""
    return json.dumps(dict(record), ensure_ascii=False) + "\n"


def write_json(path: str | os.PathLike[str], data: Any) -> Path:
    """Write `data` as indented JSON, atomically. Data that is not JSON-serialisable raises
    `TypeError` / `ValueError` before any file is touched."""
    return _replace(Path(path), json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write one JSON line per row, atomically (see `json_line`)."""
    return _replace(Path(path), "".join(json_line(row) for row in rows))


def _replace(path: Path, text: str) -> Path:
    """`text` into `path` through a temporary file beside it, fsynced, then `os.replace`d.

    The temporary file has a name of its own (two writers never share one) and is created
    with the umask's permissions, as the target would be.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


CHUNK_BYTES = 1 << 20


def file_sha256(path: str | os.PathLike[str] | None) -> str | None:
    """The SHA-256 of a file's bytes, read in chunks (a file's identity: another file under
    the same name, or the same file edited, has another); None without a readable file."""
    if path is None or not Path(path).is_file():
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(CHUNK_BYTES), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()
