"""The `serc` command: parse arguments, build LM + retriever + program, call, print. Thin."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import NoReturn

from serc_dspy import config
from serc_dspy.backends.models import MODELS, ensure_model, model_status
from serc_dspy.commands import bench, compiling, evaluation
from serc_dspy.commands.options import add_run_options
from serc_dspy.commands.progress import AssemblyProgress, StageProgress
from serc_dspy.core.errors import (
    EXIT_FAILED,
    EXIT_USAGE,
    DecodingFailed,
    UserError,
    describe,
    one_line,
    redact,
)
from serc_dspy.core.text import parse_json
from serc_dspy.core.trace import Trace
from serc_dspy.evaluation.protocol import record_command
from serc_dspy.programs.registry import method_names
from serc_dspy.runtime.adapter import StrictJSONAdapter
from serc_dspy.view import render_trace


class OneLineParser(argparse.ArgumentParser):
    """argparse with the CLI's error form: one line, `serc: error: ...`, and one hint line
    naming the command's help, instead of a usage block (exit 2, as every bad input)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"serc: error: {one_line(message)}\n"
                              f"hint: `{self.prog} --help` lists the options\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
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

    # the command groups (`serc_dspy/commands/`): each has `register(subparsers)` and sets
    # `handler(args) -> int` on its parsers
    for group in (evaluation, compiling, bench):
        group.register(commands)
    return parser


def _add_common(command: argparse.ArgumentParser) -> None:
    command.add_argument("--method", default="serc",
                         help="a registered method: " + ", ".join(
                             f"{name} (default)" if name == "serc" else name
                             for name in method_names()))
    add_run_options(command, retrieval=True, method=True)
    command.add_argument("--json", action="store_true",
                         help="print {answer, initial_answer, trace, usage} as JSON")
    command.add_argument("--trace", metavar="FILE", help="save the full trace as JSON")
    command.add_argument("--html", metavar="FILE",
                         help="save a self-contained HTML view of the decoding (serc view)")


def check_writable(path: str, option: str) -> Path:
    """Refuse an output path before minutes of work, not after."""
    try:
        return _writable(path, option)
    except OSError as exc:  # a name too long, a path the OS cannot even look at
        raise UserError(f"{option} {path}: {exc.strerror or exc}") from None


def _writable(path: str, option: str) -> Path:
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


def cost_line(usage, seconds: float) -> str:
    """`26 LM calls, 19,782 prompt (12,004 from the engine's cache) + 1,416 completion tokens,
    5 min 23 s`: what a run cost, for the end of `serc ask` / `serc correct`."""
    cached = (f" ({usage.cached_prompt_tokens:,} from the engine's cache)"
              if usage.cached_prompt_tokens else "")
    minutes, rest = divmod(round(seconds), 60)
    wall = f"{minutes} min {rest} s" if minutes else f"{seconds:.1f} s"
    return (f"{usage.calls} LM calls, {usage.prompt_tokens:,} prompt{cached} + "
            f"{usage.completion_tokens:,} completion tokens, {wall}")


def run(args) -> int:
    import dspy

    options = config.RunOptions.from_args(args)  # a bad rule or rate fails before any work
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
    progress = StageProgress(options.quiet)
    try:
        parts = config.build_run(options, [args.method], progress=progress)
        program = parts.program(args.method)
        started = time.monotonic()
        with dspy.context(lm=parts.lm, adapter=StrictJSONAdapter()):
            prediction = program(question=question, draft=draft)
    finally:
        progress.close()
    trace = prediction.trace
    seconds = time.monotonic() - started
    unwritten = _write_outputs(args, trace)  # the answer is printed before any such error
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
        if not args.quiet:
            print(f"\n[{trace.syndrome.summary()}]", file=sys.stderr)
            print(f"[{cost_line(trace.usage.total, seconds)}]", file=sys.stderr)
    if warning := trace.bound_warning():  # max_sentences: the rest was never checked
        print(f"[serc warning] {warning}", file=sys.stderr)
    for event in trace.errors:
        print(f"[serc warning] {event.phase}: {event.message}", file=sys.stderr)
    if unwritten:
        raise UserError(unwritten)
    return 0


def _write_outputs(args, trace) -> str | None:
    """`--trace` and `--html` (a failed run is worth seeing too). A path that passed the
    up-front check and still cannot be written (a name too long, /proc) is reported after the
    answer, in one line, never as a raw OSError that loses the answer."""
    failures = []
    for flag, path, render in (("--trace", args.trace, lambda: trace.to_json()),
                               ("--html", getattr(args, "html", None), lambda: _page(trace))):
        if not path:
            continue
        try:
            Path(path).write_text(render(), encoding="utf-8")
        except OSError as exc:
            failures.append(f"{flag} {path}: {exc.strerror or exc}")
    return ("could not write " + "; ".join(failures)) if failures else None


def _page(trace) -> str:

    return render_trace(trace)


def run_view(args) -> int:

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
    unknown = sorted(set(data) - set(Trace.model_fields)) if isinstance(data, dict) else []
    if not isinstance(data, dict) or "method" not in data or unknown:
        # every field of a trace has a default, so `{"a": 1}` would validate as an empty one
        raise UserError(f"{path} is not a SERC trace: "
                        + (f"unknown fields {', '.join(unknown[:5])}" if unknown else
                           "it names no method (save one with --trace FILE)"))
    try:
        trace = Trace.model_validate(data)
    except Exception as exc:  # pydantic's error, in one line
        raise UserError(f"{path} is not a SERC trace: {one_line(exc)[:300]}") from None
    page = render_trace(trace)
    Path(args.out).write_text(page, encoding="utf-8")
    print(f"wrote {args.out} ({len(page.encode('utf-8')) / 1024:,.0f} KiB)")
    return 0


def run_models(args) -> int:

    if args.prepare:

        ensure_model(args.prepare, progress=AssemblyProgress())
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


def rule_flags_joined(argv: list[str]) -> list[str]:
    """`--rule -quote.overrule`, as the help writes it: argparse would read `-quote.overrule`
    as an option of its own, so the switch is joined to its flag (`--rule=-quote.overrule`)."""
    out: list[str] = []
    k = 0
    while k < len(argv):
        if argv[k] == "--rule" and k + 1 < len(argv) and argv[k + 1][:1] in "+-" and \
                argv[k + 1][1:2].isalpha():
            out.append(f"--rule={argv[k + 1]}")
            k += 2
        else:
            out.append(argv[k])
            k += 1
    return out


def quiet_libraries() -> None:
    """`--quiet` holds for the libraries too: transformers' and the Hub's progress bars
    ("Loading weights") are off, before and after they are imported."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity_error()


def main(argv: list[str] | None = None) -> int:
    argv = rule_flags_joined(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    record_command(argv)
    if getattr(args, "quiet", False):
        quiet_libraries()
    try:
        handler = getattr(args, "handler", None)
        return handler(args) if handler is not None else run(args)
    except UserError as exc:
        print(f"serc: error: {redact(one_line(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except DecodingFailed as exc:
        print(f"serc: failed: {redact(one_line(exc))}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("serc: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last line of defence: one line, not a traceback
        print(f"serc: failed: {describe(exc)}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
