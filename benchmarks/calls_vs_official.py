"""LM calls, prompt tokens and orchestration of SERC against the official code's call pattern.

Measured from outside with a scripted LM on FActScore's 48 annotated ChatGPT bios
(`factscore/labeled_dev/ChatGPT.jsonl`):
- each sentence's facts are its human atomic facts, and verdicts come from the human labels
  (S -> SUPPORTED, NS -> CONTRADICTED, IR -> NOT_FOUND);
- the official pattern (labhai/SERC `experiments/run_SERC.py`) is applied to the same traces:
  one verdict call per fact and one query and one evidence summary per sentence, plus the same
  firewall, decomposition, correction, rewrite and polish calls and the initial answer;
- prompt tokens are the rendered prompts' characters / 4 (the scripted LM's count);
- wall time runs against a fake 8-slot server (200 ms + 2 ms per completion token per call).
  Two yardsticks: the chain of dependent calls of one sentence (descriptor, judge when names
  differ, facts, query, summary, verdict, correction, rewrite, polish) at each step's mean
  latency, as the issue measured it; and the realised critical path, the longest chain
  through the run's dependency graph with each call at the latency it really had, which no
  schedule can beat.

    python benchmarks/calls_vs_official.py --data ../shared/data [--bios 48] [--wall-bios 5]

Ends with one line: calls_vs_official=R1 serc_vs_dense_tokens=R2 wall_vs_critical_path=R3
wall_vs_realised_critical_path=R4 prompt_tokens_per_bio=N. Not part of CI's pass/fail.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import dspy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from scripted import entity, scripted_lm  # noqa: E402  (the tests' scripted LM)

from serc_dspy import SERC  # noqa: E402
from serc_dspy.core.text import normalise  # noqa: E402
from serc_dspy.core.trace import Passage  # noqa: E402
from serc_dspy.programs.serc.common import REWRITE_CONTEXT_SENTENCES  # noqa: E402

LABELS = {"S": "SUPPORTED", "NS": "CONTRADICTED", "IR": "NOT_FOUND"}
PRESETS = {
    "paper (serc)": {"queries": "lm", "evidence": "summary", "verdicts": "check"},
    "serc_lean": {"queries": "facts", "evidence": "passages", "verdicts": "check"},
    "offline models' default": {"queries": "facts", "evidence": "passages", "verdicts": "fact"},
}
CRITICAL = ("AnswerEntity", "SameEntity", "AtomicFacts", "VerificationQuery", "EvidenceSummary",
            "JudgeFacts", "CorrectFacts", "RewriteSentence", "PolishAnswer")


def load_bios(data: Path, limit: int) -> list[dict]:
    rows = [json.loads(line) for line in
            (data / "factscore" / "labeled_dev" / "ChatGPT.jsonl").read_text().splitlines()]
    bios = []
    for row in rows:
        annotations = [a for a in row.get("annotations") or [] if a.get("human-atomic-facts")]
        if not annotations:
            continue
        sentences = {normalise(a["text"]): [f["text"] for f in a["human-atomic-facts"]]
                     for a in annotations}
        labels = {f["text"]: LABELS.get(f.get("label"), "NOT_FOUND")
                  for a in annotations for f in a["human-atomic-facts"]}
        bios.append({"topic": row["topic"], "draft": " ".join(a["text"] for a in annotations),
                     "sentences": sentences, "labels": labels})
    return bios[:limit]


def handlers(bio: dict, latency: dict | None = None, slots: int | None = 8) -> dict:
    def verdict(claim: str) -> str:
        return bio["labels"].get(claim, "SUPPORTED")

    table = {
        "QueryEntity": lambda i: entity(bio["topic"]),
        "AnswerEntity": lambda i: entity(bio["topic"], "person"),
        "EvidenceEntity": lambda i: entity(bio["topic"], "person"),
        "SameEntity": lambda i: {"analysis": "", "same": "YES"},
        "AtomicFacts": lambda i: {"facts": bio["sentences"].get(normalise(i["sentence"]),
                                                                [i["sentence"]])},
        "VerificationQuery": lambda i: {"query": f"{bio['topic']} {i['facts'][0]}"},
        "EvidenceSummary": lambda i: {"evidence": i["passages"][:400]},
        "JudgeFacts": lambda i: {"verdicts": [verdict(c) for c in i["claims"]]},
        "JudgeFact": lambda i: {"verdict": verdict(i["claim"])},
        "QuoteAndJudge": lambda i: {"quote": "", "verdict": verdict(i["claim"])},
        "CorrectFacts": lambda i: {"corrections": [
            {"original": f, "fixed": f.rstrip(".") + " (as the evidence states)."}
            for f in i["erroneous_facts"]]},
        "RewriteSentence": lambda i: {"sentence": " ".join(i["facts"])},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
        "GroundedAnswer": lambda i: {"answer": bio["draft"]},
    }
    if latency is None:
        return table
    server = threading.BoundedSemaphore(slots) if slots else contextlib.nullcontext()

    def slow(name, handler):
        def run(inputs):
            out = handler(inputs)
            seconds = 0.2 + 0.002 * len(json.dumps(out)) / 4
            with server:
                time.sleep(seconds)
            latency.setdefault(name, []).append(seconds)
            latency.setdefault("calls", []).append((name, inputs, seconds))
            return out
        return run

    return {name: slow(name, h) for name, h in table.items()}


def retriever(bio: dict):
    def search(query: str, k: int):
        return [Passage(text=f"{bio['topic']}: a passage about {query}.", source="wiki")]
    return search


def decode(bio: dict, **options):
    lm, _ = scripted_lm(handlers(bio))
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        return SERC(retriever=retriever(bio), **options)(
            question=f"Tell me a bio of {bio['topic']}.", draft=bio["draft"]).trace


def official_calls(trace) -> int:
    """The official pattern on this trace's fact structure (the initial answer included)."""
    steps = trace.usage.steps
    firewall = 4  # three descriptors and the judge, every time
    sentences = len({f.sentence for f in trace.facts})
    same = sum(steps[s].calls for s in ("atomic_facts", "correction", "rewrite", "polish")
               if s in steps)
    return 1 + firewall + same + 2 * sentences + len(trace.facts)


def timed_run(bio: dict, latency: dict, *, slots: int | None, workers: int | None):
    """(wall seconds, trace) of one decoding against the fake server."""
    lm, _ = scripted_lm(handlers(bio, latency, slots))
    options = {"max_workers": workers} if workers else {}  # None: SERC's default
    started = time.monotonic()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        trace = SERC(retriever=retriever(bio), **options)(
            question=f"Tell me a bio of {bio['topic']}.", draft=bio["draft"]).trace
    return time.monotonic() - started, trace


CALL_KEYS = {  # which input identifies a call's node in the graph
    "AtomicFacts": lambda i: normalise(i["sentence"]),
    "VerificationQuery": lambda i: tuple(i["facts"]),
    "EvidenceSummary": lambda i: i["query"],
    "JudgeFacts": lambda i: tuple(i["claims"]),
    "JudgeFact": lambda i: (i["claim"],),
    "QuoteAndJudge": lambda i: (i["claim"],),
    "CorrectFacts": lambda i: tuple(i["erroneous_facts"]),
    "RewriteSentence": lambda i: " ".join(i["facts"]),
}


def realised_critical_path(trace, calls) -> float:
    """The longest chain of dependent calls at the latencies these calls really had, with no
    client time: the slowest descriptor (and the judge), then per sentence its facts, its
    slowest check (query, summary, verdicts), its corrections and its rewrite, which also
    waits for the corrections of the sentences it reads; then the polish. No schedule can
    finish sooner, whatever the slots."""
    seconds: dict[tuple, float] = {}
    for name, inputs, latency in calls:
        key = (name, CALL_KEYS[name](inputs) if name in CALL_KEYS else "")
        seconds[key] = seconds.get(key, 0.0) + latency  # repeats (retries) run one after another

    def took(name, key="") -> float:
        return seconds.get((name, key), 0.0)

    start = max(took(n) for n in ("QueryEntity", "AnswerEntity", "EvidenceEntity"))
    start += took("SameEntity")
    text = {f.id: f.text for f in trace.facts}
    corrected: dict[int, float] = {}
    for sentence in trace.sentences:
        facts_done = start + took("AtomicFacts", normalise(sentence.text))
        checks = [c for c in trace.checks if c.sentence == sentence.index]
        slowest = max((took("VerificationQuery", tuple(text[f] for f in c.facts))
                       + took("EvidenceSummary", c.query)
                       + max(took("JudgeFacts", tuple(text[f] for f in c.facts)),
                             *(took(n, (text[f],)) for f in c.facts
                               for n in ("JudgeFact", "QuoteAndJudge")))
                       for c in checks), default=0.0)
        wrong = [f.text for f in trace.facts
                 if f.sentence == sentence.index and f.verdict in ("CONTRADICTED", "NOT_FOUND")]
        fixes = sum(t for (name, key), t in seconds.items()
                    if name == "CorrectFacts" and set(key) <= set(wrong) and key)
        corrected[sentence.index] = facts_done + slowest + fixes
    ends = []
    for sentence in trace.sentences:
        ready = max(corrected[k] for k in range(max(0, sentence.index - REWRITE_CONTEXT_SENTENCES),
                                                sentence.index + 1))
        ends.append(ready + took("RewriteSentence", sentence.rewritten or ""))
    return max(ends, default=start) + took("PolishAnswer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, type=Path, help="the shared data folder")
    parser.add_argument("--bios", type=int, default=48)
    parser.add_argument("--wall-bios", type=int, default=5)
    args = parser.parse_args()
    bios = load_bios(args.data, args.bios)
    ours, official, tokens, totals, dense_tokens, verdict_calls, facts = ([] for _ in range(7))
    for bio in bios:
        trace = decode(bio)
        ours.append(trace.usage.total.calls + 1)  # + the initial answer the draft stands for
        official.append(official_calls(trace))
        tokens.append(trace.usage.total.prompt_tokens)
        totals.append(trace.usage.total.total_tokens)
        dense_tokens.append(decode(bio, density="atomic").usage.total.total_tokens)
        verdict_calls.append(sum(u.calls for s, u in trace.usage.steps.items()
                                 if s.startswith("verdict")))
        facts.append(len(trace.facts))
    mean = statistics.mean
    print(f"| figure | ours | official | ratio |\n|---|---:|---:|---:|\n"
          f"| LM calls per bio (initial answer included) | {mean(ours):.1f} | "
          f"{mean(official):.1f} | {mean(ours) / mean(official):.3f} |\n"
          f"| verdict calls per bio | {mean(verdict_calls):.1f} | {mean(facts):.1f} | |")
    dense_ratio = mean(totals) / mean(dense_tokens)
    print(f"\nSERC / High-Density tokens: {dense_ratio:.3f} (paper: 0.544)")
    print("\n| preset (queries / evidence / verdicts) | LM calls per bio | vs official | "
          "prompt tokens per bio |\n|---|---:|---:|---:|")
    for name, preset in PRESETS.items():
        traces = [decode(bio, **preset) for bio in bios]
        calls = mean(t.usage.total.calls + 1 for t in traces)
        print(f"| {name} ({' / '.join(preset.values())}) | {calls:.1f} | "
              f"{calls / mean(official):.3f} | "
              f"{mean(t.usage.total.prompt_tokens for t in traces):.0f} |")
    walls, unbounded, one_slot, critical, realised = [], [], [], [], []
    for bio in bios[: args.wall_bios]:
        latency: dict[str, list] = {}
        wall, trace = timed_run(bio, latency, slots=8, workers=None)
        walls.append(wall)
        realised.append(realised_critical_path(trace, latency["calls"]))
        # the same bio with a slot per request: the longest chain of dependent calls as it
        # really ran (latencies vary with output length), plus client overhead
        unbounded.append(timed_run(bio, {}, slots=None, workers=1000)[0])
        one_slot.append(timed_run(bio, {}, slots=1, workers=1)[0])
        # the chain of dependent calls this run made (a judge skipped by a name match is
        # not on it; a check's verdict is JudgeFacts or, for one fact, JudgeFact)
        critical.append(sum(mean(latency.get(name) or latency.get("JudgeFact"))
                            for name in CRITICAL
                            if name in latency or (name == "JudgeFacts" and "JudgeFact"
                                                   in latency)))
    ratio = mean(walls) / mean(critical)
    print(f"\nwall per bio at the default workers on an 8-slot server: {mean(walls):.2f} s; "
          f"critical path {mean(critical):.2f} s; ratio {ratio:.2f}")
    print(f"wall per bio with unbounded slots and workers (the realised longest chain): "
          f"{mean(unbounded):.2f} s; the 8-slot run takes {mean(walls) / mean(unbounded):.2f}x "
          "that")
    print(f"the realised critical path (each call at the latency it really had, no client "
          f"time): {mean(realised):.2f} s; the 8-slot run takes "
          f"{mean(walls) / mean(realised):.2f}x that")
    print(f"wall per bio with 1 worker on a 1-slot server: {mean(one_slot):.2f} s")
    print(f"\ncalls_vs_official={mean(ours) / mean(official):.3f} "
          f"serc_vs_dense_tokens={dense_ratio:.3f} wall_vs_critical_path={ratio:.2f} "
          f"wall_vs_realised_critical_path={mean(walls) / mean(realised):.2f} "
          f"prompt_tokens_per_bio={mean(tokens):.0f}")


if __name__ == "__main__":
    main()
