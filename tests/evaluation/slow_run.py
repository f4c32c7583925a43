"""Helper run in a subprocess by the resume test: a runner over a scripted LM that is slow.

    python slow_run.py OUT.jsonl CALLS.log N_ITEMS DELAY_SECONDS

Each answered question is appended to CALLS.log (one line) before its record is written, so
the test can tell which items a run actually computed.
"""

import sys
import time
from pathlib import Path

import dspy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scripted import scripted_lm  # noqa: E402

from serc_dspy.evaluation.datasets import Item  # noqa: E402
from serc_dspy.evaluation.runner import run_experiment  # noqa: E402


def main() -> None:
    out, calls, n_items, delay = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(
        sys.argv[4])
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)

    def answer(inputs):
        time.sleep(delay)
        with open(calls, "a", encoding="utf-8") as fh:
            fh.write(inputs["question"] + "\n")
        return {"answer": f"An answer to: {inputs['question']}"}

    lm, _ = scripted_lm({"AnswerQuestion": answer})
    items = [Item(id=f"item-{i}", question=f"Question number {i}?") for i in range(n_items)]
    summary = run_experiment("initial", items, out, lm=lm, workers=2, progress=False,
                             dataset="synthetic")
    print(summary.model_dump_json())


if __name__ == "__main__":
    main()
