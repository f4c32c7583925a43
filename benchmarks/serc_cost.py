"""Print the wall time, LM calls and tokens of SERC on the example draft (embedded model)."""

import argparse
import resource
import time
from pathlib import Path

import dspy

from serc_dspy import SERC, LocalCorpus
from serc_dspy.backends import embedded_lm

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--density", choices=["sentence", "atomic"], default="sentence")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    program = SERC(retriever=LocalCorpus(EXAMPLES / "corpus"), density=args.density,
                   max_workers=args.workers)
    question = (EXAMPLES / "question.txt").read_text().strip()
    draft = (EXAMPLES / "draft.txt").read_text()
    started = time.monotonic()
    with dspy.context(lm=embedded_lm(), adapter=dspy.JSONAdapter()):
        trace = program(question=question, draft=draft).trace
    seconds = time.monotonic() - started
    usage = trace.usage
    print(f"density={args.density} workers={args.workers}")
    print(f"wall time      {seconds:8.1f} s")
    print(f"peak RSS       {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.0f} MB")
    print(f"LM calls       {usage.total.calls:8d}")
    print(f"prompt tokens  {usage.total.prompt_tokens:8d}")
    print(f"output tokens  {usage.total.completion_tokens:8d}")
    print(f"facts / checks {len(trace.facts):4d} / {len(trace.checks)}")
    print(trace.syndrome.summary())
    for step, counts in sorted(usage.steps.items()):
        print(f"  {step:22s} {counts.calls:4d} calls {counts.total_tokens:8d} tokens")


if __name__ == "__main__":
    main()
