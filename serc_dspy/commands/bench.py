"""`serc bench noise|factcheck|halueval|stages|compare`: quality measurements that work at any
model size, each rate with its 95% bootstrap interval.

    serc bench noise --articles wikipedia_dev.json --bios 8 --errors 0 2 --seeds 0 1 \\
        --method initial --method serc --out results/noise
    serc bench factcheck --data benchmark_dev.jsonl --offset 25 --items 25 \\
        --method initial --method serc --out results/factcheck
    serc bench halueval --data qa_dev.jsonl --limit 20 --method serc --out results/halueval
    serc bench stages --data ../shared/data --dev 40
    serc bench compare results/noise/serc-k2.jsonl results/noise/serc_lean-k2.jsonl

Registered into the `serc` parser by `serc_dspy.cli`, like `commands` beside it. It lives with
the measurements it drives, but in the edge layer: it reads the shared run options
(`serc_dspy.config`) and sits above both `evaluation` and `compiling` (the stage table,
`stage_bench`, evaluates the compiling layer's stage programs).
"""

from __future__ import annotations

import json
import sys

from serc_dspy import config
from serc_dspy.backends.models import MODELS
from serc_dspy.backends.spec import offline_model_name
from serc_dspy.commands.arguments import non_negative, positive
from serc_dspy.commands.options import add_run_options
from serc_dspy.compiling.stage_bench import run_pair_stages, run_stages, stages_table
from serc_dspy.config import RunOptions, refuse_serc_only
from serc_dspy.core.errors import EXIT_FAILED, EXIT_OK, UserError
from serc_dspy.evaluation.ablation import ablation_table
from serc_dspy.evaluation.benchmarks import collect_noise, noise_table, run_halueval, run_noise
from serc_dspy.evaluation.compare import compare_files, compare_table
from serc_dspy.evaluation.factcheck import packaged_labels
from serc_dspy.evaluation.factcheck_bench import factcheck_table, run_factcheck
from serc_dspy.evaluation.intervals import format_ci
from serc_dspy.programs import get_method
from serc_dspy.rules import RuleSet, check_ids
from serc_dspy.runtime.states import read_compiled


def register(subparsers) -> None:
    bench = subparsers.add_parser(
        "bench", help="quality benchmarks: planted errors, HaluEval QA, per-stage accuracy")
    kinds = bench.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    _register_noise(kinds)
    _register_factcheck(kinds)
    _register_halueval(kinds)
    _register_stages(kinds)
    _register_compare(kinds)


def _method_run_options(parser, **kwargs) -> None:
    """The shared run options of a benchmark that runs methods: each item brings its own
    passages, so there is no retriever to choose."""
    add_run_options(parser, method=True, workers_flag="--method-workers", **kwargs)


def _ablate_options(parser) -> None:
    parser.add_argument("--ablate", action="append", default=[], metavar="RULE",
                        help="also run each SERC method with this rule off, on the same items, "
                             "and report the paired difference of every figure (repeatable)")
    parser.add_argument("--ablate-rerun-all", action="store_true",
                        help="decode every item again with the rule off; by default the "
                             "method's answers on which the rule never fired are carried "
                             "over (the same LM replies take the same path there)")


def _options(args):
    """The run options, refusing a search rate: a benchmark searches each item's own passages
    locally, never a web search."""

    options = RunOptions.from_args(args)
    options.unused(["search_rate"], "each item is checked against its own passages, searched "
                                    "locally")
    methods = args.method if isinstance(args.method, list) else [args.method]
    refuse_serc_only(options, methods)
    if getattr(args, "ablate", None):
        refuse_serc_only(options.model_copy(update={"rules": {r: False for r in args.ablate}}),
                         methods)
    return options


def _checked_rules(ids: list[str], switches=None) -> list[str]:
    """The rules to ablate: known ids, each on in this run (ablating a rule that is already
    off would compare the method with itself)."""

    check_ids(ids)
    rules = RuleSet(dict(switches or {}))
    for rule in ids:
        if not rules.on(rule):
            raise UserError(f"--ablate {rule}: the rule is already off in this run; switch it "
                            f"on with --rule=+{rule} to measure what it does")
    return list(dict.fromkeys(ids))


# -- noise ------------------------------------------------------------------------------------
def _register_noise(kinds) -> None:
    p = kinds.add_parser(
        "noise", help="planted-error benchmark: residual error rate against injected errors",
        description="Plant K errors in the first sentences of article leads, decode them with "
                    "each method against the rest of the article, and count what is left. "
                    "Resumable: re-running the same command skips finished bios.")
    p.add_argument("--articles", required=True,
                   help="JSON of articles: {title: text} or {topic: {resolved_title, extract}}")
    p.add_argument("--bios", type=positive, default=8, help="bios per K (default 8)")
    p.add_argument("--errors", type=non_negative, nargs="+", default=[2], metavar="K",
                   help="errors planted per bio; several values make the waterfall (default 2)")
    p.add_argument("--seed", type=int, default=0, help="injection seed (default 0)")
    p.add_argument("--seeds", type=int, nargs="+", metavar="SEED",
                   help="several injection seeds on the same bios, pooled in the summary "
                        "(replaces --seed)")
    p.add_argument("--method", action="append", required=True,
                   help="a registered method; repeat for several")
    p.add_argument("--sentences", type=positive, default=3, help="lead sentences per draft")
    p.add_argument("--include-lead", action="store_true",
                   help="let the corpus include the lead (default: the article body only)")
    p.add_argument("--offset", type=non_negative, default=0,
                   help="skip the first N articles of the file: a held-out split of bios "
                        "(default 0)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    _method_run_options(p)
    _ablate_options(p)
    p.set_defaults(handler=noise_command)


def noise_command(args) -> int:

    for method in args.method:
        get_method(method)
    options = _options(args)
    parts = config.build_run(options, args.method, retrieval=False)
    settings, lm = parts.settings, parts.lm
    failed = []

    def on_run(method, k, summary):
        if summary.failed:
            failed.append(f"{method} at K={k}: {summary.failed} failed")

    combined = run_noise(args.articles, args.out, methods=args.method, errors=args.errors,
                         bios=args.bios, seed=args.seed, seeds=args.seeds,
                         ablate=_checked_rules(args.ablate, options.rules),
                         ablate_rerun_all=args.ablate_rerun_all, sentences=args.sentences,
                         include_lead=args.include_lead, offset=args.offset, lm=lm,
                         progress=not options.quiet,
                         on_run=on_run, **settings)
    if args.json:
        print(json.dumps(combined, ensure_ascii=False))
    else:

        print(noise_table(collect_noise(args.out)), end="")
        if combined.get("ablation"):
            print("\nRules switched off, against the full method:\n\n"
                  + ablation_table(combined["ablation"]), end="")
        print(f"[wrote {args.out}/noise.json, noise.md and "
              f"{combined.get('waterfall') or 'no plot: ' + combined.get('waterfall_error', '')}]",
              file=sys.stderr)
    for line in failed:
        print(f"serc: warning: {line}; re-running retries them", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


# -- factcheck --------------------------------------------------------------------------------
def _register_factcheck(kinds) -> None:
    p = kinds.add_parser(
        "factcheck", help="Factcheck-Bench: correct real ChatGPT errors, scored against people",
        description="Each item's ChatGPT answer is the draft, its prompt the question and its "
                    "own evidence passages the corpus. Claims are scored against the human "
                    "labels: false claims fixed, removed or left; true claims kept, altered or "
                    "removed. Resumable: re-running the same command skips finished answers.")
    p.add_argument("--data", required=True, help="Factcheck-Bench benchmark JSONL")
    p.add_argument("--items", type=positive, default=None, help="items to run (default: all)")
    p.add_argument("--offset", type=non_negative, default=0,
                   help="skip the first N items (the report split is --offset 25)")
    p.add_argument("--method", action="append", required=True,
                   help="a registered method; repeat for several")
    p.add_argument("--evidence", choices=["auto", "human"], default="auto",
                   help="the passages a web search returned (auto, default) or the "
                        "annotators' evidence (human)")
    p.add_argument("--judge-lm", default=None,
                   help="LM spec of the claim judge (default: the --lm)")
    p.add_argument("--judge-labels", default=None,
                   help="hand-labelled claims to measure the judge on (default: the sample "
                        "shipped with the package; 'none' to skip)")
    p.add_argument("--include-trained", action="store_true",
                   help="also score the items the compiled state's demos were taken from")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    _method_run_options(p, skip=["--evidence"])  # --evidence names the passages here
    _ablate_options(p)
    p.set_defaults(handler=factcheck_command)


def _trained_state(options) -> dict | None:
    """The compiled state SERC methods will run with (`--compiled`, else `compiled="auto"`: a
    named offline model's own), whose demos may quote benchmark items."""

    if options.compiled:
        return read_compiled(options.compiled)
    name = offline_model_name(options.lm)
    if options.frozen or name is None or not MODELS[name].compiled:
        return None
    return read_compiled(MODELS[name].compiled)


def factcheck_command(args) -> int:

    for method in args.method:
        get_method(method)
    options = _options(args)
    parts = config.build_run(options, args.method, retrieval=False)
    settings, lm = parts.settings, parts.lm
    judge_lm = lm if args.judge_lm is None else config.build_lm(options, args.judge_lm)
    labels = None if (args.judge_labels or "").lower() == "none" else \
        (args.judge_labels or packaged_labels())
    failed = []
    report = run_factcheck(
        args.data, args.out, methods=args.method, items=args.items, offset=args.offset,
        evidence_kind=args.evidence, lm=lm, judge_lm=judge_lm, labels=labels,
        trained_state=_trained_state(options), include_trained=args.include_trained,
        ablate=_checked_rules(args.ablate, options.rules),
        ablate_rerun_all=args.ablate_rerun_all,
        progress=not options.quiet,
        on_run=lambda method, s: s.failed and failed.append(f"{method}: {s.failed} failed"),
        **settings)
    if report["excluded_as_trained"]:
        print(f"serc: {len(report['excluded_as_trained'])} item(s) excluded: the compiled "
              f"state's demos come from them ({', '.join(report['excluded_as_trained'])}); "
              "--include-trained scores them", file=sys.stderr)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(factcheck_table(report), end="")
        print(f"[wrote {args.out}/factcheck.json and factcheck.md]", file=sys.stderr)
    for line in failed:
        print(f"serc: warning: {line}; re-running retries them", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


# -- compare ----------------------------------------------------------------------------------
def _register_compare(kinds) -> None:
    p = kinds.add_parser(
        "compare", help="the paired difference of two runs on the items both scored",
        description="A and B are results files of `serc bench noise` or `serc bench "
                    "factcheck` (RUN.jsonl, or their scored RUN.noise.jsonl / "
                    "RUN.factcheck.jsonl): two methods, or two runs of one method, on the same "
                    "items. Each figure's difference A - B comes with its 95% bootstrap "
                    "interval; a change helps only when that interval excludes zero.")
    p.add_argument("a", help="results file A")
    p.add_argument("b", help="results file B")
    p.add_argument("--figure", action="append",
                   help="only these figures (default: every figure of the benchmark)")
    p.add_argument("--json", action="store_true", help="print the differences as JSON")
    p.set_defaults(handler=compare_command)


def compare_command(args) -> int:

    diffs = compare_files(args.a, args.b, figures=args.figure)
    if args.json:
        print(json.dumps({"a": args.a, "b": args.b,
                          "differences": [d.model_dump() | {"excludes_zero": d.excludes_zero}
                                          for d in diffs]}))
    else:
        print(compare_table(diffs, args.a, args.b), end="")
    return 0


# -- halueval ---------------------------------------------------------------------------------
def _register_halueval(kinds) -> None:
    p = kinds.add_parser(
        "halueval", help="HaluEval QA: fix hallucinated answers from the item's own knowledge",
        description="The draft is the hallucinated answer and the corpus the item's knowledge; "
                    "a control run hands in the right answer, which must stay right.")
    p.add_argument("--data", required=True, help="HaluEval QA JSONL")
    p.add_argument("--limit", type=positive, default=20, help="items (default 20)")
    p.add_argument("--offset", type=non_negative, default=0,
                   help="skip the first N items (those a method was tuned on)")
    p.add_argument("--method", default="serc", help="a registered method (default serc)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    _method_run_options(p)
    _ablate_options(p)
    p.set_defaults(handler=halueval_command)


def halueval_command(args) -> int:

    get_method(args.method)
    options = _options(args)
    parts = config.build_run(options, [args.method], retrieval=False)
    settings = parts.settings
    summary = run_halueval(args.data, args.out, method=args.method, limit=args.limit,
                           offset=args.offset, lm=parts.lm,
                           progress=not options.quiet,
                           ablate=_checked_rules(args.ablate, options.rules),
                           ablate_rerun_all=args.ablate_rerun_all, **settings)
    if args.json:
        print(json.dumps(summary))
    else:

        h, c = summary["hallucinated"], summary["control"]
        print(f"HaluEval {args.method}: fix rate {format_ci(h['fix_rate'], h['fix_rate_ci'])} "
              f"on {h['scored']} items "
              f"({h['failed']} failed; {_f(h['cold_start_rate'])} of the drafts took the cold "
              f"start); control break rate {format_ci(c['break_rate'], c['break_rate_ci'])} on "
              f"{c['scored']} ({c['failed']} failed); {_f(h['calls_per_item'], '.1f')} calls and "
              f"{_f(h['tokens_per_item'], '.0f')} tokens per item")
        for kind in sorted(set(h["by_type"]) | set(c["by_type"])):
            fixed, broken = h["by_type"].get(kind, {}), c["by_type"].get(kind, {})
            print(f"  {kind}: fixed {format_ci(fixed.get('fix_rate'), fixed.get('fix_rate_ci'))}"
                  f" of {fixed.get('n', 0)}; broken "
                  f"{format_ci(broken.get('break_rate'), broken.get('break_rate_ci'))} of "
                  f"{broken.get('n', 0)}")
        for label, figures in (summary.get("ablation") or {}).items():
            print(f"  {label}, off - on: " + "; ".join(
                f"{name} {_f(d['difference'], '+.3f')} [{_f(d['low'], '+.3f')}, "
                f"{_f(d['high'], '+.3f')}]" for name, d in figures.items()))
    return EXIT_FAILED if summary["hallucinated"]["failed"] or summary["control"]["failed"] \
        else EXIT_OK


def _f(value, spec: str = ".3f") -> str:
    return "–" if value is None else format(value, spec)


# -- stages -----------------------------------------------------------------------------------
def _register_stages(kinds) -> None:
    p = kinds.add_parser(
        "stages", help="per-stage accuracy on labelled data (dev split, never trained on)",
        description="Verdicts vs Factcheck-GPT stances, atomic facts vs FActScore human facts, "
                    "corrections vs Factcheck-GPT revisions, slot choices vs the values the "
                    "tuning bios state (choose; with --pairs, a verdict on stance pairs), and "
                    "the entity firewall on same- and different-entity descriptor pairs.")
    p.add_argument("--data", required=True,
                   help="data folder holding factcheck_gpt/, factscore/ and factscore_wiki/")
    p.add_argument("--stage", action="append",
                   choices=["verify", "verify_cited", "verify_agree", "choose", "facts",
                            "correct", "firewall"],
                   help="stages to run (default: all)")
    p.add_argument("--dev", type=positive, default=40, help="dev examples per stage (default 40)")
    p.add_argument("--pairs", type=positive, default=None, metavar="N",
                   help="verdict stages only: N stance pairs nothing was compiled, selected or "
                        "reported on (labels as balanced as the file allows), each path with "
                        "its 95%% interval; adds verify_agree")
    p.add_argument("--seed", type=int, default=0, help="split seed (the compile default: 0)")
    p.add_argument("--offset", type=non_negative, default=0,
                   help="skip the first N dev examples (those `serc compile --dev N` selected on)")
    p.add_argument("--compiled", help="a compiled state to evaluate instead of the frozen prompts")
    p.add_argument("--out", help="write the table and a JSON summary to this folder")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--workers", type=positive, default=1, metavar="N",
                   help="--pairs: pairs judged at once, on the engine's slots (default 1)")
    # its own --compiled (the state to evaluate) and --workers (no method runs here)
    add_run_options(p, skip=["--compiled", "--workers"])
    p.set_defaults(handler=stages_command)


def stages_command(args) -> int:
    options = config.RunOptions.from_args(args)
    options.unused(["deadline", "stage_lms", "search_rate"],
                   "serc bench stages calls each stage's predictor on its own, with --lm; no "
                   "method runs and nothing is searched")
    if args.pairs:
        summary = run_pair_stages(args.data, stages=args.stage, pairs=args.pairs,
                                  workers=args.workers,
                                  seed=args.seed, lm=config.build_lm(options),
                                  compiled=args.compiled, out=args.out,
                                  progress=not options.quiet)
    elif "verify_agree" in (args.stage or []):
        raise UserError("verify_agree is scored on unseen stance pairs: add --pairs N")
    else:
        summary = run_stages(args.data, stages=args.stage, dev=args.dev, seed=args.seed,
                             offset=args.offset, lm=config.build_lm(options),
                             compiled=args.compiled, out=args.out, progress=not options.quiet)
    print(json.dumps(summary) if args.json else stages_table(summary), end="\n" if args.json
          else "")
    bad = [f"{stage}: {s['error']}" if "error" in s else f"{stage}: every example failed"
           for stage, s in summary["stages"].items()
           if "error" in s or s.get("failures") == s.get("n")]
    for line in bad:
        print(f"serc: warning: {line}", file=sys.stderr)
    return EXIT_FAILED if bad else EXIT_OK
