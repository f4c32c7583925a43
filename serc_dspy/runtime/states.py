"""Saving and loading compiled program state: JSON only, guarded by per-stage signature hashes.

DSPy's own `module.load()` restores field descriptions *by position* and silently misaligns
them when a signature changed since the state was saved; it also accepts pickles. This module
wraps DSPy's state (`dump_state()` / `Predict.load_state()`) in a small JSON document that
records, for every saved stage (a predictor path such as `single_verifier`), a hash of its
signature's *structure*: the ordered input/output field names and their type annotations.
Instructions and field descriptions are not hashed, because optimizers rewrite instructions.
Loading refuses a file whose stage hashes differ from the program's current signatures, naming
the stage, instead of applying a misaligned state.

File layout (format version 1)::

    {
      "format": "serc-dspy-compiled-state", "format_version": 1,
      "serc_dspy_version": "0.1.0", "dspy_version": "3.4.1",
      "program": "SERC", "created": "2026-...Z",
      "stages": {"single_verifier": {"signature": "JudgeFact", "hash": "…",
                                     "fields": ["evidence: str (input)", …],
                                     "prompt_text": "unchanged" | "optimized"}},
      "state":  {"single_verifier": <Predict.dump_state() without the LM>},
      "meta":   {how it was made, scores, …}
    }

Only the listed stages are applied; every other predictor keeps its current state. A stage's
`prompt_text` is "unchanged" when the optimizer left its instructions and field descriptions as
they were (labeled / bootstrap few-shot): loading then applies only the demos and keeps the
current docstrings, so a shipped file never reverts later wording fixes. "optimized" (e.g.
MIPROv2 rewrote the instructions, or no reference was given) applies the saved text too.
LM settings are never stored: a compiled file carries prompts, not endpoints.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.resources
import json
import logging
import os
import re
import types
import typing
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import dspy
import pydantic

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import write_json
from serc_dspy.core.text import parse_json
from serc_dspy.core.version import __version__

_log = logging.getLogger("serc_dspy")

FORMAT = "serc-dspy-compiled-state"
FORMAT_VERSION = 1
PICKLE_SUFFIXES = (".pkl", ".pickle", ".pck", ".cloudpickle")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class CompiledStateError(UserError):
    """A compiled state cannot be saved or applied; the message names the file and stage."""


# -- signature structure ------------------------------------------------------------------------
def _type_repr(annotation: Any, seen: frozenset[type] = frozenset()) -> str:
    """A stable description of a type: generics, Literal values and pydantic model fields.

    Module paths are left out (moving a class does not change the structure); a pydantic
    model is described by its fields, so adding a field to e.g. `FactFix` changes the hash.
    """
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    if origin in (typing.Union, types.UnionType):
        return "Union[" + ", ".join(_type_repr(a, seen) for a in args) + "]"
    if origin is not None:
        name = getattr(origin, "__name__", None) or repr(origin)
        return f"{name}[{', '.join(_type_repr(a, seen) for a in args)}]"
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        if annotation in seen:
            return annotation.__name__
        inner = ", ".join(f"{name}: {_type_repr(field.annotation, seen | {annotation})}"
                          for name, field in annotation.model_fields.items())
        return f"{annotation.__name__}{{{inner}}}"
    if isinstance(annotation, type):
        return annotation.__name__
    return repr(annotation)


def signature_fields(signature: type[dspy.Signature]) -> list[str]:
    """The signature's structure, in field order: `name: type (input|output)`."""
    inputs = set(signature.input_fields)
    return [f"{name}: {_type_repr(field.annotation)} ({'input' if name in inputs else 'output'})"
            for name, field in signature.fields.items()]


def signature_hash(signature: type[dspy.Signature]) -> str:
    """Hash of the signature's field names, order, kinds and annotations (not its wording)."""
    payload = json.dumps(signature_fields(signature), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


# -- paths ---------------------------------------------------------------------------------------
def packaged_dir() -> Path:
    """Where compiled states shipped with the package live (`serc_dspy/compiled/`)."""
    return Path(str(importlib.resources.files("serc_dspy") / "compiled"))


def compiled_names() -> list[str]:
    """Names usable as `SERC(compiled=NAME)`: the packaged `compiled/NAME.json` files."""
    folder = packaged_dir()
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def _refuse_pickle(path: Path) -> None:
    if path.suffix.lower() in PICKLE_SUFFIXES:
        raise CompiledStateError(
            f"{path}: pickle files are refused (loading one can run arbitrary code); "
            "compiled states are JSON files written by `serc compile` / save_compiled()"
        )


def resolve_compiled(path_or_name: str | os.PathLike[str]) -> Path:
    """Turn `compiled=` into a file: an existing path, else a packaged NAME.

    A value without a directory part and without a `.json`/pickle suffix is also looked up
    as `serc_dspy/compiled/NAME.json` when no such file exists in the working directory.
    """
    raw = os.fspath(path_or_name)
    if not raw.strip():
        raise CompiledStateError("compiled state path is empty")
    path = Path(raw).expanduser()
    _refuse_pickle(path)
    if path.is_file():
        return path
    if isinstance(path_or_name, str) and _NAME.match(raw) and path.suffix.lower() != ".json":
        packaged = packaged_dir() / f"{raw}.json"
        if packaged.is_file():
            return packaged
    names = compiled_names()
    hint = (f"; packaged names: {', '.join(names)}" if names else "; no states are packaged")
    raise CompiledStateError(f"compiled state not found: {raw} (not a file, nor a packaged "
                             f"name{hint})")


# -- save ----------------------------------------------------------------------------------------
def _signature_text(predictor: dspy.Predict) -> dict[str, Any]:
    return predictor.signature.dump_state()


def save_compiled(
    program: dspy.Module,
    path: str | os.PathLike[str],
    meta: dict[str, Any] | None = None,
    *,
    stages: list[str] | None = None,
    reference: dspy.Module | None = None,
) -> Path:
    """Write `program`'s DSPy state for `stages` (default: every predictor) as JSON.

    Args:
        program: a dspy.Module whose predictors were compiled.
        path: the output file; it must end with `.json` (pickles are refused).
        meta: JSON-serialisable notes on how the state was made (command, data, scores...).
        stages: predictor paths to save, e.g. `["single_verifier"]`.
        reference: the same program before optimisation; stages whose instructions and field
            descriptions still equal the reference's are marked `prompt_text="unchanged"`, so
            loading applies only their demos. Without it every stage is "optimized".

    Returns the path written (atomically: a temporary file is renamed into place).
    """
    path = Path(path).expanduser()
    _refuse_pickle(path)
    if path.suffix.lower() != ".json":
        raise CompiledStateError(f"{path}: a compiled state must be saved as a .json file")
    predictors = program_predictors(program) if stages is not None else \
        dict(program.named_predictors())
    names = list(stages) if stages is not None else list(predictors)
    if not names:
        raise CompiledStateError("nothing to save: no stages given and the program has no "
                                 "predictors")
    unknown = [n for n in names if n not in predictors]
    if unknown:
        raise CompiledStateError(f"unknown stage(s) {unknown} for {type(program).__name__}; "
                                 f"its predictors are: {', '.join(predictors)}")
    ref_predictors = dict(reference.named_predictors()) if reference is not None else {}

    stage_info: dict[str, Any] = {}
    state: dict[str, Any] = {}
    for name in names:
        predictor = predictors[name]
        ref = ref_predictors.get(name)
        unchanged = ref is not None and _signature_text(ref) == _signature_text(predictor)
        signature = (ref or predictor).signature
        stage_info[name] = {
            "signature": signature.__name__,
            "hash": signature_hash(predictor.signature),
            "fields": signature_fields(predictor.signature),
            "prompt_text": "unchanged" if unchanged else "optimized",
            "demos": len(predictor.demos),
        }
        lm, predictor.lm = predictor.lm, None  # never store LM settings (endpoints, paths)
        try:
            entry = predictor.dump_state()
        finally:
            predictor.lm = lm
        state[name] = entry

    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "serc_dspy_version": __version__,
        "dspy_version": getattr(dspy, "__version__", "unknown"),
        "program": type(program).__name__,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "stages": stage_info,
        "state": state,
        "meta": meta or {},
    }
    return _write_document(path, document)


def merge_compiled(paths: list[str | os.PathLike[str]], path: str | os.PathLike[str],
                   meta: dict[str, Any] | None = None) -> Path:
    """One state file from several (stages compiled separately, e.g. with different
    optimizers): their stages side by side, each file's `meta` kept under `meta.parts`. A
    stage found in two files is refused rather than silently picked."""
    path = Path(path).expanduser()
    _refuse_pickle(path)
    if path.suffix.lower() != ".json":
        raise CompiledStateError(f"{path}: a compiled state must be saved as a .json file")
    documents = [read_compiled(p) for p in paths]
    if not documents:
        raise CompiledStateError("nothing to merge: give at least one compiled state")
    stages: dict[str, Any] = {}
    state: dict[str, Any] = {}
    parts = []
    for document in documents:
        for name, info in document["stages"].items():
            if name in stages:
                raise CompiledStateError(f"stage {name!r} is in more than one file "
                                         f"({document['path']}); merge each stage once")
            stages[name], state[name] = info, document["state"][name]
        parts.append({"file": Path(document["path"]).name, **document.get("meta", {})})

    merged = {**{k: documents[0][k] for k in ("format", "format_version", "program")},
              "serc_dspy_version": __version__,
              "dspy_version": getattr(dspy, "__version__", "unknown"),
              "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "stages": stages, "state": state, "meta": {**(meta or {}), "parts": parts}}
    if len({d["program"] for d in documents}) > 1:
        merged["program"] = "SERC"
    return _write_document(path, merged)


def _write_document(path: Path, document: dict[str, Any]) -> Path:
    """Write atomically (`serc_dspy.core.io.write_json`)."""
    try:
        return write_json(path, document)
    except (TypeError, ValueError) as exc:  # raised before any file is touched
        raise CompiledStateError(f"cannot write {path}: state or meta is not JSON-serialisable "
                                 f"({exc})") from exc


# -- load ----------------------------------------------------------------------------------------
def _check_stage_state(path: Path, name: str, stage: Any) -> None:
    """Refuse a stage whose saved state DSPy would accept but misapply: demos that are not a
    list of objects, instructions that are not text."""
    if not isinstance(stage, dict):
        raise CompiledStateError(f"{path}: stage {name!r} state must be an object")
    demos = stage.get("demos", [])
    if not isinstance(demos, list) or not all(isinstance(d, dict) for d in demos):
        raise CompiledStateError(f"{path}: stage {name!r} has 'demos' that are not a list of "
                                 "objects")
    signature = stage.get("signature", {})
    if not isinstance(signature, dict) or not isinstance(signature.get("instructions", ""), str):
        raise CompiledStateError(f"{path}: stage {name!r} has a malformed signature state")


def _is_dspy_save(document: dict[str, Any]) -> bool:
    """A DSPy `module.save("x.json")`: predictor paths -> Predict states, plus `metadata`."""
    stages = {k: v for k, v in document.items() if k != "metadata"}
    return bool(stages) and all(isinstance(v, dict) and "demos" in v and "signature" in v
                                for v in stages.values())


def _from_dspy_save(document: dict[str, Any]) -> dict[str, Any]:
    """Wrap a plain DSPy save as a compiled-state document. It carries no structure hashes,
    so each stage is checked by its field count instead (see `load_compiled`)."""
    state = {k: v for k, v in document.items() if k != "metadata"}
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "program": "?",
            "stages": {name: {"hash": None, "prompt_text": "optimized",
                              "signature": "?", "fields": None} for name in state},
            "state": state, "meta": {"source": "dspy save", **(document.get("metadata") or {})}}


def is_compiled_state(path: str | os.PathLike[str]) -> bool:
    """True for a serc-dspy compiled-state file (DSPy's own `.load` cannot read those)."""
    try:
        head = Path(path).read_text(encoding="utf-8")
        return isinstance(doc := parse_json(head), dict) and doc.get("format") == FORMAT
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False


def read_compiled(path_or_name: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and check a compiled-state document (format, version, layout); apply nothing."""
    path = resolve_compiled(path_or_name)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CompiledStateError(f"cannot read compiled state {path}: {exc}") from exc
    try:
        document = parse_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompiledStateError(f"{path} is not a JSON compiled state ({exc})") from exc
    if isinstance(document, dict) and "format" not in document and _is_dspy_save(document):
        document = _from_dspy_save(document)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise CompiledStateError(f"{path} is neither a serc-dspy compiled state (no "
                                 f"'format': '{FORMAT}') nor a DSPy `save()` of a program's "
                                 "state")
    version = document.get("format_version")
    if version != FORMAT_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        raise CompiledStateError(
            f"{path} has compiled-state format version {version!r}; this serc-dspy reads "
            f"version {FORMAT_VERSION}"
            + (" (the file was made by a newer serc-dspy: upgrade)" if newer else "")
        )
    stages, state = document.get("stages"), document.get("state")
    if not isinstance(stages, dict) or not isinstance(state, dict) or not stages:
        raise CompiledStateError(f"{path}: malformed compiled state (no stages)")
    for name, info in stages.items():
        if not isinstance(info, dict) or "hash" not in info or name not in state:
            raise CompiledStateError(f"{path}: malformed compiled state for stage {name!r}")
        _check_stage_state(path, name, state[name])
    document["path"] = str(path)
    return document


def _mismatch(where: str, name: str, saved: str, current: type[dspy.Signature]) -> str:
    """A stage saved for another signature structure: say so and apply only its demos and
    instructions, keeping the current field descriptions (DSPy would misalign them)."""
    _log.warning("%s: stage %r was saved for a different signature (%s) than the current one "
                 "(%s: %s); applying its demos and instructions only, keeping the current "
                 "field descriptions; recompile with `serc compile` to be safe", where, name,
                 saved, current.__name__, "; ".join(signature_fields(current)))
    return name


def program_predictors(program: dspy.Module) -> dict[str, dspy.Predict]:
    """A program's predictors by path (`checks.fact_extractor`), and by the short names a
    program maps to them (`PREDICTOR_PATHS`: SERC's names before it was split into
    sub-modules), so a state saved before the split still loads."""
    predictors = dict(program.named_predictors())
    for short, path in (getattr(program, "PREDICTOR_PATHS", None) or {}).items():
        if path in predictors:
            predictors.setdefault(short, predictors[path])
    return predictors


def load_compiled(program: dspy.Module, path_or_name: str | os.PathLike[str]) -> dict[str, Any]:
    """Apply a compiled state to `program` after checking every stage's signature hash.

    Raises CompiledStateError (a UserError) naming the stage when the program has no such
    predictor; nothing is applied in that case. A stage whose signature structure changed
    since it was saved (or, for a plain DSPy save, whose field count differs) logs a warning
    naming it and gets its demos and instructions only. Returns the document (with `meta`).

    The state is applied with DSPy's `Predict.load_state` per saved stage (the same code
    `Module.load_state` runs), not with `program.load_state`, which deep-copies the whole
    program first, retriever index and per-stage LMs included.
    """
    document = read_compiled(path_or_name)
    where = document["path"]
    mismatched: set[str] = set()
    predictors = program_predictors(program)
    for name, info in document["stages"].items():
        if name not in predictors:
            raise CompiledStateError(
                f"{where}: stage {name!r} does not exist in {type(program).__name__} (its "
                f"predictors are: {', '.join(predictors)}); the file was made for another "
                "program"
            )
        current = predictors[name].signature
        if info["hash"] is None:  # a plain DSPy save: no hash, compare the field count
            saved = (document["state"][name].get("signature") or {}).get("fields") or []
            if len(saved) != len(current.fields):
                mismatched.add(_mismatch(where, name, f"a DSPy save with {len(saved)} fields",
                                         current))
        elif info["hash"] != signature_hash(current):
            mismatched.add(_mismatch(where, name, f"{info.get('signature', '?')}: "
                                     f"{'; '.join(info.get('fields') or ['?'])}", current))

    backups: dict[str, dict[str, Any]] = {}
    name = ""
    try:
        for name, info in document["stages"].items():
            predictor = predictors[name]
            lm, predictor.lm = predictor.lm, None
            try:
                backups[name] = predictor.dump_state()
                entry = copy.deepcopy(document["state"][name])
                entry["lm"] = None
                if info.get("prompt_text") == "unchanged" or name in mismatched:
                    kept = predictor.signature.dump_state()
                    if info.get("prompt_text") != "unchanged":  # keep the new instructions' text
                        kept["instructions"] = (entry.get("signature") or {}).get(
                            "instructions", kept["instructions"])
                    entry["signature"] = kept
                predictor.load_state(entry)
            finally:
                predictor.lm = lm
    except Exception as exc:
        for done, backup in backups.items():  # leave the program as it was
            lm = predictors[done].lm
            predictors[done].load_state(backup)
            predictors[done].lm = lm
        raise CompiledStateError(f"{where}: cannot apply the state of stage {name!r}: "
                                 f"{type(exc).__name__}: {exc}") from exc
    return document
