"""Paired differences between the verdict paths of one `serc bench stages --pairs N` run.

The paths judged the same pairs, so their difference is read pair by pair: accuracy and
macro-F1 of A - B with a 95% bootstrap interval over pairs (2,000 resamples, seed 0).

    python benchmarks/paired_verdicts.py DATA_DIR RUN_DIR [--pairs 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import hashlib
import random
from pathlib import Path

from serc_dspy.evaluation.metrics.dspy_metrics import VERDICT_LABELS, macro_f1
from serc_dspy.evaluation.stage_bench import unseen_pairs
from serc_dspy.io import read_jsonl

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
    keys = [hashlib.sha256(f"{e.claim}\n{e.evidence}".encode()).hexdigest()[:16]
            for e in examples]
    gold, voted = [e.verdict for e in examples], [votes[k] for k in keys]

    def accuracy(idx: list[int], stage: str) -> float:
        return sum(gold[i] == voted[i][stage] for i in idx) / len(idx)

    def f1(idx: list[int], stage: str) -> float:
        return macro_f1([gold[i] for i in idx], [voted[i][stage] for i in idx],
                        VERDICT_LABELS)[0]

    rng, n = random.Random(0), len(gold)
    resamples = [[rng.randrange(n) for _ in range(n)] for _ in range(2000)]
    print(f"Paired differences A - B on the same {n} pairs (2,000 bootstrap resamples of "
          "pairs, seed 0; * excludes zero)\n")
    print("| A - B | accuracy | 95% interval | macro-F1 | 95% interval |\n"
          "|---|---:|---|---:|---|")
    for a, b in PAIRS:
        cells = []
        for figure in (accuracy, f1):
            diff = figure(list(range(n)), a) - figure(list(range(n)), b)
            spread = sorted(figure(idx, a) - figure(idx, b) for idx in resamples)
            low, high = spread[50], spread[1949]
            cells += [f"{diff:+.3f}", f"[{low:+.3f}, {high:+.3f}]"
                      + (" *" if low > 0 or high < 0 else "")]
        print(f"| `{a}` - `{b}` | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
