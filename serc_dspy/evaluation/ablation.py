"""Rule ablation: a SERC method run again with one rule off, on the same items, and the paired
difference of each figure (`serc bench noise|factcheck --ablate RULE`).

A variant's results are `{method}~{rule}` beside the method's own (`serc~quote.overrule-k2.jsonl`,
`serc~quote.overrule.jsonl`), so resuming and rescoring treat it as one more run. A rule keeps
its place when switching it off measurably hurts: the interval of the paired difference
(rule off - rule on) excludes zero in the harmful direction.

An ablated run starts from the full method's answers on which the rule never fired
(`carry_unfired`): with the rule off, the same LM replies take the same path there, so only
the answers it acted on are decoded again. A SERC answer takes minutes on a CPU; rerunning
the others would measure llama.cpp's batching noise, not the rule (`--ablate-rerun-all` does).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from serc_dspy.core.io import read_json, read_jsonl, write_json, write_jsonl
from serc_dspy.evaluation.compare import compare_files
from serc_dspy.evaluation.results import sibling
from serc_dspy.rules import RULES

VARIANT = "~"
KEY_FIGURES = {
    "noise": ("residual_error_rate", "correction_rate", "false_alarm_rate", "preservation",
              "verbatim_share", "calls_per_bio"),
    "factcheck": ("fixed_or_removed_rate", "fixed_rate", "kept_rate", "false_alarm_rate",
                  "verbatim_share", "calls_per_answer"),
}
_SUFFIX = {"noise": ".noise.jsonl", "factcheck": ".factcheck.jsonl"}


def variant(method: str, rule: str) -> str:
    return f"{method}{VARIANT}{rule}"


def variants(methods, ablate, accepts_rules) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, method, extra options) of every run: each method, then each SERC method with
    each ablated rule off."""
    runs = [(m, m, {}) for m in methods]
    for method in methods:
        if accepts_rules(method):
            runs += [(variant(method, rule), method, {rule: False}) for rule in ablate]
    return runs


def carry_unfired(base: Path, target: Path, rule: str) -> int:
    """Seed the ablated results file `target` with the records of `base` (the full method's
    results) whose trace finished and holds no ruling of `rule`; returns how many.

    Only a new `target` is seeded, and only from traces that record their rulings and had no
    failed step: a record without them (an older trace, a failed run, an `error` event, whose
    path may differ on another try) is decoded again, and so is every answer of a rule that
    `acts_without_ruling` (`agree.contradiction`: its agreeing second verdict is a call).
    Each carried record says where it came from (`carried_from`)."""
    if target.exists() or not base.is_file() or RULES[rule].acts_without_ruling:
        return 0
    carried = []
    for record in read_jsonl(base, what="results file", torn_last_line="skip"):
        trace = record.get("trace")
        if record.get("error") or not isinstance(trace, dict) or "rulings" not in trace \
                or trace.get("status") == "failed" \
                or any(e.get("kind") == "error" for e in trace.get("events") or []):
            continue
        if any(r.get("rule") == rule for r in trace["rulings"]):
            continue
        carried.append({**record, "carried_from": base.name})
    if carried:
        write_jsonl(target, carried)
        meta = read_json(sibling(base, ".meta.json"), what="meta file") \
            if sibling(base, ".meta.json").is_file() else {}
        if isinstance(meta, dict) and meta.get("lm"):  # the carried records' own settings
            write_json(sibling(target, ".meta.json"), {**meta, "options": None,
                                                       "seeded_from": base.name})
    return len(carried)


def seed_ablation(base: Path, target: Path, rules_off: dict[str, bool], progress: bool) -> int:
    """`carry_unfired` for an ablated run of one rule, saying on stderr what it carried."""
    (rule,) = rules_off
    carried = carry_unfired(base, target, rule)
    if carried and progress:
        print(f"[serc] {target.name}: {carried} answers on which {rule} never fired carried "
              f"over from {base.name}; decoding the others with it off", file=sys.stderr,
              flush=True)
    return carried


def ablation(out_dir: str | os.PathLike[str], kind: str) -> list[dict[str, Any]]:
    """Every ablated run in `out_dir` against its method's run on the same items."""
    out = Path(out_dir)
    rows = []
    for path in sorted(out.glob(f"*{VARIANT}*{_SUFFIX[kind]}")):
        name = path.name[: -len(_SUFFIX[kind])]
        base_name = re.sub(rf"{re.escape(VARIANT)}[^-]+?(?=(-k\d+|-human|$))", "", name)
        base = out / f"{base_name}{_SUFFIX[kind]}"
        rule = name.split(VARIANT, 1)[1]
        rule = re.split(r"-k\d+|-human", rule)[0]
        if not base.is_file():
            continue
        diffs = compare_files(path, base, figures=KEY_FIGURES[kind])
        rows.append({"run": name, "against": base_name, "rule": rule,
                     "differences": [d.model_dump() | {"excludes_zero": d.excludes_zero}
                                     for d in diffs]})
    return rows


def ablation_table(rows: list[dict[str, Any]]) -> str:
    """One line per ablated run and figure: rule off - rule on, with its interval."""
    if not rows:
        return ""
    lines = ["| rule off | against | figure | items | off | on | off - on | 95% interval |",
             "|---|---|---|---:|---:|---:|---:|---|"]

    def f(value):
        return "–" if value is None else f"{value:.3f}"

    for row in rows:
        for d in row["differences"]:
            interval = "–" if d["low"] is None else f"[{d['low']:.3f}, {d['high']:.3f}]"
            mark = " *" if d["excludes_zero"] else ""
            lines.append(f"| `{row['rule']}` | {row['against']} | {d['figure']} | {d['items']} | "
                         f"{f(d['a'])} | {f(d['b'])} | {f(d['difference'])}{mark} | "
                         f"{interval} |")
    return "\n".join(lines) + "\n\n(* the interval excludes zero)\n"
