"""Argument types shared by every `serc` subcommand, so a bad number fails the same way."""

from __future__ import annotations

import argparse


def _integer(value: str, minimum: int, wanted: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {value!r}") from None
    if number < minimum:
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {number}")
    return number


def positive(value: str) -> int:
    return _integer(value, 1, "a positive integer")


def non_negative(value: str) -> int:
    return _integer(value, 0, "an integer >= 0")


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {number}")
    return number


def add_rule_options(parser) -> None:
    """`--rule +ID` / `--rule -ID` (repeatable): switch a named rule on or off for SERC methods
    (`serc_dspy.rules`; an unknown id is an error listing the valid ones)."""
    parser.add_argument("--rule", action="append", default=[], metavar="+ID|-ID",
                        help="switch a rule on (+ID) or off (-ID), e.g. -quote.overrule; "
                             "repeatable (SERC methods; see the README's rule table)")


def rule_switches(args) -> dict:
    """`{"rules": {...}}` for a method's options, or `{}` when no --rule was given."""
    from serc_dspy.rules import parse_switches

    specs = getattr(args, "rule", None) or []
    return {"rules": parse_switches(specs)} if specs else {}


def add_decoding_options(parser) -> None:
    """SERC's evidence and reconstruction choices (`SERC(fact_evidence=..., reconstruct=...)`)."""
    parser.add_argument("--fact-evidence", action="store_true",
                        help="SERC methods: search each fact's own text too and show each "
                             "verdict its own passages first")
    parser.add_argument("--reconstruct", choices=["rebuild", "minimal"], default=None,
                        help="SERC methods: rebuild changed sentences from their facts (the "
                             "paper) or make each correction in place (minimal)")


def decoding_options(args) -> dict:
    out = {}
    if getattr(args, "fact_evidence", False):
        out["fact_evidence"] = True
    if getattr(args, "reconstruct", None):
        out["reconstruct"] = args.reconstruct
    return out
