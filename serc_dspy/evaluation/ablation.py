"""Rule ablation: a SERC method run again with one rule off, on the same items, and the paired
difference of each figure (`serc bench noise|factcheck --ablate RULE`).

A variant's results are `{method}~{rule}` beside the method's own (`serc~quote.overrule-k2.jsonl`,
`serc~quote.overrule.jsonl`), so resuming and rescoring treat it as one more run. A rule keeps
its place when switching it off measurably hurts: the interval of the paired difference
(rule off - rule on) excludes zero in the harmful direction.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from serc_dspy.evaluation.compare import compare_files

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
