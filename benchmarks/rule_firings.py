"""How often each rule fired in measured runs, and what it changed: a rule's reach on data,
beside its ablation (`serc bench ... --ablate RULE`), which says what it is worth.

    python benchmarks/rule_firings.py RESULTS.jsonl [RESULTS.jsonl ...] [--markdown]

RESULTS are the `RUN.jsonl` files `serc bench noise` / `serc bench factcheck` / `serc run`
write (one record per item, each with its trace). For each rule it prints the answers it fired
on, its firings, and how many of them changed a verdict, a status or a text (`before` differs
from `after`); rules that never fired are listed too, so a rule with no reach is visible.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from serc_dspy.core.errors import UserError
from serc_dspy.core.io import read_jsonl_rows
from serc_dspy.rules import RULES


def count(paths: list[Path]) -> tuple[int, Counter, Counter, Counter]:
    answers, fired, changed, reached = 0, Counter(), Counter(), Counter()
    for path in paths:
        for _, row in read_jsonl_rows(path, what="results file", torn_last_line="skip"):
            trace = row.get("trace") or {}
            if not trace:
                continue
            answers += 1
            seen = set()
            for ruling in trace.get("rulings") or []:
                rule = ruling.get("rule")
                fired[rule] += 1
                if ruling.get("before") != ruling.get("after"):
                    changed[rule] += 1
                seen.add(rule)
            reached.update(seen)
    return answers, fired, changed, reached


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args()
    try:
        answers, fired, changed, reached = count(args.results)
    except UserError as exc:
        raise SystemExit(f"rule_firings: {exc}") from None
    print(f"{answers} answers with a trace in {len(args.results)} results file(s)")
    print("| rule | answers | firings | changed something |")
    print("|---|---:|---:|---:|")
    for rule in sorted(set(RULES) | set(fired), key=lambda r: (-fired[r], r)):
        print(f"| `{rule}` | {reached[rule]} | {fired[rule]} | {changed[rule]} |")


if __name__ == "__main__":
    main()
