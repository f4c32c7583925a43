"""Real labelled data -> `dspy.Example`s for compiling SERC's stages.

Each stage's metric lives with the package's other metrics in
`serc_dspy.evaluation.metrics.dspy_metrics`; below, each is described with the data it scores.

Three stages, three datasets (paths are always arguments; nothing here knows where data lives):

verify (`single_verifier`, signature JudgeFact: evidence, claim -> verdict)
    Factcheck-GPT stance data (`subtask3_claim_evidence_stance*.jsonl`, rows
    `{claim, evidence, stance}`): completely-support -> SUPPORTED, refute -> CONTRADICTED,
    irrelevant -> NOT_FOUND; partially-support is left out (neither label fits). Rows repeating
    a (claim, evidence) pair are kept once; pairs annotated with conflicting stances are
    dropped. Metric: exact verdict (`verdict_metric`); `macro_f1` over the three labels is
    reported next to it. Irrelevant dominates the data (2,057 irrelevant vs 161 refute in the
    full set), so `balanced=True` (the CLI default) samples train and dev round-robin over the
    labels in hashed order: equal counts per label while every label has examples left, then
    the remaining labels continue (the counts report what was taken).

facts (`fact_extractor`, signature AtomicFacts: subject, sentence -> facts)
    FActScore human-labelled bios (`labeled*/*.jsonl`): one example per annotated sentence,
    subject = the row's `topic`, sentence = `annotations[].text`, facts =
    `annotations[].human-atomic-facts[].text`. Rows with null annotations and sentences with
    null human facts are skipped. Metric (`facts_metric` / `fact_f1`): fact-level F1 under a
    greedy one-to-one matching: all (predicted, gold) pairs are scored with
    `serc_dspy.core.text.similarity` (character-level ratio after lower-casing and dropping
    punctuation), taken best-first, and a pair matches when both facts are still unmatched and
    the score is >= `FACT_MATCH_THRESHOLD` (0.7). Precision = matches / predicted, recall =
    matches / gold; two empty lists score 1, one empty list 0. On the labelled data,
    FActScore's own model facts score 0.82 against the human facts at 0.7, while the whole
    sentence taken as one fact scores 0.19.

correct (`corrector`, signature CorrectFacts: subject, evidence, erroneous_facts,
related_facts -> corrections)
    Factcheck-GPT claims judged false with a revised claim (`subtask4_claim_factuality*.jsonl`,
    rows `{claim, label, revised_claim}`; rows whose revision equals the claim are skipped).
    Evidence: the claim's passages in the stance file annotated `refute`, joined by blank
    lines; if it has none, its `partially-support` passages; claims with neither are skipped
    (their passages are irrelevant, so no correction can come from them). Subject: the prompt
    of the Factcheck-GPT answer the claim belongs to (benchmark file, when given and the claim
    is found there), else the claim itself. erroneous_facts = [claim], related_facts = [],
    gold corrections = [FactFix(original=claim, fixed=revised_claim)]. Metric
    (`correction_metric` / `correction_score`): the returned fix whose `original` quotes the
    claim (similarity >= `QUOTE_THRESHOLD`, 0.9) is scored by how much of the gap between the
    claim and the gold revision it closes: `(sim(fixed, gold) - sim(claim, gold)) /
    (1 - sim(claim, gold))`, clipped to [0, 1]. Unquoted, unchanged or emptied facts score 0;
    the gold revision scores 1.

Splits are deterministic and independent of file order: every example belongs to a group
(the claim for Factcheck-GPT, the topic for FActScore), and a group goes to dev when
`sha256(seed, group)` falls under `dev_share` (0.5 by default), so one claim's passages or
one person's sentences never straddle train and dev, and the dev split does not depend on how
many training examples are asked for. Inside each side, examples are ordered by
`sha256(seed, example id)` and the first `train` / `dev` are taken (balanced: round-robin over
labels). Each loader returns a `Split` with the examples and counts of what was read, skipped
and taken.
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import file_sha256, read_jsonl
from serc_dspy.core.text import normalise
from serc_dspy.evaluation.metrics.dspy_metrics import VERDICT_LABELS
from serc_dspy.signatures import FactFix

STANCE_TO_VERDICT = {
    "completely-support": "SUPPORTED",
    "refute": "CONTRADICTED",
    "irrelevant": "NOT_FOUND",
}
AMBIGUOUS_STANCES = ("partially-support",)
DEFAULT_SEED = 0
DEFAULT_DEV_SHARE = 0.5

VERDICT_INPUTS = ("evidence", "claim")
FACT_INPUTS = ("subject", "sentence")
CORRECTION_INPUTS = ("subject", "evidence", "erroneous_facts", "related_facts")


class DataError(UserError):
    """A data file is missing or malformed; the message names the file (and line)."""


@dataclass
class Split:
    """Train and dev examples of one stage, and counts of how they were obtained."""

    train: list[dspy.Example]
    dev: list[dspy.Example]
    counts: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Item:
    id: str
    group: str
    example: dspy.Example
    label: str | None = None


# -- reading -------------------------------------------------------------------------------------
def _data_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a data file (`serc_dspy.core.io.read_jsonl`: a missing file or a bad line raises
    `DataError` naming it). Each file's `file_sha256` goes into the counts, so a compiled
    state names its exact data."""
    return read_jsonl(path, what="data file", error=DataError)


def _text(value: Any) -> str:
    return " ".join(str(value).split()) if isinstance(value, str) else ""


# -- deterministic splitting ---------------------------------------------------------------------
def _unit(seed: int, *parts: str) -> float:
    """A number in [0, 1) fixed by the seed and the parts (stable across runs and platforms)."""
    digest = hashlib.sha256("\x1f".join([str(seed), *parts]).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _take(items: list[_Item], n: int | None, balanced: bool, seed: int) -> list[_Item]:
    ordered = sorted(items, key=lambda item: (_unit(seed, "order", item.id), item.id))
    if n is None:
        n = len(ordered)
    if not balanced:
        return ordered[:n]
    by_label: dict[str | None, list[_Item]] = defaultdict(list)
    for item in ordered:
        by_label[item.label].append(item)
    order = [label for label in VERDICT_LABELS if label in by_label]
    order += sorted((label for label in by_label if label not in VERDICT_LABELS), key=str)
    queues = [by_label[label] for label in order]
    taken: list[_Item] = []
    position = 0
    while len(taken) < n and any(position < len(q) for q in queues):
        for queue in queues:
            if position < len(queue) and len(taken) < n:
                taken.append(queue[position])
        position += 1
    return taken


def split_items(items: Sequence[_Item], *, train: int | None, dev: int | None, seed: int,
                dev_share: float, balanced: bool) -> tuple[list[_Item], list[_Item], dict]:
    """Group-wise hashed split, then the first `train` / `dev` examples of each side."""
    for name, value in (("train", train), ("dev", dev)):
        if value is not None and value < 0:
            raise UserError(f"{name} size must be >= 0, got {value}")
    if not 0.0 < dev_share < 1.0:
        raise UserError(f"dev_share must be between 0 and 1, got {dev_share}")
    pools: dict[str, list[_Item]] = {"train": [], "dev": []}
    for item in items:
        side = "dev" if _unit(seed, "side", item.group) < dev_share else "train"
        pools[side].append(item)
    chosen_train = _take(pools["train"], train, balanced, seed)
    chosen_dev = _take(pools["dev"], dev, balanced, seed)

    def labels(chosen: list[_Item]) -> dict[str, int]:
        return dict(sorted(Counter(str(i.label) for i in chosen).items()))

    counts = {
        "pool": {side: len(pool) for side, pool in pools.items()},
        "train": len(chosen_train),
        "dev": len(chosen_dev),
    }
    if any(item.label is not None for item in items):
        counts["pool_labels"] = {side: labels(pool) for side, pool in pools.items()}
        counts["train_labels"] = labels(chosen_train)
        counts["dev_labels"] = labels(chosen_dev)
    return chosen_train, chosen_dev, counts


def _split(items: list[_Item], counts: dict[str, Any], *, train, dev, seed, dev_share,
           balanced=False) -> Split:
    chosen_train, chosen_dev, split_counts = split_items(
        items, train=train, dev=dev, seed=seed, dev_share=dev_share, balanced=balanced)
    counts.update(split_counts)
    counts.update(seed=seed, dev_share=dev_share, balanced=balanced)
    return Split([i.example for i in chosen_train], [i.example for i in chosen_dev], counts)


def _id(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:16]


# -- verify: Factcheck-GPT stances ---------------------------------------------------------------
def verdict_items(path: str | os.PathLike[str]) -> tuple[list[_Item], dict[str, Any]]:
    rows = _data_rows(path)
    skipped: Counter[str] = Counter()
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    order: list[tuple[str, str]] = []
    for row in rows:
        claim, evidence = _text(row.get("claim")), _text(row.get("evidence"))
        stance = str(row.get("stance") or "").strip().lower()
        if not claim or not evidence:
            skipped["empty claim or evidence"] += 1
            continue
        if stance in AMBIGUOUS_STANCES:
            skipped[stance] += 1
            continue
        if stance not in STANCE_TO_VERDICT:
            skipped[f"unknown stance {stance!r}"] += 1
            continue
        key = (claim, evidence)
        if key in seen:
            skipped["duplicate pair"] += 1
        else:
            order.append(key)
        seen[key].add(STANCE_TO_VERDICT[stance])
    items = []
    for claim, evidence in order:
        verdicts = seen[(claim, evidence)]
        if len(verdicts) > 1:
            skipped["conflicting stances"] += 1
            continue
        verdict = next(iter(verdicts))
        example = dspy.Example(evidence=evidence, claim=claim,
                               verdict=verdict).with_inputs(*VERDICT_INPUTS)
        items.append(_Item(_id(claim, evidence), normalise(claim), example, verdict))
    counts = {"source": Path(path).name, "sha256": {Path(path).name: file_sha256(path)},
              "rows": len(rows), "examples": len(items),
              "skipped": dict(skipped),
              "labels": dict(sorted(Counter(i.label for i in items).items()))}
    return items, counts


def load_verdict_examples(path: str | os.PathLike[str], *, train: int | None = None,
                          dev: int | None = None, seed: int = DEFAULT_SEED,
                          dev_share: float = DEFAULT_DEV_SHARE,
                          balanced: bool = False) -> Split:
    """JudgeFact examples (evidence, claim -> verdict) from a Factcheck-GPT stance file.

    `train` / `dev` cap the split sizes (None = all); `balanced` samples labels round-robin.
    """
    items, counts = verdict_items(path)
    return _split(items, counts, train=train, dev=dev, seed=seed, dev_share=dev_share,
                  balanced=balanced)


# -- facts: FActScore human atomic facts ---------------------------------------------------------
def _jsonl_files(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files: list[Path] = []
    for entry in paths:
        entry = Path(entry)
        if entry.is_dir():
            found = sorted(Path(p) for p in glob.glob(str(entry / "*.jsonl")))
            if not found:
                raise DataError(f"no .jsonl files in {entry}")
            files.extend(found)
        elif entry.is_file():
            files.append(entry)
        else:
            raise DataError(f"data file or folder not found: {entry}")
    return files


def fact_items(paths) -> tuple[list[_Item], dict[str, Any]]:
    files = _jsonl_files(paths)
    skipped: Counter[str] = Counter()
    items: list[_Item] = []
    rows_read = 0
    for file in files:
        for row in _data_rows(file):
            rows_read += 1
            topic = _text(row.get("topic"))
            annotations = row.get("annotations")
            if not topic:
                skipped["row without topic"] += 1
                continue
            if annotations is None:
                skipped["row with null annotations"] += 1
                continue
            for index, annotation in enumerate(annotations or []):
                sentence = _text((annotation or {}).get("text"))
                human = (annotation or {}).get("human-atomic-facts")
                if human is None:
                    skipped["sentence with null human facts"] += 1
                    continue
                if not sentence:
                    skipped["empty sentence"] += 1
                    continue
                facts = [_text(f.get("text")) for f in human if isinstance(f, dict)]
                facts = [f for f in facts if f]
                example = dspy.Example(subject=topic, sentence=sentence,
                                       facts=facts).with_inputs(*FACT_INPUTS)
                items.append(_Item(_id(file.stem, topic, str(index), sentence), topic, example))
    counts = {"source": [f.name for f in files],
              "sha256": {f.name: file_sha256(f) for f in files},
              "rows": rows_read, "examples": len(items),
              "skipped": dict(skipped),
              "gold_facts": sum(len(i.example.facts) for i in items)}
    return items, counts


def load_fact_examples(paths, *, train: int | None = None, dev: int | None = None,
                       seed: int = DEFAULT_SEED,
                       dev_share: float = DEFAULT_DEV_SHARE) -> Split:
    """AtomicFacts examples (subject, sentence -> facts) from FActScore labelled JSONL files.

    `paths`: a file, a folder of `.jsonl` files, or a list of either. Split by topic.
    """
    items, counts = fact_items(paths)
    return _split(items, counts, train=train, dev=dev, seed=seed, dev_share=dev_share)


# -- correct: Factcheck-GPT revised claims -------------------------------------------------------
def _benchmark_prompts(path: str | os.PathLike[str] | None) -> dict[str, str]:
    if path is None:
        return {}
    prompts: dict[str, str] = {}
    for row in _data_rows(path):
        prompt = _text(row.get("prompt"))
        sentences = row.get("sentences")
        if not prompt or not isinstance(sentences, dict):
            continue
        for sentence in sentences.values():
            for claim in (sentence or {}).get("claims") or []:
                if _text(claim):
                    prompts.setdefault(_text(claim), prompt)
    return prompts


def correction_items(claims_path, stance_path, benchmark_path=None
                     ) -> tuple[list[_Item], dict[str, Any]]:
    passages: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for row in _data_rows(stance_path):
        claim, evidence = _text(row.get("claim")), _text(row.get("evidence"))
        stance = str(row.get("stance") or "").strip().lower()
        if claim and evidence and evidence not in passages[claim][stance]:
            passages[claim][stance].append(evidence)
    prompts = _benchmark_prompts(benchmark_path)
    rows = _data_rows(claims_path)
    skipped: Counter[str] = Counter()
    evidence_kind: Counter[str] = Counter()
    subjects: Counter[str] = Counter()
    items: list[_Item] = []
    seen: set[str] = set()
    for row in rows:
        label = str(row.get("label")).strip().lower()
        claim, revised = _text(row.get("claim")), _text(row.get("revised_claim"))
        if label != "false":
            skipped[f"label {label}"] += 1
            continue
        if not claim or not revised:
            skipped["no claim or revised claim"] += 1
            continue
        if normalise(claim) == normalise(revised):
            skipped["revised claim equals the claim"] += 1
            continue
        if claim in seen:
            skipped["duplicate claim"] += 1
            continue
        stances = passages.get(claim, {})
        kind = "refute" if stances.get("refute") else (
            "partially-support" if stances.get("partially-support") else None)
        if kind is None:
            skipped["no refuting or partially supporting passage"] += 1
            continue
        seen.add(claim)
        evidence_kind[kind] += 1
        subject = prompts.get(claim)
        subjects["benchmark prompt" if subject else "the claim itself"] += 1
        example = dspy.Example(
            subject=subject or claim,
            evidence="\n\n".join(stances[kind]),
            erroneous_facts=[claim],
            related_facts=[],
            corrections=[FactFix(original=claim, fixed=revised)],
        ).with_inputs(*CORRECTION_INPUTS)
        items.append(_Item(_id(claim), normalise(claim), example))
    used = [Path(claims_path), Path(stance_path)] + ([Path(benchmark_path)]
                                                     if benchmark_path else [])
    counts = {"source": [p.name for p in used],
              "sha256": {p.name: file_sha256(p) for p in used},
              "rows": len(rows), "examples": len(items), "skipped": dict(skipped),
              "evidence": dict(evidence_kind), "subject": dict(subjects)}
    return items, counts


def load_correction_examples(claims_path, stance_path, *, benchmark_path=None,
                             train: int | None = None, dev: int | None = None,
                             seed: int = DEFAULT_SEED,
                             dev_share: float = DEFAULT_DEV_SHARE) -> Split:
    """CorrectFacts examples from Factcheck-GPT false claims with their revised claims."""
    items, counts = correction_items(claims_path, stance_path, benchmark_path)
    return _split(items, counts, train=train, dev=dev, seed=seed, dev_share=dev_share)
