"""Print a markdown table of LM calls, tokens and time per method on the example draft.

Every method decodes the same draft (examples/draft.txt) over the same corpus with the same LM,
so the rows differ only by the method. Default LM: the offline default (qwen1.5b).
"""

import argparse
import time
from pathlib import Path

import dspy

from serc_dspy import LocalCorpus
from serc_dspy.backends import embedded_lm
from serc_dspy.programs import build_method, method_names

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--methods", nargs="*", default=method_names())
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    corpus = LocalCorpus(EXAMPLES / "corpus")
    question = (EXAMPLES / "question.txt").read_text().strip()
    draft = (EXAMPLES / "draft.txt").read_text()
    lm = embedded_lm()
    print("| method | LM calls | prompt tokens | completion tokens | total tokens | seconds |"
          " errors |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.methods:
        program = build_method(name, retriever=corpus, max_workers=args.workers)
        started = time.monotonic()
        with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
            trace = program(question=question, draft=draft).trace
        usage = trace.usage.total
        print(f"| {name} | {usage.calls} | {usage.prompt_tokens} | {usage.completion_tokens} | "
              f"{usage.total_tokens} | {time.monotonic() - started:.0f} | {len(trace.errors)} |",
              flush=True)


if __name__ == "__main__":
    main()
