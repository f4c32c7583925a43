"""Argument types shared by every `serc` subcommand, so a bad number fails the same way.

The shared run options themselves are declared once, in `serc_dspy.config`."""

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
