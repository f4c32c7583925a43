"""Rescore every measured planted-error run with the method-independent units, and print how
the clean-text figures moved (false alarms and preservation, before -> after).

Before, a clean unit was a fact of the method's own trace, so a detail the extractor never
produced could not be lost; now units are the clauses of the draft, decided once per draft.

    python benchmarks/rescore_units.py [--data ../shared/data] [--measured benchmarks/measured]

Each folder's raw outputs are in its `raw.tar.gz`: extract them in place first
(`for d in benchmarks/measured/*/; do tar xzf $d/raw.tar.gz -C $d; done`).

Rewrites each folder's `*.noise.jsonl`, `*.noise.summary.json`, `noise.json`, `noise.md` and
`waterfall.png`; the results files themselves (the decodings) are not touched.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from serc_dspy.evaluation.benchmarks import collect_noise, rescore_noise, write_noise_report
from serc_dspy.evaluation.injection import load_articles


def _old(folder: Path) -> dict[tuple[str, str], dict]:
    out = {}
    for path in sorted(folder.glob("*.noise.summary.json")):
        out[(folder.name, path.name.removesuffix(".noise.summary.json"))] = json.loads(
            path.read_text("utf-8"))
    return out


def _articles(folder: Path, data: Path) -> Path | None:
    for meta in sorted(folder.glob("*.meta.json")):
        source = json.loads(meta.read_text("utf-8")).get("articles")
        if source:
            return data / "factscore_wiki" / Path(source).name
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.environ.get("SERC_SHARED_DATA", "../shared/data"))
    parser.add_argument("--measured", default=str(Path(__file__).parent / "measured"))
    args = parser.parse_args()
    rows = ["| folder | run | bios | false alarm before | after | preserved before | after | "
            "verbatim | degenerate/bio |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for folder in sorted(Path(args.measured).iterdir()):
        articles = _articles(folder, Path(args.data)) if folder.is_dir() else None
        if articles is None or not list(folder.glob("drafts-k*.json")):
            continue
        before = _old(folder)
        if not rescore_noise(folder, load_articles(articles)):
            continue
        write_noise_report(collect_noise(folder), folder)
        for (name, run), old in before.items():
            new = json.loads((folder / f"{run}.noise.summary.json").read_text("utf-8"))

            def f(value):
                return "–" if value is None else f"{value:.3f}"

            rows.append(f"| {name} | {run} | {new['bios']} | {f(old.get('false_alarm_rate'))} | "
                        f"{f(new['false_alarm_rate'])} | {f(old.get('preservation'))} | "
                        f"{f(new['preservation'])} | {f(new.get('verbatim_share'))} | "
                        f"{f(new.get('degenerate_per_bio'))} |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
