"""`serc compile`: optimise SERC stages on labelled data, report dev scores, save the state.

    serc compile --stage verify|facts|correct|all --optimizer labeled|bootstrap|mipro
                 --train N --dev N --data DIR --out PATH.json [--lm SPEC]
    serc compile --stage serc --optimizer bootstrap|NAME --train BIOS --dev BIOS
                 --data DIR|ARTICLES.json --out PATH.json [--errors K]

Scores go to stdout; progress and data counts to stderr (unless --quiet).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shlex
import sys
import time
from pathlib import Path

from serc_dspy import config
from serc_dspy.commands.options import add_run_options
from serc_dspy.compiling.compile import (
    DEFAULT_DEMOS,
    STAGES,
    compile_stage,
    get_stage,
    load_stage_data,
    save_results,
)
from serc_dspy.compiling.program import compile_program, load_program_data, save_program
from serc_dspy.config import RunOptions
from serc_dspy.core.errors import DecodingFailed, UserError
from serc_dspy.retrieval.factory import maybe_cached


def register(subparsers) -> None:

    stages = ", ".join(f"{s.name} ({s.predictor}: {s.description})" for s in STAGES.values())
    command = subparsers.add_parser(
        "compile",
        help="optimise SERC stages with DSPy on labelled data and save the state",
        description="Compile SERC stages with a DSPy optimizer, evaluate each on its dev split "
                    f"before and after, and save the program state as JSON. Stages: {stages}; "
                    "serc (the whole program, every predictor at once, scored by the "
                    "planted-error metric on drafts with K planted errors).",
    )
    command.add_argument("--stage", required=True, choices=[*STAGES, "all", "serc"],
                         help="which stage to compile; 'all' compiles each into one state; "
                              "'serc' compiles the whole program end to end")
    command.add_argument("--optimizer", default="labeled", metavar="NAME",
                         help="labeled = LabeledFewShot, bootstrap = BootstrapFewShot, "
                              "mipro = MIPROv2 (auto=light; needs optuna), or any DSPy "
                              "teleprompter by class name (SIMBA, "
                              "BootstrapFewShotWithRandomSearch) or import path "
                              "(package.module:Class); it gets the stage's metric")
    command.add_argument("--train", type=int, default=16, metavar="N",
                         help="training examples per stage (default 16)")
    command.add_argument("--dev", type=int, default=40, metavar="N",
                         help="dev examples per stage (default 40)")
    command.add_argument("--data", required=True, metavar="DIR",
                         help="folder holding the data (Factcheck-GPT subtask files and/or "
                              "FActScore labelled .jsonl, also one level down in "
                              "factcheck_gpt/ or factscore/labeled_dev/); a single stance "
                              "file for --stage verify; for --stage serc an articles JSON "
                              "(or a folder with factscore_wiki/wikipedia*.json)")
    command.add_argument("--errors", type=int, default=2, metavar="K",
                         help="--stage serc: errors planted per bio (default 2)")
    command.add_argument("--out", required=True, metavar="PATH",
                         help="where to save the compiled state (.json)")
    command.add_argument("--demos", type=int, default=DEFAULT_DEMOS, metavar="K",
                         help=f"few-shot demos per predictor (default {DEFAULT_DEMOS})")
    command.add_argument("--balanced", action=argparse.BooleanOptionalAction, default=True,
                         help="verify stage: sample train and dev round-robin over the three "
                              "verdicts (default; the data is mostly NOT_FOUND)")
    command.add_argument("--seed", type=int, default=0, help="split seed (default 0)")
    command.add_argument("--threads", type=int, default=1,
                         help="parallel evaluation threads (the embedded model serialises "
                              "calls anyway)")
    command.add_argument("--verbose", action="store_true",
                         help="also show DSPy's own log lines (its optimizers' and Evaluate's "
                              "INFO messages); by default only this command's progress")
    add_run_options(command)
    command.set_defaults(handler=run_compile)


@contextlib.contextmanager
def dspy_logs(verbose: bool):
    """DSPy's INFO lines (each bootstrapped trace, each Evaluate average) interleave with the
    command's own progress; they are shown only with `--verbose`."""
    logger = logging.getLogger("dspy")
    level = logger.level
    if not verbose:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _check_args(args) -> Path:
    for name in ("train", "dev", "demos", "threads"):
        if getattr(args, name) < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1, got "
                            f"{getattr(args, name)}")
    out = Path(args.out).expanduser()
    if out.suffix.lower() in (".pkl", ".pickle"):
        raise UserError(f"--out {out}: pickle files are refused; save the state as .json")
    if out.suffix.lower() != ".json":
        raise UserError(f"--out {out}: the compiled state is a JSON file; use a .json path")
    if out.is_dir():
        raise UserError(f"--out {out} is a folder; give a .json file path")
    return out


def _fmt(score) -> str:
    text = f"{score.score:.1f}%"
    if score.macro_f1 is not None:
        text += f", macro-F1 {score.macro_f1:.3f}"
    return text + f" ({score.failures} of {score.n} failed, {score.seconds:.0f}s)"


def run_compile(args) -> int:
    options = RunOptions.from_args(args)
    out = _check_args(args)
    with dspy_logs(args.verbose):
        if args.stage == "serc":
            return _compile_program(args, options, out)
        return _compile_stages(args, options, out)


def _compile_stages(args, options: RunOptions, out: Path) -> int:
    """Single predictors (`--stage verify|verify_cited|facts|correct|all`)."""

    options.unused(["deadline", "stage_lms", "search_rate"],
                   f"--stage {args.stage} compiles single predictors, each called on its own "
                   "with --lm; they bound a whole program (--stage serc)")
    stages = list(STAGES) if args.stage == "all" else [args.stage]

    def log(message: str) -> None:
        if not options.quiet:
            print(f"[compile {time.monotonic() - started:6.1f}s] {message}", file=sys.stderr,
                  flush=True)

    started = time.monotonic()
    splits = {}
    for stage in stages:  # read all data first: a bad path fails before minutes of LM work
        splits[stage] = load_stage_data(stage, args.data, train=args.train, dev=args.dev,
                                        seed=args.seed, balanced=args.balanced)
        counts = splits[stage].counts
        log(f"{stage}: {counts['examples']} examples from {counts['source']}; "
            f"skipped {counts['skipped']}; taken {counts['train']} train / {counts['dev']} dev"
            + (f" (train {counts['train_labels']}, dev {counts['dev_labels']})"
               if "train_labels" in counts else ""))
        if counts["train"] < args.train or counts["dev"] < args.dev:
            log(f"{stage}: fewer examples than asked for ({args.train} train / {args.dev} dev)")

    lm = config.build_lm(options)
    results = _compile_all(args, options, stages, splits, lm, log)
    total = time.monotonic() - started
    dead = [r for r in results if r.after.n and r.after.failures == r.after.n]
    if dead:  # a state scored on nothing is not a compiled state: say so, save nothing
        raise DecodingFailed(f"every dev example failed for stage(s) "
                             f"{', '.join(r.stage for r in dead)}; nothing was saved (is the LM "
                             "reachable and does it return parseable output?)")
    meta = {
        "command": "serc " + " ".join(shlex.quote(a) for a in _argv(args, options)),
        "lm": options.lm,
        "optimizer": args.optimizer,
        "train": args.train,
        "dev": args.dev,
        "demos": args.demos,
        "balanced": args.balanced,
        "seed": args.seed,
        "seconds": round(total, 1),
    }
    path = save_results(results, out, meta)
    print(f"saved {path} ({total:.0f}s in all)")
    return 0


def _compile_program(args, options: RunOptions, out: Path) -> int:
    """`--stage serc`: the whole program, scored by the planted-error metric."""

    started = time.monotonic()

    def log(message: str) -> None:
        if not options.quiet:
            print(f"[compile {time.monotonic() - started:6.1f}s] {message}", file=sys.stderr,
                  flush=True)

    if args.errors < 1:
        raise UserError(f"--errors must be at least 1 for --stage serc, got {args.errors}")
    split, retriever = load_program_data(args.data, train=args.train, dev=args.dev,
                                         seed=args.seed, errors=args.errors)
    log(f"serc: {split.counts['examples']} drafts with {args.errors} planted errors from "
        f"{split.counts['source']}; {len(split.train)} train / {len(split.dev)} dev bios")
    parts = config.build_run(options, ["serc"], retrieval=False)
    settings, lm = parts.settings, parts.lm
    # the saved state records the options that shape its demos; the bounds only limit the run
    recorded = {key: settings[key] for key in ("top_k", "context_chars", "queries", "evidence",
                                               "verdicts")}
    bounds = {key: settings[key] for key in ("deadline_s", "lms") if key in settings}
    result = compile_program(split, maybe_cached(retriever, None, options.search_rate), lm=lm,
                             optimizer=args.optimizer, demos=args.demos,
                             num_threads=args.threads, seed=args.seed,
                             program_options={**recorded, **bounds},
                             display_progress=not options.quiet and sys.stderr.isatty(), log=log)
    print(f"stage serc (every predictor), optimizer {args.optimizer}: {len(split.train)} train "
          f"/ {len(split.dev)} dev bios, demos {result.demos() or 'none'}")
    print(f"  dev before: {_fmt(result.before)}")
    print(f"  dev after:  {_fmt(result.after)}")
    print(f"  compile time: {result.compile_seconds:.0f}s", flush=True)
    if result.after.failures == result.after.n:
        raise DecodingFailed("every dev decoding failed; nothing was saved (is the LM "
                             "reachable and does it return parseable output?)")
    total = time.monotonic() - started
    meta = {"command": "serc " + " ".join(shlex.quote(a) for a in _argv(args, options)),
            "lm": options.lm, "optimizer": args.optimizer, "train": args.train,
            "dev": args.dev, "demos": args.demos, "errors": args.errors, "seed": args.seed,
            "program_options": recorded, "seconds": round(total, 1)}
    path = save_program(result, out, meta)
    print(f"saved {path} ({total:.0f}s in all)")
    return 0


def _compile_all(args, options: RunOptions, stages, splits, lm, log) -> list:

    results = []
    for stage in stages:
        spec = get_stage(stage)
        result = compile_stage(stage, splits[stage], lm=lm, optimizer=args.optimizer,
                               demos=args.demos, num_threads=args.threads, seed=args.seed,
                               display_progress=not options.quiet and sys.stderr.isatty(),
                               log=log)
        results.append(result)
        print(f"stage {stage} ({spec.predictor}), optimizer {args.optimizer}: "
              f"{len(splits[stage].train)} train / {len(splits[stage].dev)} dev examples, "
              f"{len(result.program.predictor.demos)} demos")
        print(f"  dev before: {_fmt(result.before)}")
        print(f"  dev after:  {_fmt(result.after)}")
        print(f"  compile time: {result.compile_seconds:.0f}s", flush=True)
    return results


def _argv(args, options: RunOptions) -> list[str]:
    """The command line that reproduces this run (data and output paths as given)."""
    argv = ["compile", "--stage", args.stage, "--optimizer", args.optimizer,
            "--train", str(args.train), "--dev", str(args.dev), "--demos", str(args.demos),
            "--data", str(args.data), "--out", str(args.out), "--lm", options.lm]
    if options.max_tokens != 512:
        argv += ["--max-tokens", str(options.max_tokens)]
    if not args.balanced:
        argv.append("--no-balanced")
    if args.stage == "serc":
        argv += ["--errors", str(args.errors)]
    if args.seed:
        argv += ["--seed", str(args.seed)]
    return argv
