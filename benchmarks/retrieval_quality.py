"""Retrieval quality of BM25, MiniLM alone and the hybrid (`LocalCorpus(dense=True)`) on the
Factcheck-GPT stance dev claims, with timings.

    python benchmarks/retrieval_quality.py [--data ../shared/data] [--cache-dir DIR]

Every claim of `factcheck_gpt/subtask3_claim_evidence_stance_dev.jsonl` that has a relevant
passage is a query against all the file's distinct evidence passages (one corpus; a passage is
never chunked). A passage is relevant to a claim when the file pairs them with the stance
completely-support, partially-support or refute (not irrelevant). Figures:

- R@5: the share of a claim's relevant passages that are in its top 5, averaged over claims;
- hit@5: the share of claims with at least one relevant passage in the top 5;
- MRR: the mean over claims of 1 / rank of the first relevant passage (0 when none is returned).

BM25 and the hybrid are ranked by the retriever itself (`corpus(claim, k=N)`, so a passage it
does not return counts as not found); MiniLM alone is every passage ordered by cosine
similarity (`dense_scores`). Without `--cache-dir` the passages are encoded afresh into a
temporary folder, so the encoding time is measured cold.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from serc_dspy.retrieval.local import LocalCorpus

RELEVANT = frozenset({"completely-support", "partially-support", "refute"})
FILE = "factcheck_gpt/subtask3_claim_evidence_stance_dev.jsonl"
TOP = 5


def load(path: Path) -> tuple[list[str], dict[str, set[int]]]:
    """The distinct passages in file order, and each claim's relevant passage indices."""
    passages: dict[str, int] = {}
    relevant: dict[str, set[int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        index = passages.setdefault(row["evidence"], len(passages))
        wanted = relevant.setdefault(row["claim"], set())
        if row["stance"] in RELEVANT:
            wanted.add(index)
    return list(passages), {claim: ids for claim, ids in relevant.items() if ids}


def scores(rankings: dict[str, list[int]], relevant: dict[str, set[int]]) -> dict[str, float]:
    recall, hits, reciprocal = [], [], []
    for claim, wanted in relevant.items():
        ranked = rankings[claim]
        top = set(ranked[:TOP])
        recall.append(len(top & wanted) / len(wanted))
        hits.append(bool(top & wanted))
        first = next((rank for rank, i in enumerate(ranked, start=1) if i in wanted), None)
        reciprocal.append(1 / first if first else 0.0)
    return {"recall": float(np.mean(recall)), "hit": float(np.mean(hits)),
            "mrr": float(np.mean(reciprocal))}


def _commit() -> str:
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, check=True,
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + (" (uncommitted changes)" if dirty.strip() else "")


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("SERC_SHARED_DATA", "../shared/data"))
    parser.add_argument("--cache-dir", help="embedding cache folder (default: a fresh temporary "
                                            "one, so encoding is timed cold)")
    args = parser.parse_args()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"date: {now}")
    print(f"command: python {shlex.join(sys.argv)}")
    print(f"commit: {_commit()}")
    print(f"cores: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}, "
          f"load average {_load()}")

    texts, relevant = load(Path(args.data) / FILE)
    longest = max(len(t) for t in texts)
    docs = [(str(i), text) for i, text in enumerate(texts)]
    n = len(texts)
    print(f"{len(relevant)} claims with a relevant passage, ranked against {n} passages "
          f"({sum(len(v) for v in relevant.values())} relevant pairs)\n")

    with tempfile.TemporaryDirectory() as temp:
        cache_dir = args.cache_dir or temp
        start = time.perf_counter()
        bm25 = LocalCorpus.from_documents(docs, name="factcheck", chunk_chars=longest)
        bm25_build = time.perf_counter() - start
        start = time.perf_counter()
        hybrid = LocalCorpus.from_documents(docs, name="factcheck", chunk_chars=longest,
                                            dense=True, cache_dir=cache_dir)
        dense_build = time.perf_counter() - start
        start = time.perf_counter()
        LocalCorpus.from_documents(docs, name="factcheck", chunk_chars=longest, dense=True,
                                   cache_dir=cache_dir)
        cached_build = time.perf_counter() - start
    assert len(bm25) == len(hybrid) == n, "a passage was chunked"

    rankings: dict[str, dict[str, list[int]]] = {"BM25": {}, "MiniLM": {}, "hybrid": {}}
    seconds = dict.fromkeys(rankings, 0.0)
    for claim in relevant:
        start = time.perf_counter()
        rankings["BM25"][claim] = [int(p.source) for p in bm25(claim, k=n)]
        middle = time.perf_counter()
        rankings["MiniLM"][claim] = [int(i) for i in
                                     np.argsort(-hybrid.dense_scores(claim), kind="stable")]
        end = time.perf_counter()
        rankings["hybrid"][claim] = [int(p.source) for p in hybrid(claim, k=n)]
        seconds["BM25"] += middle - start
        seconds["MiniLM"] += end - middle
        seconds["hybrid"] += time.perf_counter() - end

    print(f"| ranking | R@{TOP} | hit@{TOP} | MRR | ms per claim |")
    print("|---|---:|---:|---:|---:|")
    for name, ranked in rankings.items():
        figures = scores(ranked, relevant)
        print(f"| {name} | {figures['recall']:.3f} | {figures['hit']:.3f} | "
              f"{figures['mrr']:.3f} | {1000 * seconds[name] / len(relevant):.1f} |")
    print(f"\nbuild: BM25 index {bm25_build:.2f} s; hybrid {dense_build:.1f} s "
          f"({1000 * dense_build / n:.1f} ms per passage: loading and verifying the model, "
          f"encoding {n} passages, writing the cache); hybrid again from the cache "
          f"{cached_build:.2f} s (the model loaded, nothing encoded); load average {_load()}")
    print(f"R@{TOP}: share of a claim's relevant passages in its top {TOP}; hit@{TOP}: share of "
          f"claims with one in the top {TOP}; MRR: 1 / rank of the first, 0 if not returned")


if __name__ == "__main__":
    main()
