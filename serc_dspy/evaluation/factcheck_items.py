"""Factcheck-Bench's data: answers, their labelled claims and passages, and the hand labels.

Each item is a ChatGPT answer (the draft) to a prompt (the question), decomposed by people into
claims, each labelled true or false, with a revised claim for each false one and the web
passages they verified it against. This module only reads that file (and the hand-labelled
sample of claim outcomes the judge is measured against); deciding what an answer did with a
claim is `factcheck_claims`, scoring it is `factcheck`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from serc_dspy.core.errors import UserError, describe, first_problem
from serc_dspy.core.io import read_jsonl_rows
from serc_dspy.core.text import normalise

Label = Literal["true", "false", "unknown"]
Outcome = Literal["fixed", "removed", "left", "kept", "altered"]
Evidence = Literal["auto", "human"]


_URL_LINE = re.compile(r"\s*Link:\s*(https?://\S+)\s*$", re.I)
_NO_EVIDENCE = {"", "na", "no evidence", "none", "n/a"}


class BenchClaim(BaseModel):
    index: int
    sentence: int
    sentence_text: str
    text: str
    label: Label
    revised: str = ""


class FactcheckItem(BaseModel):
    """One answer of the benchmark, with the passages of the chosen evidence kind."""

    id: str
    number: int
    question: str
    draft: str
    claims: list[BenchClaim]
    passages: list[tuple[str, str]] = Field(default_factory=list)
    """(source, text); the source is the passage's URL where the data gives one."""


class BenchSentence(BaseModel):
    """One sentence of an item as the file must hold it: a claim list is a list of strings, one
    label per claim (true, false or "unknown"), evidence groups lists of strings. A string
    where a list belongs would be read letter by letter, so it is refused, not iterated."""

    model_config = ConfigDict(extra="ignore", strict=True)

    text: str = ""
    claims: list[str] = Field(default_factory=list)
    claims_factuality_label: list[bool | str] = Field(default_factory=list)
    revised_claims: list[str | None] = Field(default_factory=list)
    auto_evidence: list[list[str | None] | None] = Field(default_factory=list)
    auto_evidence_url: list[list[str | None] | None] = Field(default_factory=list)
    human_evidence: list[str | None] = Field(default_factory=list)

    @field_validator("claims_factuality_label")
    @classmethod
    def _labels(cls, labels: list[bool | str]) -> list[bool | str]:
        for value in labels:
            if isinstance(value, str) and value.strip().lower() not in ("true", "false",
                                                                         "unknown"):
                raise ValueError(f"label {value!r} is not true, false or unknown")
        return labels

    @model_validator(mode="after")
    def _one_label_per_claim(self) -> BenchSentence:
        if len(self.claims_factuality_label) != len(self.claims):
            raise ValueError(f"{len(self.claims)} claims but "
                             f"{len(self.claims_factuality_label)} labels")
        return self


def _label(value: bool | str) -> Label:
    if value is True or str(value).strip().lower() == "true":
        return "true"
    if value is False or str(value).strip().lower() == "false":
        return "false"
    return "unknown"


def _human_passage(raw: Any, where: str) -> tuple[str, str] | None:
    text = str(raw or "").strip()
    if text.lower().rstrip(".") in _NO_EVIDENCE or (text.startswith("http") and " " not in text):
        return None  # no evidence, or a bare link whose page the data does not hold
    link = _URL_LINE.search(text)
    if link:
        return link.group(1), text[: link.start()].strip()
    return where, text


def _item(row: dict[str, Any], number: int, path: Path, evidence: Evidence) -> FactcheckItem:
    def bad(reason: str) -> UserError:
        return UserError(f"{path}, line {number}: {reason}")

    for key in ("prompt", "response"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise bad(f"no {key!r} text")
    sentences = row.get("sentences")
    if not isinstance(sentences, dict):
        raise bad("no 'sentences' object")
    claims: list[BenchClaim] = []
    passages: dict[tuple[str, str], None] = {}
    for s_index, (key, raw) in enumerate(sentences.items()):
        try:
            sentence = BenchSentence.model_validate(raw)
        except ValidationError as exc:
            raise bad(f"sentence {key!r} is malformed ({first_problem(exc)})") from None
        for c_index, claim in enumerate(sentence.claims):
            revised = sentence.revised_claims
            claims.append(BenchClaim(
                index=len(claims), sentence=s_index, sentence_text=sentence.text,
                text=claim, label=_label(sentence.claims_factuality_label[c_index]),
                revised=str(revised[c_index] or "") if c_index < len(revised) else ""))
        if evidence == "auto":
            for group, urls in zip(sentence.auto_evidence, sentence.auto_evidence_url,
                                   strict=False):
                for text, url in zip(group or [], urls or [], strict=False):
                    if str(text or "").strip():
                        passages[(str(url or f"factcheck item {number}"), str(text).strip())] = None
        else:
            for c_index, raw_passage in enumerate(sentence.human_evidence):
                found = _human_passage(raw_passage, f"human evidence, item {number}, "
                                                    f"sentence {s_index + 1}, claim {c_index + 1}")
                if found:
                    passages[found] = None
    return FactcheckItem(id=f"factcheck-{number}", number=number, question=row["prompt"].strip(),
                         draft=row["response"].strip(), claims=claims, passages=list(passages))


def load_factcheck(path: str | Path, *, evidence: Evidence = "auto") -> list[FactcheckItem]:
    """Every item of Factcheck-Bench's `benchmark_dev.jsonl`, numbered from 1 in file order.

    A line that is not a well-formed item is an error naming the file and line."""
    path = Path(path)
    if evidence not in ("auto", "human"):
        raise UserError(f"evidence must be 'auto' or 'human', got {evidence!r}")
    items = [_item(row, number, path, evidence)
             for number, row in read_jsonl_rows(path, what="Factcheck-Bench file")]
    if not items:
        raise UserError(f"{path} holds no Factcheck-Bench items (JSON lines)")
    return items


def trained_items(items: Sequence[FactcheckItem], state: Mapping[str, Any] | None
                  ) -> list[str]:
    """Ids of the items a compiled state learned from: a demo of any predictor quotes one of
    their claims or their prompt. Their figures would measure memory, not correction."""
    if not state:
        return []
    quoted: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            quoted.add(normalise(value))
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    for predictor in (state.get("state") or {}).values():
        walk((predictor or {}).get("demos") or [])
    quoted.discard("")
    return [item.id for item in items
            if normalise(item.question) in quoted
            or any(normalise(c.text) in quoted for c in item.claims)]


class LabelledClaim(BaseModel):
    """A claim, an answer, and what a person decided the answer does with the claim."""

    item: str
    method: str = ""
    claim: BenchClaim
    draft: str
    answer: str
    outcome: Outcome
    note: str = ""


def load_labels(path: str | Path) -> list[LabelledClaim]:
    rows = []
    for number, row in read_jsonl_rows(path, what="judge labels"):
        try:
            rows.append(LabelledClaim.model_validate(row))
        except ValueError as exc:
            raise UserError(f"{path}, line {number}: not a labelled claim "
                            f"({describe(exc)})") from None
    return rows


def packaged_labels() -> Path:
    """The hand-labelled sample shipped with the package."""
    import importlib.resources

    return Path(str(importlib.resources.files("serc_dspy") / "evaluation" / "data"
                    / "factcheck_judge_labels.jsonl"))
