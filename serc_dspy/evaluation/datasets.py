"""Benchmark loaders: LongForm Bio entity lists, TruthfulQA's CSV, FActScore-format bios (drafts).

Every loader takes a path (the package never assumes where data lives) and returns `Item`s with
stable ids, so a results file can be resumed and scored against the same items later:

| dataset | file | item id | question | draft |
|---|---|---|---|---|
| `bio` | one entity per line | the entity | "Tell me a bio of <entity>." | `--drafts` |
| `truthfulqa` | TruthfulQA.csv | `tqa-<row>` (0-based data row) | Question | - |
| `factscore` | JSONL `{input, output, topic}` | the topic | `input` minus "Question: " | output |

The topic of a bio / factscore item is its entity (the Wikipedia title used for scoring).

A missing file, an unreadable one or a malformed row raises `DatasetError` (a `UserError`) with
a one-line message naming the file and line.
"""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import read_jsonl_rows

DATASETS = ("bio", "truthfulqa", "factscore")
BIO_TEMPLATE = "Tell me a bio of {entity}."
TRUTHFULQA_COLUMNS = ("Type", "Category", "Question", "Best Answer", "Correct Answers",
                      "Incorrect Answers")
_ANSWER_SEPARATOR = "; "


class DatasetError(UserError):
    """A dataset file is missing or not in the expected format."""


class Item(BaseModel):
    """One benchmark question, with what scoring needs to judge its answer."""

    id: str
    question: str
    topic: str | None = None
    draft: str | None = None
    correct_answers: list[str] = Field(default_factory=list)
    incorrect_answers: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)


def _read(path: str | os.PathLike[str], what: str, encoding: str = "utf-8") -> str:
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{what} file not found: {path}")
    try:
        return path.read_text(encoding=encoding)
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read {what} file {path}: {exc}") from exc


def _check_unique(items: list[Item], path: str | os.PathLike[str]) -> list[Item]:
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise DatasetError(f"duplicate item {item.id!r} in {path}: ids must be unique")
        seen.add(item.id)
    return items


def load_bio(path: str | os.PathLike[str]) -> list[Item]:
    """LongForm Bio: one entity per line (blank lines skipped) -> "Tell me a bio of <entity>."."""
    items = []
    for line in _read(path, "entity list").splitlines():
        entity = line.strip()
        if entity:
            items.append(Item(id=entity, question=BIO_TEMPLATE.format(entity=entity),
                              topic=entity))
    if not items:
        raise DatasetError(f"entity list {path} has no entities")
    return _check_unique(items, path)


def split_answers(cell: str | None) -> list[str]:
    """TruthfulQA's answer lists are "; "-separated; empty pieces are dropped."""
    return [part.strip() for part in (cell or "").split(_ANSWER_SEPARATOR) if part.strip()]


def load_truthfulqa(path: str | os.PathLike[str]) -> list[Item]:
    """TruthfulQA.csv (UTF-8, with or without a BOM). Ids are `tqa-<0-based data row>`."""
    text = _read(path, "TruthfulQA CSV", encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    missing = [c for c in TRUTHFULQA_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise DatasetError(f"{path} is not a TruthfulQA CSV: missing column(s) "
                           f"{', '.join(missing)}")
    items = []
    try:
        for row_number, row in enumerate(reader):
            question = (row.get("Question") or "").strip()
            if not question:
                raise DatasetError(f"{path}: data row {row_number + 1} has no Question")
            best = (row.get("Best Answer") or "").strip()
            correct = split_answers(row.get("Correct Answers"))
            if best and best not in correct:
                correct.insert(0, best)
            items.append(Item(
                id=f"tqa-{row_number}",
                question=question,
                correct_answers=correct,
                incorrect_answers=split_answers(row.get("Incorrect Answers")),
                meta={"type": (row.get("Type") or "").strip(),
                      "category": (row.get("Category") or "").strip(),
                      "best_answer": best,
                      "source": (row.get("Source") or "").strip()},
            ))
    except csv.Error as exc:
        raise DatasetError(f"{path} is not valid CSV: {exc}") from exc
    if not items:
        raise DatasetError(f"{path} has no questions")
    return items


_QUESTION_PREFIX = re.compile(r"^\s*Question:\s*", re.IGNORECASE)


def load_factscore(path: str | os.PathLike[str]) -> list[Item]:
    """FActScore-format bios `{input, output, topic}` as items whose draft is the output.

    The item's id is the topic. An empty output (the model abstained) stays an empty draft,
    which the runner records as an abstention without calling the method.
    """
    rows = read_jsonl_rows(path, what="FActScore JSONL file", error=DatasetError)
    if not rows:
        raise DatasetError(f"{path} has no rows")
    items = []
    for number, row in rows:
        topic, output = row.get("topic"), row.get("output")
        if not isinstance(topic, str) or not topic.strip():
            raise DatasetError(f"{path}, line {number}: missing 'topic' string")
        if output is not None and not isinstance(output, str):
            raise DatasetError(f"{path}, line {number}: 'output' must be a string")
        raw = row.get("input")
        question = (_QUESTION_PREFIX.sub("", raw).strip() if isinstance(raw, str) else "")
        topic = topic.strip()
        items.append(Item(
            id=topic,
            question=question or BIO_TEMPLATE.format(entity=topic),
            topic=topic,
            draft=output or "",
            meta={k: v for k, v in row.items() if k in ("cat",)},
        ))
    return _check_unique(items, path)


def _fold(topic: str) -> str:
    """Topic key that ignores case and a trailing disambiguation like "(footballer)"."""
    return " ".join(re.sub(r"\s*\([^)]*\)\s*$", "", topic).casefold().split())


def attach_drafts(items: list[Item], drafts_path: str | os.PathLike[str]) -> list[Item]:
    """Give each item the draft whose topic matches (exactly, else ignoring case and a
    trailing parenthetical). Items without a match keep `draft=None` and get
    `meta["draft_missing"] = True`, so the caller can warn; they will be generated."""
    by_topic: dict[str, str] = {}
    by_fold: dict[str, str] = {}
    for draft in load_factscore(drafts_path):
        by_topic[draft.topic or draft.id] = draft.draft or ""
        by_fold.setdefault(_fold(draft.topic or draft.id), draft.draft or "")
    out = []
    for item in items:
        topic = item.topic or item.id
        text = by_topic.get(topic, by_fold.get(_fold(topic)))
        if text is None:
            out.append(item.model_copy(update={"meta": {**item.meta, "draft_missing": True}}))
        else:
            out.append(item.model_copy(update={"draft": text}))
    return out


def load_dataset(name: str, path: str | os.PathLike[str],
                 drafts: str | os.PathLike[str] | None = None) -> list[Item]:
    """Load a dataset by its CLI name: `bio`, `truthfulqa` or `factscore`."""
    loaders = {"bio": load_bio, "truthfulqa": load_truthfulqa, "factscore": load_factscore}
    if name not in loaders:
        raise DatasetError(f"unknown dataset {name!r}; valid: {', '.join(DATASETS)}")
    items = loaders[name](path)
    if drafts is not None:
        if name != "bio":
            raise DatasetError("--drafts only applies to the bio dataset "
                               "(the factscore dataset already carries its drafts)")
        items = attach_drafts(items, drafts)
    return items
