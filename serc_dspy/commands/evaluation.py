"""`serc run`, `serc eval`, `serc report` and `serc knowledge`: experiments from the command line.

Registered into the `serc` parser by `serc_dspy.cli` through `register(subparsers)`.

    serc run --method serc --dataset bio --dataset-path entities.txt --limit 20 \\
        --knowledge wiki.json --out results/serc.jsonl
    serc eval results/serc.jsonl --metric factscore --knowledge wiki.json
    serc eval results/serc.jsonl --metric truthfulqa --dataset-path TruthfulQA.csv \\
        --judge-lm local --judge-lm local=/models/judge.gguf
    serc report results/*.jsonl --out results/report
    serc knowledge wiki.json wiki.db
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from serc_dspy import config
from serc_dspy.commands.arguments import non_negative, positive
from serc_dspy.commands.options import add_run_options
from serc_dspy.config import DEFAULT_LM
from serc_dspy.core.errors import EXIT_FAILED, UserError, redact
from serc_dspy.core.io import file_sha256
from serc_dspy.evaluation.datasets import load_dataset, load_truthfulqa
from serc_dspy.evaluation.report import write_html_report, write_report
from serc_dspy.evaluation.runner import run_experiment
from serc_dspy.evaluation.scoring import score_factscore, score_truthfulqa
from serc_dspy.retrieval.factory import knowledge_source
from serc_dspy.retrieval.knowledge import KnowledgeSource


def register(subparsers) -> None:
    _register_run(subparsers)
    _register_eval(subparsers)
    _register_report(subparsers)
    _register_knowledge(subparsers)


# -- shared helpers -----------------------------------------------------------------------
def _judge_lm(spec: str, args):
    """An evaluator or judge LM (`--evaluator-lm`, `--judge-lm`), built by the one builder with
    the run options' bounds (`--lm-timeout`, `--max-in-flight`, `--lm-rate`, `--deadline`)."""

    options = config.RunOptions.from_args(args)
    return config.build_lm(options.model_copy(update={"lm": spec, "max_tokens": args.max_tokens,
                                                      "quiet": args.quiet}))


def _fmt(value: Any, spec: str = ".4f") -> str:
    return "–" if value is None else format(value, spec)


# -- serc run -----------------------------------------------------------------------------
def _register_run(subparsers) -> None:
    run = subparsers.add_parser(
        "run", help="run a method over a dataset into a resumable results file",
        description="Run a method over a dataset. One JSON line per finished item; re-running "
                    "with the same --out skips finished items and retries failed ones.")
    run.add_argument("--method", default="serc", help="a registered method (default serc)")
    run.add_argument("--dataset", required=True, choices=["bio", "truthfulqa", "factscore"],
                     help="bio = entity list, truthfulqa = CSV, factscore = JSONL drafts")
    run.add_argument("--dataset-path", required=True, help="the dataset file")
    run.add_argument("--drafts", help="FActScore-format JSONL whose outputs become the drafts "
                                      "of bio items (matched by topic)")
    run.add_argument("--limit", type=non_negative, help="only the first N items")
    run.add_argument("--out", required=True, help="results file, e.g. results/RUN.jsonl")
    run.add_argument("--workers", type=positive, default=1, help="items run concurrently")
    add_run_options(run, retrieval=True, method=True, workers_flag="--method-workers")
    run.set_defaults(handler=run_command)


def run_command(args) -> int:

    options = config.RunOptions.from_args(args)
    config.checked_method(options, args.method)  # before the dataset is read
    items = load_dataset(args.dataset, args.dataset_path, drafts=args.drafts)
    if args.limit is not None:
        items = items[: args.limit]
    missing = sum(1 for item in items if item.meta.get("draft_missing"))
    if missing:
        print(f"serc: warning: {missing} of {len(items)} items have no draft in {args.drafts}; "
              "they will be generated", file=sys.stderr)
    parts = config.build_run(options, [args.method])
    settings = parts.settings
    summary = run_experiment(
        args.method, items, args.out, retriever=parts.retriever, lm=parts.lm, workers=args.workers,
        limit=args.limit, progress=not options.quiet, dataset=args.dataset,
        meta={"dataset_path": str(args.dataset_path),
              "dataset_sha256": file_sha256(args.dataset_path), "drafts": args.drafts,
              "drafts_sha256": file_sha256(args.drafts), "lm_spec": options.lm,
              "max_tokens": options.max_tokens},
        **settings,
    )
    print(f"{args.method} on {args.dataset}: {summary.completed} run "
          f"({summary.failed} failed), {summary.skipped} already done, "
          f"{summary.total} items, {summary.seconds:.1f}s -> {summary.out}")
    if summary.failed:
        print(f"serc: warning: {summary.failed} item(s) failed; their errors are in "
              f"{summary.out} and re-running retries them", file=sys.stderr)
    return EXIT_FAILED if summary.failed else 0


# -- serc eval ----------------------------------------------------------------------------
def _register_eval(subparsers) -> None:
    ev = subparsers.add_parser(
        "eval", help="score a results file (FActScore or TruthfulQA judge)",
        description="Score a results file into RUN.<metric>.jsonl and RUN.<metric>.summary.json "
                    "(resumable per item).")
    ev.add_argument("results", help="a results file written by `serc run`")
    ev.add_argument("--metric", required=True, choices=["factscore", "truthfulqa"])
    ev.add_argument("--knowledge", help="factscore: SQLite .db (FActScore layout) or .json")
    ev.add_argument("--evaluator-lm", default=DEFAULT_LM,
                    help="factscore: LM that splits facts and judges support (default qwen1.5b)")
    ev.add_argument("--length-penalty", action="store_true",
                    help="factscore: apply FActScore's length penalty (gamma)")
    ev.add_argument("--gamma", type=positive, default=10, help="length-penalty gamma")
    ev.add_argument("--k", type=positive, default=5, help="factscore: passages per fact")
    ev.add_argument("--dataset-path", help="truthfulqa: the TruthfulQA CSV")
    ev.add_argument("--judge-lm", action="extend", nargs="+", metavar="SPEC",
                    help="truthfulqa: judge LM spec(s); several are averaged "
                         "(default: --evaluator-lm)")
    ev.add_argument("--attempts", type=positive, default=2,
                    help="tries per judgment before it is recorded as an error")
    ev.add_argument("--max-tokens", type=positive, default=512, help="max new tokens per call")
    ev.add_argument("--workers", type=positive, default=1, help="items scored concurrently")
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    # the shared run options bound the judge LM; those named above are eval's own, and the
    # judge LMs are --evaluator-lm / --judge-lm, not --lm
    add_run_options(ev, retrieval="`serc eval` reads its own --knowledge source",
                    method="`serc eval` scores a finished run; it runs no method",
                    skip=["--knowledge", "--max-tokens", "--quiet", "--workers", "--lm"])
    ev.set_defaults(handler=eval_command)


def eval_command(args) -> int:

    if not Path(args.results).is_file():
        raise UserError(f"results file not found: {args.results}")
    if args.metric == "factscore":
        if not args.knowledge:
            raise UserError("--metric factscore needs --knowledge DB_OR_JSON")

        knowledge = knowledge_source(args.knowledge)
        lm = _judge_lm(args.evaluator_lm, args)
        summary = score_factscore(args.results, knowledge, length_penalty=args.length_penalty,
                                  gamma=args.gamma, k=args.k, attempts=args.attempts,
                                  workers=args.workers, progress=not args.quiet, lm=lm)
        init = summary["initial"]
        print(f"FActScore {_fmt(summary['factscore'])} (initial {_fmt(init['factscore'])}), "
              f"respond {_fmt(summary['respond_ratio'], '.2f')}, avg facts "
              f"{_fmt(summary['avg_facts'], '.2f')} (initial {_fmt(init['avg_facts'], '.2f')}), "
              f"preservation {_fmt(summary['preservation'], '.3f')}, "
              f"{summary['answers']} answers, {summary['errors']} errors -> {summary['scores']}")
        return 0

    if not args.dataset_path:
        raise UserError("--metric truthfulqa needs --dataset-path TruthfulQA.csv")
    items = load_truthfulqa(args.dataset_path)
    specs = list(dict.fromkeys(args.judge_lm or [args.evaluator_lm]))
    judges = [_judge_lm(spec, args) for spec in specs]
    summary = score_truthfulqa(args.results, items, judges=judges, attempts=args.attempts,
                               workers=args.workers, progress=not args.quiet)
    print(f"TruthfulQA accuracy {_fmt(summary['accuracy'], '.3f')}, mean score "
          f"{_fmt(summary['mean_score'], '.2f')}, {summary['judged']} judged, "
          f"{summary['errors']} errors ({len(judges)} judge(s)) -> {summary['scores']}")
    return 0


# -- serc report --------------------------------------------------------------------------
def _register_report(subparsers) -> None:
    rep = subparsers.add_parser(
        "report", help="markdown tables and a score-vs-tokens plot from results files")
    rep.add_argument("results", nargs="+", help="results files (RUN.jsonl) or their score files")
    rep.add_argument("--out", help="folder for report.md and the PNG "
                                   "(default: the first file's folder)")
    rep.add_argument("--html", metavar="FILE",
                     help="also one HTML report with the tables, the plots and a decoding "
                          "view per item (written next to it in FILE_views/)")
    rep.set_defaults(handler=report_command)


def report_command(args) -> int:

    warned: set[str] = set()

    def warn(message: str) -> None:  # once each, though the HTML report reads the files again
        if message not in warned:
            warned.add(message)
            print(f"serc: warning: {redact(message)}", file=sys.stderr)

    out = args.out or str(Path(args.results[0]).parent)
    text, report_path, plot = write_report(args.results, out, warn)
    print(text, end="")
    print(f"[wrote {report_path}" + (f" and {plot}]" if isinstance(plot, Path)
                                     else f"; no plot: {plot}]"), file=sys.stderr)
    if args.html:

        print(f"[wrote {write_html_report(args.results, args.html, warn)}]", file=sys.stderr)
    return 0


# -- serc knowledge -----------------------------------------------------------------------
def _register_knowledge(subparsers) -> None:
    kn = subparsers.add_parser(
        "knowledge", help="build a FActScore-style SQLite knowledge source from a JSON")
    kn.add_argument("json", help="{title: text} or {topic: {resolved_title, extract}}")
    kn.add_argument("db", help="SQLite file to write")
    kn.add_argument("--overwrite", action="store_true", help="replace an existing file")
    kn.set_defaults(handler=knowledge_command)


def knowledge_command(args) -> int:

    source = KnowledgeSource.build_sqlite(args.json, args.db, overwrite=args.overwrite)
    passages = sum(len(source.passages(t)) for t in source.topics())
    print(json.dumps({"db": args.db, "topics": len(source), "passages": passages}))
    return 0
