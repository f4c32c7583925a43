"""Helper run in a subprocess by the soak test: SERC over 30 items with a scripted LM, with or
without injected faults (about one call in five: an outage, or a reply cut off mid-JSON).

    python soak_run.py OUT.jsonl faulty|clean [DELAY_SECONDS]

The faults are keyed on each call's content and on how many times that very call was made, so
a rerun meets the same faults (a retry may pass) and two runs can be compared record by
record.
"""

import hashlib
import json
import sys
import threading
import time
from pathlib import Path

import dspy

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "programs"), str(HERE)]

from scripted import CountingRetriever, Raw, scripted_lm  # noqa: E402
from test_serc import S0, S1, S2, S3, handlers  # noqa: E402

from serc_dspy.evaluation.datasets import Item  # noqa: E402
from serc_dspy.evaluation.runner import run_experiment  # noqa: E402

EXTRA = ["She was a physicist and chemist.", "She taught at the Sorbonne in Paris.",
         "She had two daughters, Irène and Ève.", "She died in 1934 in Passy."]
FAULT_SHARE = 0.2


def drafts() -> list[str]:
    pool = [S0, S1, S2, S3, *EXTRA]
    return [" ".join(pool[(i + j) % len(pool)] for j in range(2 + i % 3)) for i in range(30)]


def faulty(name, handler, delay, seen, lock):
    def wrapped(inputs):
        time.sleep(delay)
        key = f"{name}|{sorted(inputs.items())}"
        with lock:  # the n-th time this very call is made (a retry is the second)
            seen[key] = seen.get(key, 0) + 1
            key = f"{key}|{seen[key]}"
        roll = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
        if roll < FAULT_SHARE / 2:
            raise ConnectionResetError("injected outage")
        reply = handler(inputs)
        if roll < FAULT_SHARE:
            text = json.dumps(reply)
            return Raw(text[: max(1, len(text) // 2)])  # cut off, marked finish_reason=stop
        return reply
    return wrapped


def main() -> None:
    out, mode = sys.argv[1], sys.argv[2]
    delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)
    base = handlers()
    if mode == "faulty":
        seen, lock = {}, threading.Lock()
        base = {name: faulty(name, h, delay, seen, lock) for name, h in base.items()}
    lm, _ = scripted_lm(base)
    items = [Item(id=f"soak-{i}", question="Tell me a bio of Marie Curie.", draft=d)
             for i, d in enumerate(drafts())]
    summary = run_experiment("serc", items, out, lm=lm, workers=2, progress=False,
                             retriever=CountingRetriever(), dataset="soak")
    print(summary.model_dump_json())


if __name__ == "__main__":
    main()
