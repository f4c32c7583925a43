"""Markdown tables (the paper's Tables 1, 2 and 5) and a score-vs-cost plot from results files.

Each results file `RUN.jsonl` is read with its siblings when present: `RUN.meta.json`,
`RUN.factscore.jsonl` (+ `.summary.json` for the length-penalty setting) and
`RUN.truthfulqa.jsonl`. Scores are recomputed from the per-item lines and cost from each
record's trace, so a report never trusts a stale summary.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from serc_dspy.core.errors import UserError, one_line
from serc_dspy.core.io import read_json
from serc_dspy.core.trace import Trace
from serc_dspy.evaluation.metrics.cost import CostSummary, summarize_cost, token_reduction
from serc_dspy.evaluation.results import read_results, sibling
from serc_dspy.evaluation.scoring import factscore_summary, truthfulqa_summary
from serc_dspy.view import render_trace

_SCORE_SUFFIXES = (".factscore.summary.json", ".truthfulqa.summary.json", ".factscore.jsonl",
                   ".truthfulqa.jsonl", ".noise.summary.json", ".noise.jsonl", ".meta.json")
PLOT_NAME = "score_vs_tokens.png"
REPORT_NAME = "report.md"


class RunReport(BaseModel):
    path: str
    label: str = ""
    method: str = "?"
    dataset: str | None = None
    records: int = 0
    failed: int = 0
    cost: CostSummary = Field(default_factory=CostSummary)
    factscore: dict[str, Any] | None = None
    truthfulqa: dict[str, Any] | None = None
    noise: dict[str, Any] | None = None
    malformed: dict[int, str] = Field(default_factory=dict)
    """Record number (1-based) -> why its trace is skipped (it is not a valid trace)."""


Warn = Callable[[str], None]


def _trace_problem(record: dict[str, Any]) -> str | None:
    """Why a record's trace cannot be read as a `Trace`, or None (a valid trace, or none)."""

    trace = record.get("trace")
    if trace is None:
        return None
    if not isinstance(trace, dict):
        return f"the trace is a {type(trace).__name__}, not an object"
    try:
        Trace.model_validate(trace)
    except Exception as exc:  # pydantic's error, in one line
        return one_line(exc)[:200]
    return None


def run_path_of(path: str | os.PathLike[str]) -> Path:
    """Map a score or meta file back to its results file (`RUN.factscore.jsonl` -> `RUN.jsonl`)."""
    path = Path(path)
    for suffix in _SCORE_SUFFIXES:
        if path.name.endswith(suffix):
            return path.with_name(path.name[: -len(suffix)] + ".jsonl")
    return path


def _read_json(path: Path) -> dict[str, Any]:
    """A sibling's object, or {} when it is missing or unreadable (the report goes on)."""
    try:
        data = read_json(path)
    except UserError:
        return {}
    return data if isinstance(data, dict) else {}


def load_run(path: str | os.PathLike[str], warn: Warn | None = None) -> RunReport:
    """One results file and its siblings. A record whose trace is malformed is left out of
    the cost figures and its decoding view; `warn` is told which (file and item id)."""
    run = run_path_of(path)
    records = read_results(run)
    if not records:
        raise UserError(f"results file {run} has no records")
    malformed = {}
    for number, record in enumerate(records, 1):
        problem = _trace_problem(record)
        if problem is not None:
            malformed[number] = problem
            if warn is not None:
                warn(f"{run}: item {record.get('id')!r} (line {number}) has a malformed trace, "
                     f"skipped: {problem}")
    meta = _read_json(sibling(run, ".meta.json"))
    report = RunReport(
        path=str(run),
        method=str(meta.get("method") or records[0].get("method") or "?"),
        dataset=meta.get("dataset") or records[0].get("dataset"),
        records=len(records),
        failed=sum(1 for r in records if r.get("error")),
        cost=summarize_cost(r for n, r in enumerate(records, 1) if n not in malformed),
        malformed=malformed,
    )
    fs_path = sibling(run, ".factscore.jsonl")
    if fs_path.is_file():
        settings = _read_json(sibling(run, ".factscore.summary.json"))
        report.factscore = factscore_summary(
            read_results(fs_path), length_penalty=bool(settings.get("length_penalty")),
            gamma=int(settings.get("gamma") or 10))
    tqa_path = sibling(run, ".truthfulqa.jsonl")
    if tqa_path.is_file():
        report.truthfulqa = truthfulqa_summary(read_results(tqa_path))
    noise_path = sibling(run, ".noise.summary.json")
    if noise_path.is_file():
        report.noise = _read_json(noise_path) or None
    return report


def load_runs(paths: list[str], warn: Warn | None = None) -> list[RunReport]:
    if not paths:
        raise UserError("no results files given")
    seen, runs = set(), []
    for path in paths:
        run = run_path_of(path)
        if run.resolve() not in seen:
            seen.add(run.resolve())
            runs.append(load_run(run, warn))
    keys = Counter((r.method, r.dataset) for r in runs)
    for run in runs:
        duplicate = keys[(run.method, run.dataset)] > 1
        run.label = f"{run.method} ({Path(run.path).stem})" if duplicate else run.method
    return runs


def _f(value: Any, spec: str = ".4f") -> str:
    if value is None:
        return "–"
    return format(value, spec)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def factscore_table(runs: list[RunReport]) -> str:
    rows = [r for r in runs if r.factscore]
    if not rows:
        return ""
    lines = ["| method | answers | FActScore | initial FActScore | respond | avg facts | "
             "initial avg facts | preservation | errors |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    penalised = [bool(r.factscore.get("length_penalty")) for r in rows]  # type: ignore[union-attr]
    mixed = len(set(penalised)) > 1
    for r, lp in zip(rows, penalised, strict=True):
        fs, init = r.factscore, r.factscore["initial"]  # type: ignore[index]
        label = f"{r.label} (LP)" if mixed and lp else r.label
        lines.append(
            f"| {label} | {fs['answers']} | {_f(fs['factscore'])} | {_f(init['factscore'])} | "
            f"{_pct(fs['respond_ratio'])} | {_f(fs['avg_facts'], '.2f')} | "
            f"{_f(init['avg_facts'], '.2f')} | {_pct(fs['preservation'])} | "
            f"{fs['errors']} |")
    if mixed:
        note = " (LP = with FActScore's length penalty)"
    else:
        note = " (with FActScore's length penalty)" if penalised[0] else ""
    return "### FActScore (LongForm Bio)" + note + "\n\n" + "\n".join(lines)


def truthfulqa_table(runs: list[RunReport]) -> str:
    rows = [r for r in runs if r.truthfulqa]
    if not rows:
        return ""
    lines = ["| method | judged | accuracy (score >= 8) | mean score | misconceptions | "
             "errors |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        t = r.truthfulqa
        lines.append(f"| {r.label} | {t['judged']} | {_pct(t['accuracy'])} | "  # type: ignore[index]
                     f"{_f(t['mean_score'], '.2f')} | {t['misconceptions']} | "  # type: ignore[index]
                     f"{t['errors']} |")  # type: ignore[index]
    return "### TruthfulQA (LLM judge)\n\n" + "\n".join(lines)


def noise_table(runs: list[RunReport]) -> str:
    rows = [r for r in runs if r.noise]
    if not rows:
        return ""
    lines = ["| method | dataset | bios | injected | residual | detected | corrected | deleted | "
             "false alarm | preserved | introduced / bio |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = r.noise or {}
        lines.append(
            f"| {r.label} | {r.dataset or '–'} | {n.get('bios')} | {n.get('injected')} | "
            f"{_pct(n.get('residual_error_rate'))} | {_pct(n.get('detection_rate'))} | "
            f"{_pct(n.get('correction_rate'))} | {_pct(n.get('deletion_rate'))} | "
            f"{_pct(n.get('false_alarm_rate'))} | {_pct(n.get('preservation'))} | "
            f"{_f(n.get('introduced_per_bio'), '.2f')} |")
    return "### Planted errors (serc bench noise)\n\n" + "\n".join(lines)


def cost_table(runs: list[RunReport]) -> str:
    lines = ["| method | dataset | questions | LM calls / q | prompt tokens / q | "
             "completion tokens / q | tokens / q | seconds / q | failed |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        c = r.cost
        lines.append(
            f"| {r.label} | {r.dataset or '–'} | {c.questions} | {_f(c.calls_per_question, '.1f')} "
            f"| {_f(c.prompt_tokens_per_question, ',.0f')} | "
            f"{_f(c.completion_tokens_per_question, ',.0f')} | "
            f"{_f(c.tokens_per_question, ',.0f')} | {_f(c.seconds_per_question, '.1f')} | "
            f"{r.failed} |")
    notes = []
    for dataset in dict.fromkeys(r.dataset for r in runs):
        sparse = [r for r in runs if r.dataset == dataset and r.method == "serc"]
        dense = [r for r in runs if r.dataset == dataset and r.method == "serc_dense"]
        for s in sparse:
            for d in dense:
                cut = token_reduction(s.cost.tokens_per_question, d.cost.tokens_per_question)
                if cut is not None:
                    notes.append(
                        f"Token reduction of {s.label} vs {d.label}"
                        f"{f' on {dataset}' if dataset else ''}: {100 * cut:.1f}% "
                        f"({s.cost.tokens_per_question:,.0f} vs "
                        f"{d.cost.tokens_per_question:,.0f} tokens per question).")
    table = "### Cost per question (from each result's trace)\n\n" + "\n".join(lines)
    return table + ("\n\n" + "\n".join(notes) if notes else "")


def markdown_report(runs: list[RunReport]) -> str:
    parts = [factscore_table(runs), truthfulqa_table(runs), noise_table(runs), cost_table(runs)]
    return "\n\n".join(p for p in parts if p) + "\n"


def _points(runs: list[RunReport]) -> dict[str, list[tuple[str, float, float]]]:
    panels: dict[str, list[tuple[str, float, float]]] = {}
    for r in runs:
        tokens = r.cost.tokens_per_question
        if tokens is None:
            continue
        if r.factscore and r.factscore.get("factscore") is not None:
            panels.setdefault("FActScore", []).append((r.label, tokens, r.factscore["factscore"]))
        if r.truthfulqa and r.truthfulqa.get("accuracy") is not None:
            panels.setdefault("TruthfulQA accuracy", []).append(
                (r.label, tokens, r.truthfulqa["accuracy"]))
    return panels


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend, or a UserError naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise UserError("plots need matplotlib: pip install 'serc-dspy[eval]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
    return path


def write_plot(runs: list[RunReport], path: str | os.PathLike[str]) -> Path | None:
    """Scatter of score against tokens per question, one panel per metric; None if no scores."""
    panels = _points(runs)
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (metric, points) in zip(axes[0], panels.items(), strict=True):
        for label, x, y in points:
            ax.scatter([x], [y], s=40)
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
        ax.set_xlabel("tokens per question")
        ax.set_ylabel(metric)
        ax.set_title(f"{metric} vs cost")
        ax.grid(True, alpha=0.3)
        ax.margins(0.2)
    fig.tight_layout()
    return save_figure(fig, path)


def write_report(paths: list[str], out_dir: str | os.PathLike[str], warn: Warn | None = None
                 ) -> tuple[str, Path, Path | str]:
    """Build the markdown and the plot.

    Returns (markdown, report path, plot path), where the plot is instead a string saying why
    there is none (no scores yet, or matplotlib missing): the tables never depend on it.
    `warn` is told of records skipped for a malformed trace.
    """
    runs = load_runs(paths, warn)
    text = markdown_report(runs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / REPORT_NAME
    report_path.write_text(text, encoding="utf-8")
    try:
        plot: Path | str = write_plot(runs, out / PLOT_NAME) or "no scores to plot"
    except UserError as exc:
        plot = str(exc)
    return text, report_path, plot


# -- the HTML report ------------------------------------------------------------------------------
def _markdown_tables_to_html(text: str) -> str:
    """Our own markdown (### headings, pipe tables, paragraphs) as escaped HTML."""
    import html

    out, rows = [], []

    def flush() -> None:
        if rows:
            head, *body = rows
            out.append("<table><thead><tr>" + "".join(f"<th>{c}</th>" for c in head) +
                       "</tr></thead><tbody>" + "".join(
                           "<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
                           for r in body) + "</tbody></table>")
            rows.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            cells = [html.escape(c.strip()) for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
            continue
        flush()
        if line.startswith("### "):
            out.append(f"<h2>{html.escape(line[4:])}</h2>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
    flush()
    return "\n".join(out)


def _png_data(path: Path) -> str | None:
    import base64

    if not path.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


_REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def write_html_report(paths: list[str], html_path: str | os.PathLike[str],
                      warn: Warn | None = None) -> Path:
    """One HTML file with the tables and plots, linking each item to its own decoding view
    (written next to it in `<name>_views/`). An item whose trace is malformed gets no view;
    `warn` is told which, and the rest is rendered."""
    import html

    runs = load_runs(paths, warn)
    target = Path(html_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    views = target.with_name(target.stem + "_views")
    plot = write_plot(runs, views / PLOT_NAME) if runs else None
    images = [("score against tokens", _png_data(plot) if isinstance(plot, Path) else None)]
    for folder in dict.fromkeys(Path(r.path).parent for r in runs):
        images.append(("planted-error waterfall", _png_data(folder / "waterfall.png")))
    sections = []
    for run in runs:
        rows = []
        for number, record in enumerate(read_results(run.path), 1):
            trace = record.get("trace")
            if number in run.malformed:
                status, trace = "malformed trace: no decoding view", None
            else:
                status = "failed: " + str(record["error"]) if record.get("error") else (
                    (trace or {}).get("status", "?"))
            link = ""
            if isinstance(trace, dict):
                page = views / Path(run.path).stem / f"{number}.html"
                page.parent.mkdir(parents=True, exist_ok=True)
                page.write_text(render_trace(Trace.model_validate(trace)), encoding="utf-8")
                link = f'<a href="{html.escape(str(page.relative_to(target.parent)))}">view</a>'
            rows.append(f"<tr><td>{html.escape(str(record.get('id')))}</td><td>"
                        f"{html.escape(str(status))[:200]}</td><td>"
                        f"{html.escape(str(record.get('answer') or ''))[:160]}</td>"
                        f"<td>{link}</td></tr>")
        sections.append(f"<h2>{html.escape(run.label)} ({html.escape(run.path)})</h2>"
                        "<table><thead><tr><th>item</th><th>status</th><th>answer</th>"
                        f"<th>decoding</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    figures = "".join(f'<figure><img alt="{html.escape(name)}" src="{data}">'
                      f"<figcaption>{html.escape(name)}</figcaption></figure>"
                      for name, data in images if data)
    page = f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_REPORT_CSP}">
<title>SERC experiment report</title><style>
body{{font:15px/1.5 system-ui,sans-serif;max-width:1200px;margin:1em auto;padding:0 1em}}
table{{border-collapse:collapse;margin:.6em 0;font-size:.9em}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}}
img{{max-width:100%}}</style></head><body><h1>SERC experiment report</h1>
{_markdown_tables_to_html(markdown_report(runs))}{figures}
<h1>Items</h1>{''.join(sections)}</body></html>
"""
    target.write_text(page, encoding="utf-8")
    return target
