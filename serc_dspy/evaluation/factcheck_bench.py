"""`serc bench factcheck`: run methods over Factcheck-Bench items and score them resumably.

Layout of `--out DIR` (`E` is `""` for the automatic evidence and `-human` for the
annotators'):
- `DIR/{method}E.jsonl` (+ `.meta.json`): the runner's results, one line per answer;
- `DIR/{method}E.factcheck.jsonl`: per-answer claim scores, reused while the answer is
  unchanged (the judge is asked again only for new answers and failed claims);
- `DIR/judge-agreement.json`: the claim judge against the hand-labelled sample, per judge LM;
- `DIR/factcheck.json` and `DIR/factcheck.md`: every method, each rate with its interval.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dspy

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import file_sha256, read_json, write_json, write_jsonl
from serc_dspy.core.trace import Trace
from serc_dspy.evaluation.ablation import ablation, ablation_table, seed_ablation, variants
from serc_dspy.evaluation.benchmarks import accepts_rules, with_rules_off
from serc_dspy.evaluation.datasets import Item
from serc_dspy.evaluation.factcheck import (
    ClaimJudge,
    FactcheckItem,
    answer_hash,
    judge_agreement,
    load_factcheck,
    load_labels,
    read_scores,
    score_answer,
    summarize_factcheck,
    trained_items,
)
from serc_dspy.evaluation.intervals import format_ci
from serc_dspy.evaluation.protocol import split_of_items
from serc_dspy.evaluation.results import lm_name, read_results, sibling
from serc_dspy.evaluation.runner import run_experiment
from serc_dspy.retrieval.local import LocalCorpus
from serc_dspy.runtime.adapter import StrictJSONAdapter

SCORES_SUFFIX = ".factcheck.jsonl"


class _NamedRetriever:
    """Names the per-item retriever in a results file's meta; never called."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, query: str, k: int = 5):  # pragma: no cover - never used
        raise UserError("per-item retriever called without an item")


def select_items(items: Sequence[FactcheckItem], *, count: int | None, offset: int,
                 trained_state: Mapping[str, Any] | None, include_trained: bool
                 ) -> tuple[list[FactcheckItem], list[str], list[str]]:
    """(items to run, ids excluded as trained on, ids without any passage)."""
    chosen = list(items)[offset: offset + count if count else None]
    if not chosen:
        raise UserError(f"no Factcheck-Bench items after --offset {offset} "
                        f"(the file has {len(items)})")
    excluded = [] if include_trained else trained_items(chosen, trained_state)
    chosen = [i for i in chosen if i.id not in excluded]
    bare = [i.id for i in chosen if not i.passages]
    return [i for i in chosen if i.passages], excluded, bare


def corpus_of(item: FactcheckItem) -> LocalCorpus:
    return LocalCorpus.from_documents(item.passages, name=item.id)


def score_run(path: Path, items: Mapping[str, FactcheckItem], judge: Any) -> list:
    """Score a results file into `RUN.factcheck.jsonl`; an answer scored before (same hash, no
    unscored claim) is kept as it was, and so is an ablation's answer carried over from the
    full run (`carried_from`): judging the same text again would only add the judge's noise
    to the paired difference. Returns the scores (None for a failed answer)."""
    out = sibling(path, SCORES_SUFFIX)
    before = read_scores(out) if out.is_file() else {}
    carried: dict[str, dict] = {}
    rows, scores = [], []
    for record in read_results(path):
        item = items.get(str(record.get("id")))
        if item is None:
            continue
        if record.get("error"):
            rows.append({"id": item.id, "failed": True, "error": record["error"]})
            scores.append(None)
            continue
        answer = record.get("answer") or ""
        old = before.get(item.id)
        source = record.get("carried_from")
        if old is None and source:  # an ablation's carried answer keeps its first score
            if source not in carried:
                scored = sibling(path.parent / source, SCORES_SUFFIX)
                carried[source] = read_scores(scored) if scored.is_file() else {}
            old = carried[source].get(item.id)
            old = old.model_copy(update={"method": record.get("method") or old.method}) \
                if old is not None else None
        if old is not None and old.answer_hash == _hash(answer) and \
                all(c.outcome is not None for c in old.claims):
            score = old
        else:
            trace = Trace.model_validate(record["trace"]) if record.get("trace") else None
            usage = trace.usage.total if trace is not None else None
            score = score_answer(item, answer, method=str(record.get("method") or "?"),
                                 judge=judge, usage=usage)
        rows.append(score.model_dump(mode="json"))
        scores.append(score)
    write_jsonl(out, rows)
    return scores


def _hash(answer: str) -> str:
    return answer_hash(answer)


def written_by_a_run(path: Path, dataset: str) -> bool:
    """Whether a results file was written by a run on `dataset` (its meta says so): a stray
    `notes.jsonl` in the folder is never scored as a method."""
    meta = sibling(path, ".meta.json")
    try:
        data = read_json(meta, what="results meta") if meta.is_file() else None
    except UserError:
        return False
    return isinstance(data, dict) and data.get("dataset") == dataset


MIN_JUDGE_AGREEMENT = 0.8
"""A claim judge scores only where its measured agreement with the hand labels is at least
this (the project's protocol); below it, or unmeasured, a claim the word paths cannot decide is
undecided: counted, and left out of the rates."""


def judge_trusted(agreement: Mapping[str, Any] | None) -> bool:
    """Whether the measured judge may score claims: its agreement's point estimate is at least
    `MIN_JUDGE_AGREEMENT` and it failed on none of the labelled claims."""
    judged = (agreement or {}).get("judge") or {}
    value = judged.get("agreement")
    return value is not None and value >= MIN_JUDGE_AGREEMENT and not judged.get("failed")


def measure_judge(out: Path, labels_path: Path, judge_lm: Any) -> dict[str, Any] | None:
    """The claim judge against the hand labels, cached per judge LM and labels file."""
    if not labels_path.is_file():
        return None
    key = (file_sha256(labels_path) or "")[:16]
    name = lm_name(judge_lm)
    cache = out / "judge-agreement.json"
    cached = read_json(cache, what="judge agreement cache") if cache.is_file() else {}
    entry = cached.get(f"{name}|{key}")
    if entry is None or entry["judge"]["failed"]:
        with dspy.context(adapter=StrictJSONAdapter()):
            entry = judge_agreement(load_labels(labels_path), ClaimJudge(judge_lm))
        entry.update(judge_lm=name, labels=str(labels_path), labels_sha256=key)
        cached[f"{name}|{key}"] = entry
        write_json(cache, cached)
    return entry


def run_factcheck(
    data: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    methods: Sequence[str],
    items: int | None = None,
    offset: int = 0,
    evidence_kind: str = "auto",
    lm: Any = None,
    judge_lm: Any = None,
    labels: str | os.PathLike[str] | None = None,
    trained_state: Mapping[str, Any] | None = None,
    include_trained: bool = False,
    ablate: Sequence[str] = (),
    ablate_rerun_all: bool = False,
    progress: bool = True,
    on_run: Any = None,
    **method_options: Any,
) -> dict[str, Any]:
    """Decode the chosen items with each method against their own passages, score every
    results file in `out_dir`, and write `factcheck.json` / `factcheck.md`."""
    if not methods:
        raise UserError("give at least one --method")
    evidence = evidence_kind
    everything = load_factcheck(data, evidence=evidence)
    chosen, excluded, bare = select_items(everything, count=items, offset=offset,
                                          trained_state=trained_state,
                                          include_trained=include_trained)
    if not chosen:
        raise UserError(f"none of the chosen items has {evidence} evidence passages")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    by_id = {i.id: i for i in chosen}
    suffix = "" if evidence == "auto" else f"-{evidence}"
    runs = [i for i in chosen]
    numbers = [i.number for i in runs]

    for label, method, rules_off in variants(methods, ablate, accepts_rules):
        path = out / f"{label}{suffix}.jsonl"
        if rules_off and not ablate_rerun_all:
            seed_ablation(out / f"{method}{suffix}.jsonl", path, rules_off, progress)
        summary = run_experiment(
            method, [Item(id=i.id, question=i.question, topic=i.id, draft=i.draft) for i in runs],
            path, lm=lm, progress=progress, dataset=f"factcheck-{evidence}",
            retriever=_NamedRetriever(f"factcheck-{evidence}-evidence"),
            retriever_for=lambda item: corpus_of(by_id[item.id]),
            meta={"data": str(data), "evidence": evidence, "offset": offset, "items": items,
                  "split": split_of_items(numbers), "excluded_as_trained": excluded,
                  "without_passages": bare},
            **with_rules_off(method_options, rules_off))
        if on_run:
            on_run(label, summary)
    judge = ClaimJudge(judge_lm if judge_lm is not None else lm)
    report: dict[str, Any] = {"methods": {}, "evidence": evidence, "items": numbers,
                              "split": split_of_items(numbers), "excluded_as_trained": excluded,
                              "without_passages": bare}
    labels_path = Path(labels) if labels else None
    if labels_path is not None:
        if progress:
            print(f"[serc] measuring the claim judge on the hand labels ({labels_path.name}; "
                  "cached once measured)", file=sys.stderr, flush=True)
        report["judge_agreement"] = measure_judge(out, labels_path,
                                                  judge_lm if judge_lm is not None else lm)
    report["judge_used"] = judge_trusted(report.get("judge_agreement"))
    if not report["judge_used"] and progress:
        print(f"[serc] the claim judge's agreement with the hand labels is under "
              f"{MIN_JUDGE_AGREEMENT} (or unmeasured): claims the word paths cannot decide are "
              "reported as undecided and left out of the rates", file=sys.stderr, flush=True)
    with dspy.context(adapter=StrictJSONAdapter()):
        for path in sorted(out.glob(f"*{suffix}.jsonl")):
            method = path.name[: -len(f"{suffix}.jsonl")]
            if path.name.endswith(SCORES_SUFFIX) or (not suffix and method.endswith("-human")):
                continue
            if not written_by_a_run(path, f"factcheck-{evidence}"):
                if progress:
                    print(f"[serc] not scored: {path.name} (no meta of a factcheck-{evidence} "
                          "run beside it)", file=sys.stderr, flush=True)
                continue
            if progress:
                print(f"[serc] scoring {path.name} against the human labels", file=sys.stderr,
                      flush=True)
            scores = [s for s in score_run(path, by_id,
                                           judge if report["judge_used"] else None)]
            report["methods"][method] = summarize_factcheck(scores)
    report["judge_calls"] = judge.calls
    report["ablation"] = ablation(out, "factcheck")
    write_json(out / f"factcheck{suffix}.json", report)
    (out / f"factcheck{suffix}.md").write_text(factcheck_table(report), encoding="utf-8")
    return report


def factcheck_table(report: Mapping[str, Any]) -> str:
    """One row per method; rates carry their 95% interval over answers."""
    lines = [
        "| method | answers | false claims | fixed | removed | left | fixed or removed | "
        "true claims | kept | false alarm | true removed | all right | introduced/answer | "
        "degenerate/answer | verbatim | calls/answer | tokens/answer |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for method, s in report.get("methods", {}).items():
        def ci(name, spec=".3f", s=s):
            return format_ci(s.get(name), s.get(f"{name}_ci"), spec)

        lines.append(
            f"| {method} | {s['items']} | {s['false_claims']} | {ci('fixed_rate')} | "
            f"{ci('removed_rate')} | {ci('residual_rate')} | {ci('fixed_or_removed_rate')} | "
            f"{s['true_claims']} | {ci('kept_rate')} | {ci('false_alarm_rate')} | "
            f"{ci('true_removed_rate')} | {ci('perfect_answer_rate')} | "
            f"{ci('introduced_per_answer', '.2f')} | {ci('degenerate_per_answer', '.2f')} | "
            f"{ci('verbatim_share')} | {format_ci(s.get('calls_per_answer'), None, '.1f')} | "
            f"{format_ci(s.get('tokens_per_answer'), None, '.0f')} |")
    notes = []
    paths = {m: s.get("paths") or {} for m, s in report.get("methods", {}).items()}
    for method, shares in paths.items():
        parts = ", ".join(f"{p} {v:.0%}" for p, v in shares.items() if v is not None)
        unscored = report["methods"][method].get("unscored_claims")
        notes.append(f"- {method}: claims scored by {parts}"
                     + (f"; {unscored} undecided (left out of the rates)" if unscored else ""))
    agreement = report.get("judge_agreement")
    if agreement:
        j, w = agreement["judge"], agreement["words"]
        notes.append(f"- claim judge ({agreement.get('judge_lm')}) against "
                     f"{agreement['labels']} hand-labelled claims: "
                     f"{format_ci(j.get('agreement'), j.get('agreement_ci'))} agreement "
                     f"({j['n']} judged, {j['failed']} failed); the word paths: "
                     f"{format_ci(w.get('agreement'), w.get('agreement_ci'))} on the "
                     f"{w['n']} they decide"
                     + ("" if report.get("judge_used", True) else
                        f"; under {MIN_JUDGE_AGREEMENT}, so the judge scored nothing"))
    excluded = report.get("excluded_as_trained") or []
    if excluded:
        notes.append(f"- excluded as trained on by the compiled state: {', '.join(excluded)}")
    if report.get("without_passages"):
        notes.append(f"- without {report.get('evidence')} passages (not run): "
                     f"{', '.join(report['without_passages'])}")
    table = "\n".join(lines) + "\n\n" + "\n".join(notes) + ("\n" if notes else "")
    ablated = ablation_table(report.get("ablation") or [])
    return table + (f"\nRules switched off, against the full method:\n\n{ablated}"
                    if ablated else "")
