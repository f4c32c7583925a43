"""`serc bench noise|halueval|stages`: quality measurements that work at any model size.

    serc bench noise --articles wikipedia_dev.json --bios 8 --errors 0 2 --seed 0 \\
        --method initial --method serc --out results/noise
    serc bench halueval --data qa_dev.jsonl --limit 20 --method serc --out results/halueval
    serc bench stages --data ../shared/data --dev 40

Registered into the `serc` parser by `serc_dspy.cli`; it sits above both `evaluation` and
`compiling` (the stage table evaluates the compiling layer's stage programs).
"""

from __future__ import annotations

import json
import sys

from serc_dspy.arguments import non_negative, positive


def register(subparsers) -> None:
    bench = subparsers.add_parser(
        "bench", help="quality benchmarks: planted errors, HaluEval QA, per-stage accuracy")
    kinds = bench.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    _register_noise(kinds)
    _register_halueval(kinds)
    _register_stages(kinds)


def _lm_options(parser) -> None:
    parser.add_argument("--lm", default=None, help="LM spec (default: qwen1.5b)")
    parser.add_argument("--max-tokens", type=positive, default=None,
                        help="max new tokens per call (default: the model's)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _prompt_options(parser) -> None:
    parser.add_argument("--frozen", action="store_true",
                        help="SERC methods: the paper's frozen prompts, not the model's "
                             "packaged compiled state")


def _method_settings(args) -> dict:
    """The same per-model run defaults as `serc run` (queries, evidence, passages...)."""
    from serc_dspy.backends.spec import apply_run_defaults, run_defaults

    apply_run_defaults(args)
    defaults = run_defaults(args.lm)
    return {"top_k": defaults["top_k"], "context_chars": defaults["context_chars"],
            "max_workers": defaults["workers"], "queries": defaults["queries"],
            "evidence": defaults["evidence"], "verdicts": defaults["verdicts"],
            **({"compiled": None} if getattr(args, "frozen", False) else {})}


def _build_lm(args):
    from serc_dspy.evaluation.commands import _build_lm as build  # the one LM-from-flags helper

    return build(args.lm, args.max_tokens)


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
    _lm_options(p)
    _prompt_options(p)
    p.set_defaults(handler=noise_command)


def noise_command(args) -> int:
    from serc_dspy.evaluation.benchmarks import noise_table, run_noise
    from serc_dspy.programs import get_method

    for method in args.method:
        get_method(method)
    settings = _method_settings(args)
    lm = _build_lm(args)
    failed = []

    def on_run(method, k, summary):
        if summary.failed:
            failed.append(f"{method} at K={k}: {summary.failed} failed")

    combined = run_noise(args.articles, args.out, methods=args.method, errors=args.errors,
                         bios=args.bios, seed=args.seed, sentences=args.sentences,
                         include_lead=args.include_lead, offset=args.offset, lm=lm,
                         progress=not args.quiet,
                         on_run=on_run, **settings)
    if args.json:
        print(json.dumps(combined, ensure_ascii=False))
    else:
        from serc_dspy.evaluation.benchmarks import collect_noise

        print(noise_table(collect_noise(args.out)), end="")
        print(f"[wrote {args.out}/noise.json, noise.md and "
              f"{combined.get('waterfall') or 'no plot: ' + combined.get('waterfall_error', '')}]",
              file=sys.stderr)
    for line in failed:
        print(f"serc: warning: {line}; re-running retries them", file=sys.stderr)
    return 1 if failed else 0


# -- halueval ---------------------------------------------------------------------------------
def _register_halueval(kinds) -> None:
    p = kinds.add_parser(
        "halueval", help="HaluEval QA: fix hallucinated answers from the item's own knowledge",
        description="The draft is the hallucinated answer and the corpus the item's knowledge; "
                    "a control run hands in the right answer, which must stay right.")
    p.add_argument("--data", required=True, help="HaluEval QA JSONL")
    p.add_argument("--limit", type=positive, default=20, help="items (default 20)")
    p.add_argument("--method", default="serc", help="a registered method (default serc)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    _lm_options(p)
    _prompt_options(p)
    p.set_defaults(handler=halueval_command)


def halueval_command(args) -> int:
    from serc_dspy.evaluation.benchmarks import run_halueval
    from serc_dspy.programs import get_method

    get_method(args.method)
    settings = _method_settings(args)
    summary = run_halueval(args.data, args.out, method=args.method, limit=args.limit,
                           lm=_build_lm(args), progress=not args.quiet, **settings)
    if args.json:
        print(json.dumps(summary))
    else:
        h, c = summary["hallucinated"], summary["control"]
        print(f"HaluEval {args.method}: fix rate {_f(h['fix_rate'])} on {h['scored']} items "
              f"({h['failed']} failed; {_f(h['cold_start_rate'])} of the drafts took the cold "
              f"start); control break rate {_f(c['break_rate'])} on "
              f"{c['scored']} ({c['failed']} failed); {_f(h['calls_per_item'], '.1f')} calls and "
              f"{_f(h['tokens_per_item'], '.0f')} tokens per item")
    return 1 if summary["hallucinated"]["failed"] or summary["control"]["failed"] else 0


def _f(value, spec: str = ".3f") -> str:
    return "–" if value is None else format(value, spec)


# -- stages -----------------------------------------------------------------------------------
def _register_stages(kinds) -> None:
    p = kinds.add_parser(
        "stages", help="per-stage accuracy on labelled data (dev split, never trained on)",
        description="Verdicts vs Factcheck-GPT stances, atomic facts vs FActScore human facts, "
                    "corrections vs Factcheck-GPT revisions, and the entity firewall on same- "
                    "and different-entity descriptor pairs.")
    p.add_argument("--data", required=True,
                   help="data folder holding factcheck_gpt/, factscore/ and factscore_wiki/")
    p.add_argument("--stage", action="append",
                   choices=["verify", "verify_cited", "facts", "correct", "firewall"],
                   help="stages to run (default: all)")
    p.add_argument("--dev", type=positive, default=40, help="dev examples per stage (default 40)")
    p.add_argument("--seed", type=int, default=0, help="split seed (the compile default: 0)")
    p.add_argument("--offset", type=non_negative, default=0,
                   help="skip the first N dev examples (those `serc compile --dev N` selected on)")
    p.add_argument("--compiled", help="a compiled state to evaluate instead of the frozen prompts")
    p.add_argument("--out", help="write the table and a JSON summary to this folder")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    _lm_options(p)
    p.set_defaults(handler=stages_command)


def stages_command(args) -> int:
    from serc_dspy.stage_bench import run_stages, stages_table

    if args.lm is None:
        from serc_dspy.backends.spec import DEFAULT_LM

        args.lm = DEFAULT_LM
    summary = run_stages(args.data, stages=args.stage, dev=args.dev, seed=args.seed,
                         offset=args.offset,
                         lm=_build_lm(args), compiled=args.compiled, out=args.out,
                         progress=not args.quiet)
    print(json.dumps(summary) if args.json else stages_table(summary), end="\n" if args.json
          else "")
    bad = [f"{stage}: {s['error']}" if "error" in s else f"{stage}: every example failed"
           for stage, s in summary["stages"].items()
           if "error" in s or s.get("failures") == s.get("n")]
    for line in bad:
        print(f"serc: warning: {line}", file=sys.stderr)
    return 1 if bad else 0
