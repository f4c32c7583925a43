"""Score a HaluEval run folder, finished or not: python summarize.py DATA.jsonl RUN_DIR [N]."""

import json
import sys
from pathlib import Path

from serc_dspy.evaluation.benchmarks import halueval_outcome, load_halueval


def summarize(data: str, folder: str, limit: int = 20) -> dict:
    rows = {r["id"]: r for r in load_halueval(data, limit)}
    out = {}
    for run in ("hallucinated", "control"):
        lines = (Path(folder) / f"serc-{run}.jsonl").read_text().splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        ok = [r for r in records if not r.get("error") and r["id"] in rows]
        outcomes = [halueval_outcome(r["answer"], rows[r["id"]]["right_answer"],
                                     rows[r["id"]]["hallucinated_answer"]) for r in ok]
        n = len(ok) or 1
        usage = [r["trace"]["usage"]["total"] for r in ok]
        out[run] = {
            "scored": len(ok), "failed": len(records) - len(ok),
            "fixed": sum(o["fixed"] for o in outcomes),
            "still_right": sum(o["right"] for o in outcomes),
            "cold_start": sum(bool(r["trace"]["cold_start"]) for r in ok),
            "fixed_without_cold_start": sum(o["fixed"] and not r["trace"]["cold_start"]
                                            for o, r in zip(outcomes, ok, strict=True)),
            "calls_per_item": sum(u["calls"] for u in usage) / n,
            "tokens_per_item": sum(u["prompt_tokens"] + u["completion_tokens"]
                                   for u in usage) / n,
        }
    return out


if __name__ == "__main__":
    print(json.dumps(summarize(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:4])), indent=1))
