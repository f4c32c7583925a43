"""`serc bench stages`: each SERC stage's accuracy on labelled data, in one table.

- verify, facts, correct: the compiling layer's dev splits and metrics (the split `serc
  compile` never trains on, same seed), evaluated on SERC's own predictor for the stage;
- firewall: the entity judge (`SameEntity`) on descriptor pairs built from Wikipedia leads
  (`factscore_wiki/wikipedia_dev.json`): same entity = the subject's birth or full name and the
  article title with the same characteristic; different entity = the subject's name with
  another article's characteristic (a namesake in another profession), or two subjects.

A compiled state (`--compiled`) is evaluated in place of the frozen prompts for the predictors
it carries.

It reads the compiling layer (its dev splits and stage programs), so among the measurements it
is the one that sits above `compiling`; nothing below imports it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dspy

from serc_dspy.compiling.compile import (
    evaluate_stage,
    find_stance_file,
    get_stage,
    load_stage_data,
    stage_program,
)
from serc_dspy.compiling.devsets import split_items, verdict_items
from serc_dspy.core.entities import Descriptor
from serc_dspy.core.errors import UserError
from serc_dspy.core.io import json_line, read_jsonl, write_json, write_jsonl
from serc_dspy.core.text import normalise
from serc_dspy.evaluation.factcheck import load_factcheck
from serc_dspy.evaluation.injection import load_articles, plain_title, split_article
from serc_dspy.evaluation.intervals import bootstrap_rate, bootstrap_statistic
from serc_dspy.evaluation.metrics.dspy_metrics import VERDICT_LABELS, macro_f1
from serc_dspy.evaluation.protocol import FACTCHECK_TUNING
from serc_dspy.programs.serc import SERC
from serc_dspy.rules.names import same_name
from serc_dspy.rules.quotes import hold_to_quote, opening_name
from serc_dspy.runtime.adapter import StrictJSONAdapter

STAGES = ("verify", "verify_cited", "facts", "correct", "firewall")
_CHARACTERISTIC = re.compile(r"\b(?:is|was) (?:an? |the )?([^.,;()]+?)(?:\s+(?:who|known|best|"
                             r"regarded|considered|and former|from)\b|[.,;(])")


def _characteristic(lead: str) -> str | None:
    m = _CHARACTERISTIC.search(lead)
    if not m:
        return None
    words = m.group(1).split()
    return " ".join(words[:6]) if words else None


def _lead_name(lead: str) -> str:
    """The name the lead opens with (before its first bracket or comma)."""
    return re.split(r"[(,]", lead, maxsplit=1)[0].strip()


def firewall_pairs(articles: dict[str, str], *, limit: int, seed: int = 0) -> list[dict]:
    """Balanced same/different descriptor pairs, in a seeded order."""

    people = []
    for title, text in articles.items():
        lead, _ = split_article(text)
        characteristic = _characteristic(lead)
        if characteristic:
            people.append((plain_title(title), _lead_name(lead), characteristic))
    if len(people) < 3:
        raise UserError("the firewall stage needs at least 3 articles with a readable lead")

    def order(*parts) -> str:
        return hashlib.sha256("\x1f".join(map(str, (seed, *parts))).encode()).hexdigest()

    same, different = [], []
    for i, (name, full, char) in enumerate(people):
        other_name, _, other_char = people[(i + 1) % len(people)]
        if full and full != name and len(full) < 60:
            same.append({"answer": f"{full} ({char})", "evidence": f"{name} ({char})",
                         "same": "YES"})
        same.append({"answer": f"{name} ({char})", "evidence": f"{name} ({char.split()[-1]})",
                     "same": "YES"})
        if other_char.split()[-1] != char.split()[-1]:
            different.append({"answer": f"{name} ({char})", "evidence": f"{name} ({other_char})",
                              "same": "NO"})
        different.append({"answer": f"{name} ({char})",
                          "evidence": f"{other_name} ({other_char})", "same": "NO"})
    same.sort(key=lambda p: order(p["answer"], p["evidence"]))
    different.sort(key=lambda p: order(p["answer"], p["evidence"]))
    half = max(1, limit // 2)
    pairs = same[:half] + different[: limit - min(half, len(same))]
    return sorted(pairs, key=lambda p: order(p["answer"], p["evidence"]))


def _descriptor(text: str):
    name, _, rest = text.partition(" (")
    return Descriptor(name=name, characteristic=rest.rstrip(")"))


def _firewall_score(pairs: list[dict], judge: dspy.Predict) -> dict[str, Any]:
    """The firewall's decision as SERC makes it: one normalised name passes with no judge call,
    otherwise the judge decides."""

    started = time.monotonic()
    failures = calls = 0
    values: list[float] = []
    for pair in pairs:
        if same_name(_descriptor(pair["answer"]).name, _descriptor(pair["evidence"]).name):
            values.append(float(pair["same"] == "YES"))
            continue
        calls += 1
        try:
            result = judge(answer_entity=pair["answer"], evidence_entity=pair["evidence"])
            values.append(float(result.same == pair["same"]))
        except Exception:  # noqa: BLE001 - a failed example scores 0 and is counted
            failures += 1
            values.append(0.0)
    n = len(pairs)
    return {"score": 100.0 * sum(values) / n if n else 0.0, "n": n, "failures": failures,
            "values": values,
            "seconds": round(time.monotonic() - started, 1), "judge_calls": calls,
            "same_pairs": sum(p["same"] == "YES" for p in pairs)}


def _find_articles(data: Path) -> Path:
    for candidate in (data / "factscore_wiki" / "wikipedia_dev.json", data / "wikipedia_dev.json",
                      data):
        if candidate.is_file():
            return candidate
    raise UserError(f"the firewall stage needs factscore_wiki/wikipedia_dev.json under {data}")


def run_stages(data: str | os.PathLike[str], *, stages: list[str] | None = None, dev: int = 40,
               seed: int = 0, offset: int = 0, lm: Any = None, compiled: str | None = None,
               out: str | os.PathLike[str] | None = None, progress: bool = False
               ) -> dict[str, Any]:
    """Evaluate each stage on its dev split; returns {"stages": {stage: score dict}, ...}.

    `offset` skips the first dev examples: `serc compile --dev N` selects states on the first N,
    so a report on the examples after them (`offset=N`) is on data nothing was chosen by.
    """

    root = Path(data).expanduser()
    if not root.exists():
        raise UserError(f"data path not found: {root}")
    chosen = list(dict.fromkeys(stages or STAGES))
    serc = SERC(compiled=compiled) if compiled else SERC()
    results: dict[str, Any] = {}
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        for stage in chosen:
            try:
                results[stage] = with_stage_intervals(_run_stage(
                    stage, root, serc, dev=dev, seed=seed, offset=offset, progress=progress))
            except UserError as exc:  # e.g. a split too small for the offset: say so, go on
                results[stage] = {"error": str(exc)}
            if out:
                _write(out, _summary(lm, compiled, seed, dev, offset, results))
    return _summary(lm, compiled, seed, dev, offset, results)


def _run_stage(stage: str, root: Path, serc, *, dev: int, seed: int, offset: int,
               progress: bool) -> dict[str, Any]:
    if stage == "firewall":
        pairs = firewall_pairs(load_articles(_find_articles(root)), limit=offset + dev,
                               seed=seed)[offset:]
        return _firewall_score(pairs, serc.entity_judge)
    split = load_stage_data(stage, root, train=0, dev=offset + dev, seed=seed)
    if len(split.dev) <= offset:
        raise UserError(f"the dev split of stage {stage!r} has {len(split.dev)} examples, "
                        f"none after --offset {offset}")
    split.dev = split.dev[offset:]
    program = stage_program(stage, getattr(serc, get_stage(stage).predictor))
    with contextlib.redirect_stdout(sys.stderr):  # dspy.Evaluate's bar: keep stdout clean
        score = evaluate_stage(program, split.dev, stage, display_progress=progress)
    return score.to_dict()


def with_stage_intervals(result: dict[str, Any]) -> dict[str, Any]:
    """A stage's score (percent) and macro-F1 with their 95% bootstrap intervals over
    examples; the per-example values stay in the JSON for `serc bench compare`-style reuse."""

    values = result.get("values")
    if not values:
        return result
    ci = bootstrap_rate([(100.0 * v, 1.0) for v in values])
    out = {**result, "score_ci": list(ci) if ci else None}
    gold, predicted = result.get("gold"), result.get("predicted")
    if gold and predicted:
        f1_ci = bootstrap_statistic(len(gold), lambda idx: macro_f1(
            [gold[i] for i in idx], [predicted[i] for i in idx], VERDICT_LABELS)[0])
        out["macro_f1_ci"] = list(f1_ci) if f1_ci else None
    return out


def _summary(lm, compiled, seed, dev, offset, results) -> dict[str, Any]:
    return {"lm": str(getattr(lm, "model", None)), "compiled": compiled, "seed": seed,
            "dev": dev, "offset": offset, "stages": dict(results)}


def _write(out: str | os.PathLike[str], summary: dict[str, Any]) -> None:
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "stages.json", summary)
    (folder / "stages.md").write_text(stages_table(summary), encoding="utf-8")


_FIGURE = {"verify": "verdict accuracy, JudgeFact", "facts": "fact-level F1",
           "verify_agree": "verdict accuracy, cited + a second vote to contradict",
           "verify_cited": "verdict accuracy, QuoteAndJudge + quote cross-check",
           "choose": "verdict accuracy, slot choice in two orders (sentence choice + a "
                     "second vote to contradict)",
           "correct": "gap closed", "firewall": "same/different accuracy"}
_DEV_FIGURE = {**_FIGURE, "choose": "exact option, ChooseValue (the value a bio states, its own "
                                    "or a planted rival listed first)"}


def stages_table(summary: dict[str, Any]) -> str:
    prompts = f"compiled {summary['compiled']}" if summary["compiled"] else "frozen prompts"
    first = summary.get("offset", 0) + 1
    split = (f"{summary['dev']} unseen stance pairs, seed {summary['seed']}"
             if summary.get("pairs") == "unseen" else
             f"dev split, seed {summary['seed']}, examples {first}-{first + summary['dev'] - 1}")
    figures = _FIGURE if summary.get("pairs") == "unseen" else _DEV_FIGURE
    lines = [f"Stages with {summary['lm']} ({prompts}; {split})",
             "",
             "| stage | figure | score | macro-F1 | n | failed | seconds |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for stage, s in summary["stages"].items():
        if "error" in s:
            lines.append(f"| {stage} | {figures.get(stage, '')} | – | – | – | – | – "
                         f"({s['error']}) |")
            continue
        score, f1 = s["score"], s.get("macro_f1")
        low_high = s.get("score_ci")
        f1_ci = s.get("macro_f1_ci")
        lines.append(
            f"| {stage} | {figures.get(stage, '')} | {score:.1f}"
            + (f" [{low_high[0]:.1f}, {low_high[1]:.1f}]" if low_high else "") + " | "
            + ("–" if f1 is None else f"{f1:.3f}" + (f" [{f1_ci[0]:.2f}, {f1_ci[1]:.2f}]"
                                                     if f1_ci else ""))
            + f" | {s['n']} | {s['failures']} | {s['seconds']} |")
    return "\n".join(lines) + "\n"


# -- verdicts on unseen stance pairs ------------------------------------------------------------
PAIR_STAGES = ("verify", "verify_cited", "verify_agree", "choose")
SEEN_DEV = 42
"""Balanced dev examples earlier sessions selected or reported on (`--dev 30`, then 31-42)."""
SEEN_TRAIN = 12
"""Train examples `serc compile --train 12` took its demos from."""


def unseen_pairs(root: Path, n: int, seed: int = 0) -> list[dspy.Example]:
    """`n` stance pairs nothing was compiled, selected or reported on: the balanced train and
    dev pools past what `serc compile` and earlier stage runs used, without the claims of
    Factcheck-Bench's tuning items (1-25). Labels round-robin, as balanced as the file allows
    (it holds few refuting pairs: every unseen CONTRADICTED pair is taken)."""

    items, _ = verdict_items(find_stance_file(root))
    train, dev, _ = split_items(items, train=None, dev=None, seed=seed, dev_share=0.5,
                                balanced=True)
    pool = train[SEEN_TRAIN:] + dev[SEEN_DEV:]
    tuning: set[str] = set()
    benchmark = root / "factcheck_gpt" / "benchmark_dev.jsonl"
    if benchmark.is_file():
        tuning = {normalise(c.text) for item in load_factcheck(benchmark)
                  if item.number in FACTCHECK_TUNING for c in item.claims}
    pool = [i for i in pool if i.group not in tuning]
    by_label: dict[str, list] = {}
    for item in pool:
        by_label.setdefault(item.label, []).append(item.example)
    chosen: list[dspy.Example] = []
    while len(chosen) < n and any(by_label.values()):
        for label in sorted(by_label):
            if by_label[label] and len(chosen) < n:
                chosen.append(by_label[label].pop(0))
    return chosen


def pair_key(example: dspy.Example) -> str:
    """A stance pair's key in the saved votes: a hash of its claim and evidence."""
    return hashlib.sha256(f"{example.claim}\n{example.evidence}".encode()).hexdigest()[:16]


def _pair_votes(serc, example: dspy.Example, need: set[str]) -> dict[str, str | None]:
    """One pair's verdict on each path in `need`, every LM call made once: the cited verdict
    serves `verify_cited` and `verify_agree`, and JudgeFact serves `verify` and the agreement
    path's second vote (asked only for a cited CONTRADICTED when `verify` is not scored)."""

    votes: dict[str, str | None] = {}
    judged = None
    if "choose" in need:
        votes["choose"] = _choice_verdict(serc, example)
    if "verify" in need:
        judged = serc.single_verifier(evidence=example.evidence, claim=example.claim).verdict
        votes["verify"] = judged
    if need & {"verify_cited", "verify_agree"}:
        cited = serc.fact_checker(evidence=example.evidence, claim=example.claim)
        verdict = hold_to_quote(cited.verdict, example.claim, cited.quote or "",
                                example.evidence, opening_name(example.claim)).verdict
        votes["verify_cited"] = verdict
        if "verify_agree" in need:
            if verdict == "CONTRADICTED":
                if judged is None:
                    judged = serc.single_verifier(evidence=example.evidence,
                                                  claim=example.claim).verdict
                verdict = judged
            votes["verify_agree"] = verdict
    return {stage: votes.get(stage) for stage in need}


def _choice_verdict(serc, example: dspy.Example) -> str:
    """The pair's verdict as `verdicts="choose"` decides it: the slot choices, or the sentence
    choice; a contradiction with no correction (a sentence choice's "opposite", a rejected
    slot) stands only when a second JudgeFact agrees (as `agree.contradiction` holds it in a
    run); unverified or disputed is NOT_FOUND. The claim comes without a subject: the chooser
    stands in the name it opens with."""
    chosen = serc.choice(subject="", claim=example.claim, passages=[example.evidence])
    if chosen.verdict is None:
        raise RuntimeError("every choice call failed")
    if chosen.verdict == "CONTRADICTED" and chosen.correction is None:
        second = serc.single_verifier(evidence=example.evidence, claim=example.claim).verdict
        return "CONTRADICTED" if second == "CONTRADICTED" else "NOT_FOUND"
    return chosen.verdict


def _score_votes(gold: list[str], predicted: list[str | None], failures: int,
                 seconds: float) -> dict[str, Any]:
    correct = [(float(g == p), 1.0) for g, p in zip(gold, predicted, strict=True)]
    f1, per_label = macro_f1(gold, predicted, VERDICT_LABELS)
    ci = bootstrap_rate([(100 * a, b) for a, b in correct])
    f1_ci = bootstrap_statistic(len(gold), lambda idx: macro_f1(
        [gold[i] for i in idx], [predicted[i] for i in idx], VERDICT_LABELS)[0])
    return {"score": 100 * sum(a for a, _ in correct) / len(correct), "n": len(correct),
            "failures": failures, "seconds": seconds,
            "score_ci": list(ci) if ci else None, "macro_f1": f1,
            "macro_f1_ci": list(f1_ci) if f1_ci else None, "per_label": per_label,
            "labels": {label: gold.count(label) for label in VERDICT_LABELS}}


def pair_verdicts(stages: list[str], serc, examples: list[dspy.Example], *, workers: int = 1,
                  progress: bool = False, votes_file: Path | None = None
                  ) -> dict[str, dict[str, Any]]:
    """Accuracy and macro-F1, with 95% intervals, of each verdict path on the same pairs:
    `verify` (JudgeFact), `verify_cited` (the cited verdict held to its quote), and
    `verify_agree` (the cited verdict, and a CONTRADICTED one only when a second JudgeFact
    agrees, as `agree.contradiction` decides; otherwise JudgeFact's verdict stands).

    The paths share their calls (`_pair_votes`), and `workers` pairs run at once, so an engine
    with several slots batches them. Each pair's votes are appended to `votes_file`, and a
    rerun takes the pairs found there instead of asking again (a stopped run resumes).
    `seconds` is the wall time of this run's pairs."""

    need = set(stages)
    keys = [pair_key(e) for e in examples]
    saved = _saved_votes(votes_file, need)
    started = time.monotonic()
    done = 0
    lock = threading.Lock()

    def vote(key: str, example: dspy.Example) -> dict[str, str | None] | None:
        nonlocal done
        if key in saved:
            votes = saved[key]
        else:
            try:
                votes = _pair_votes(serc, example, need)
            except Exception:  # noqa: BLE001 - a failed pair scores 0 on every path, counted
                votes = None
            if votes is not None and votes_file is not None:
                with lock, votes_file.open("a") as handle:
                    handle.write(json_line({"key": key, "votes": votes}))
        with lock:
            done += 1
            if progress:
                print(f"[verdict pairs] {done}/{len(examples)}", file=sys.stderr, end="\r")
        return votes

    lm, adapter = dspy.settings.lm, dspy.settings.adapter

    def vote_in_context(pair: tuple[str, dspy.Example]) -> dict[str, str | None] | None:
        with dspy.context(lm=lm, adapter=adapter):  # a worker thread starts without it
            return vote(*pair)

    with ThreadPoolExecutor(max(1, workers)) as pool:
        votes = list(pool.map(vote_in_context, zip(keys, examples, strict=True)))
    gold = [example.verdict for example in examples]
    failures = sum(v is None for v in votes)
    seconds = round(time.monotonic() - started, 1)
    return {stage: _score_votes(gold, [v[stage] if v else None for v in votes], failures,
                                seconds) for stage in stages}


def _saved_votes(votes_file: Path | None, need: set[str]) -> dict[str, dict[str, str | None]]:
    """The votes an earlier run of these paths saved, by pair key. A last line torn by a killed
    run is dropped from the file (its pair is asked again), so the next vote appends cleanly."""

    if votes_file is None or not votes_file.is_file():
        return {}
    torn: list[int] = []
    rows = read_jsonl(votes_file, what="saved pair votes", torn_last_line="skip",
                      on_torn=lambda number, text: torn.append(number))
    if torn:
        write_jsonl(votes_file, rows)
    return {row["key"]: row["votes"] for row in rows
            if isinstance(row.get("votes"), dict) and need <= set(row["votes"])}


def run_pair_stages(data: str | os.PathLike[str], *, stages: list[str] | None, pairs: int,
                    seed: int = 0, lm: Any = None, compiled: str | None = None,
                    out: str | os.PathLike[str] | None = None, progress: bool = False,
                    workers: int = 1) -> dict[str, Any]:
    """The verdict paths on `pairs` unseen stance pairs (`unseen_pairs`), `workers` at once;
    with `out`, each pair's votes are saved there as they come, and a rerun resumes."""

    root = Path(data).expanduser()
    if not root.exists():
        raise UserError(f"data path not found: {root}")
    examples = unseen_pairs(root, pairs, seed)
    serc = SERC(compiled=compiled) if compiled else SERC()
    chosen = [s for s in (stages or PAIR_STAGES) if s in PAIR_STAGES]
    votes_file = None
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        votes_file = Path(out) / f"pair-votes-{'+'.join(sorted(chosen))}-{pairs}-{seed}.jsonl"
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        results = pair_verdicts(chosen, serc, examples, workers=workers, progress=progress,
                                votes_file=votes_file)
    summary = {**_summary(lm, compiled, seed, pairs, 0, results), "pairs": "unseen"}
    if out:
        _write(out, summary)
    return summary
