"""How often does our FActScore support judgment agree with FActScore's human annotators?

Takes FActScore's human-labelled bios (per sentence `human-atomic-facts`, each labelled S =
supported by the topic's Wikipedia article, NS = not supported, IR = irrelevant), keeps the S
and NS facts whose topic has an article in the Wikipedia JSON (IR facts and null annotations
are skipped), samples `--limit` of them with a fixed seed, and judges each HUMAN fact with our
scorer (`FActScorer.judge_fact`: top-k passages of the topic's article, then `ClaimSupported`)
under `--lm`. Prints agreement accuracy, the always-S baseline, and precision / recall / F1 for
NS (the class a fact checker must find), plus cost and time.

    python benchmarks/factscore_agreement.py \\
        --labeled ../shared/data/factscore/labeled_dev/ChatGPT.jsonl \\
        --wiki ../shared/data/factscore_wiki/wikipedia_dev.json --limit 60

Caveat: the Wikipedia extracts are a 2026 snapshot, the annotators used the 2023-04-01 dump.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

import dspy

from serc_dspy.config import RunOptions, build_lm
from serc_dspy.evaluation.metrics import FactScorer, UsageMeter
from serc_dspy.retrieval.knowledge import KnowledgeSource


def human_facts(labeled: Path, topics) -> tuple[list[dict], Counter]:
    """(topic, fact, human label) for S/NS facts with an article; and counts of what was skipped."""
    facts, skipped = [], Counter()
    for line in labeled.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("annotations") is None:
            skipped["bio without annotations"] += 1
            continue
        has_article = row["topic"] in topics
        for sentence in row["annotations"]:
            for fact in sentence.get("human-atomic-facts") or []:
                label = fact.get("label")
                if label not in ("S", "NS"):
                    skipped[f"label {label}"] += 1
                elif not has_article:
                    skipped["topic without article"] += 1
                else:
                    facts.append({"topic": row["topic"], "fact": fact["text"], "human": label})
            if sentence.get("human-atomic-facts") is None:
                skipped["sentence without human facts"] += 1
    return facts, skipped


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labeled", required=True, type=Path,
                        help="FActScore labelled JSONL (e.g. labeled_dev/ChatGPT.jsonl)")
    parser.add_argument("--wiki", required=True, type=Path,
                        help="Wikipedia JSON {topic: {resolved_title, extract}} or SQLite db")
    parser.add_argument("--lm", default="local", help="LM spec of the judge (default local)")
    parser.add_argument("--limit", type=int, default=60, help="facts to judge")
    parser.add_argument("--k", type=int, default=5, help="passages per fact (FActScore: 5)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--verbose", action="store_true", help="print every judgment")
    args = parser.parse_args()

    knowledge = KnowledgeSource.open(args.wiki)
    facts, skipped = human_facts(args.labeled, knowledge)
    random.Random(args.seed).shuffle(facts)
    sample = facts[: args.limit]
    lm = build_lm(RunOptions(lm=args.lm, max_tokens=args.max_tokens))
    scorer = FactScorer(knowledge, k=args.k)
    meter = UsageMeter()
    started = time.monotonic()
    rows = []
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        for number, item in enumerate(sample, 1):
            label, error = scorer.judge_fact(item["topic"], item["fact"], meter)
            predicted = {"SUPPORTED": "S", "NOT_SUPPORTED": "NS"}.get(label or "")
            rows.append({**item, "predicted": predicted, "error": error})
            if args.verbose:
                print(f"{number:3d} human={item['human']:2s} ours={predicted or 'ERR':3s} "
                      f"{item['topic']}: {item['fact']}", file=sys.stderr)
            else:
                print(f"\r{number}/{len(sample)} judged", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    seconds = time.monotonic() - started

    judged = [r for r in rows if r["predicted"]]
    pairs = Counter((r["human"], r["predicted"]) for r in judged)
    tp, fp = pairs[("NS", "NS")], pairs[("S", "NS")]
    fn, tn = pairs[("NS", "S")], pairs[("S", "S")]
    humans = Counter(r["human"] for r in judged)
    accuracy = (tp + tn) / len(judged) if judged else 0.0
    baseline = humans["S"] / len(judged) if judged else 0.0
    precision, recall, f1 = prf(tp, fp, fn)
    usage = meter.usage.total

    print(f"## Support judgment vs FActScore human labels ({args.labeled.name}, "
          f"LM {getattr(lm, 'model', args.lm)}, k={args.k})\n")
    print(f"- facts available (S/NS with an article): {len(facts)}; sampled {len(sample)} "
          f"(seed {args.seed}); judged {len(judged)}; judgment errors "
          f"{len(rows) - len(judged)}")
    print(f"- skipped: {dict(skipped)}")
    print(f"- human labels among judged: S {humans['S']}, NS {humans['NS']}\n")
    print("| figure | value |")
    print("|---|---:|")
    print(f"| agreement accuracy | {accuracy:.3f} |")
    print(f"| always-S baseline accuracy | {baseline:.3f} |")
    print(f"| NS precision | {precision:.3f} |")
    print(f"| NS recall | {recall:.3f} |")
    print(f"| NS F1 | {f1:.3f} |")
    print(f"| predicted NS share | "
          f"{(tp + fp) / len(judged) if judged else 0.0:.3f} |")
    print(f"| LM calls | {usage.calls} |")
    print(f"| tokens per judgment | {usage.total_tokens / max(1, usage.calls):,.0f} |")
    print(f"| seconds per judgment | {seconds / max(1, len(rows)):.1f} |")
    print("\nconfusion (rows human, columns ours):\n")
    print("| human \\ ours | S | NS |")
    print("|---|---:|---:|")
    print(f"| S | {tn} | {fp} |")
    print(f"| NS | {fn} | {tp} |")


if __name__ == "__main__":
    main()
