"""Paired differences between the verdict paths of one `serc bench stages --pairs N` run.

The paths judged the same pairs, so their difference is read pair by pair: accuracy
(`paired_difference`) and macro-F1 (`bootstrap_statistic`) of A - B, each with its 95%
bootstrap interval over pairs.

    python benchmarks/paired_verdicts.py DATA_DIR RUN_DIR [--pairs 200] [--seed 0]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from serc_dspy.compiling.stage_bench import pair_key, unseen_pairs
from serc_dspy.core.io import read_jsonl
from serc_dspy.evaluation.intervals import bootstrap_statistic, paired_difference
from serc_dspy.evaluation.metrics.dspy_metrics import VERDICT_LABELS, macro_f1

PAIRS = [("verify_agree", "verify"), ("verify_cited", "verify"), ("verify_agree", "verify_cited")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("run")
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    examples = unseen_pairs(Path(args.data), args.pairs, args.seed)
    saved = next(Path(args.run).glob(f"pair-votes-*-{args.pairs}-{args.seed}.jsonl"))
    votes = {row["key"]: row["votes"] for row in read_jsonl(saved)}
    keys = [pair_key(e) for e in examples]
    gold = {k: e.verdict for k, e in zip(keys, examples, strict=True)}

    def f1(stage: str, idx: list[int]) -> float:
        return macro_f1([gold[keys[i]] for i in idx], [votes[keys[i]][stage] for i in idx],
                        VERDICT_LABELS)[0]

    print(f"Paired differences A - B on the same {len(keys)} pairs (95% bootstrap intervals "
          "over pairs; * excludes zero)\n")
    print("| A - B | accuracy | 95% interval | macro-F1 | 95% interval |\n"
          "|---|---:|---|---:|---|")
    for a, b in PAIRS:
        right = {s: {k: (float(votes[k][s] == gold[k]), 1.0) for k in keys} for s in (a, b)}
        acc = paired_difference(right[a], right[b])
        full = list(range(len(keys)))
        f1_diff = f1(a, full) - f1(b, full)
        low, high = bootstrap_statistic(len(keys), lambda idx, a=a, b=b: f1(a, idx) - f1(b, idx))
        cells = [f"{acc.difference:+.3f}", f"[{acc.low:+.3f}, {acc.high:+.3f}]"
                 + (" *" if acc.excludes_zero else ""), f"{f1_diff:+.3f}",
                 f"[{low:+.3f}, {high:+.3f}]" + (" *" if low > 0 or high < 0 else "")]
        print(f"| `{a}` - `{b}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
