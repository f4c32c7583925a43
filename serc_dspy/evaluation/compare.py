"""`serc bench compare A B`: how two runs differ on the items both of them scored.

Both runs are read from their per-item score files (`RUN.noise.jsonl` of the planted-error
benchmark, `RUN.factcheck.jsonl` of Factcheck-Bench), every figure is turned into one
`(part, whole)` pair per item by the same functions that make the summaries, and each
difference A - B is bootstrapped over the shared items (`intervals.paired_difference`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from serc_dspy.core.errors import UserError
from serc_dspy.evaluation.factcheck import FACTCHECK_FIGURES, read_scores
from serc_dspy.evaluation.intervals import Difference, Pair, paired_difference
from serc_dspy.evaluation.noise import NOISE_FIGURES, NoiseScore
from serc_dspy.evaluation.results import read_score_rows, sibling

_KINDS = {".noise.jsonl": "noise", ".factcheck.jsonl": "factcheck"}


def scored_file(path: str | os.PathLike[str]) -> tuple[Path, str]:
    """The per-item score file of a results file (or the score file itself), and its kind."""
    path = Path(path)
    for suffix, kind in _KINDS.items():
        if path.name.endswith(suffix):
            found = path
            break
        candidate = sibling(path, suffix)
        if candidate.is_file():
            found, kind = candidate, kind
            break
    else:
        raise UserError(f"{path}: no scores next to it (RUN.noise.jsonl or RUN.factcheck.jsonl);"
                        " score the run first with `serc bench noise` or `serc bench factcheck`")
    if not found.is_file():
        raise UserError(f"scores file not found: {found}")
    return found, kind


def item_pairs(path: str | os.PathLike[str]) -> tuple[str, dict[str, dict[str, Pair]]]:
    """(kind, {figure: {item id: (part, whole)}}) of one run; failed items take no part."""
    found, kind = scored_file(path)
    out: dict[str, dict[str, Pair]] = {}
    if kind == "noise":
        scores = {k: v for k, v in read_score_rows(found, NoiseScore, "noise scores").items()
                  if v is not None}
        figures = NOISE_FIGURES
    else:
        scores = {k: v for k, v in read_scores(found).items() if v is not None}
        figures = FACTCHECK_FIGURES
    for name, pair_of in figures.items():
        out[name] = {ident: pair_of(score) for ident, score in scores.items()}
    return kind, out


def compare_files(a: str | os.PathLike[str], b: str | os.PathLike[str], *,
                  figures: Sequence[str] | None = None) -> list[Difference]:
    kind_a, pairs_a = item_pairs(a)
    kind_b, pairs_b = item_pairs(b)
    if kind_a != kind_b:
        raise UserError(f"cannot compare a {kind_a} run with a {kind_b} run")
    names = list(figures) if figures else list(pairs_a)
    unknown = [n for n in names if n not in pairs_a]
    if unknown:
        raise UserError(f"unknown figure {unknown[0]!r}; the {kind_a} figures are: "
                        f"{', '.join(pairs_a)}")
    shared = set(next(iter(pairs_a.values()), {})) & set(next(iter(pairs_b.values()), {}))
    if not shared:
        raise UserError(f"{a} and {b} share no scored item: a paired difference needs the "
                        "same items")
    return [paired_difference(pairs_a[n], pairs_b[n], figure=n) for n in names]


def compare_table(diffs: Sequence[Difference], a: str, b: str) -> str:
    def f(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    lines = [f"A = {a}", f"B = {b}", "",
             "| figure | items | A | B | A - B | 95% interval | excludes 0 |",
             "|---|---:|---:|---:|---:|---|---|"]
    for d in diffs:
        interval = "–" if d.low is None else f"[{d.low:.3f}, {d.high:.3f}]"
        lines.append(f"| {d.figure} | {d.items} | {f(d.a)} | {f(d.b)} | {f(d.difference)} | "
                     f"{interval} | {'yes' if d.excludes_zero else 'no'} |")
    return "\n".join(lines) + "\n"
