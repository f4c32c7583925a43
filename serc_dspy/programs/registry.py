"""Method names -> programs, so the CLI and the experiment runner build any method the same way.

A new method is one new module plus one line in `METHODS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serc_dspy.programs.base import InputError, TracedProgram
from serc_dspy.programs.baselines import RARR, CoVe, CoVeRAG, InitialAnswer, ReEx
from serc_dspy.programs.serc import SERC
from serc_dspy.programs.serc.options import SERC_OPTION_NAMES

SERC_ONLY_OPTIONS = SERC_OPTION_NAMES
"""SERC's own options (the fields of `SercOptions`): the baselines drop them."""


@dataclass(frozen=True)
class Method:
    name: str
    program: Callable[..., TracedProgram]
    description: str
    preset: dict[str, Any] = field(default_factory=dict)
    needs_retriever: bool = True
    serc_options: bool = False
    """Whether the method takes SERC's own options (`SERC_ONLY_OPTIONS`: a compiled state, rules,
    the firewall...); the others drop them."""

    @property
    def accepts_compiled(self) -> bool:
        """Whether a compiled state (`compiled=`, `--compiled`) applies to this method."""
        return self.accepts("compiled")

    def accepts(self, option: str) -> bool:
        """Whether `build_method` passes `option` to this method's program."""
        return self.serc_options or option not in SERC_ONLY_OPTIONS


METHODS: dict[str, Method] = {m.name: m for m in [
    Method("initial", InitialAnswer, "the uncorrected initial answer", needs_retriever=False),
    Method("serc", SERC, "SERC: sparse check nodes (<=5 facts), firewall, retrieval",
           serc_options=True),
    Method("serc_dense", SERC, "High-Density: one check node per fact", {"density": "atomic"},
           serc_options=True),
    Method("serc_lean", SERC, "SERC with the fewest calls: the facts are the search query and "
           "each check node is judged in one call on its passages (no query or summary call)",
           {"queries": "facts", "evidence": "passages", "verdicts": "check"}, serc_options=True),
    Method("serc_no_rag", SERC, "SERC w/o RAG: evidence from the LM's own knowledge",
           {"use_retrieval": False}, needs_retriever=False, serc_options=True),
    Method("serc_no_firewall", SERC, "SERC w/o the entity firewall", {"firewall": False},
           serc_options=True),
    Method("cove", CoVe, "Chain-of-Verification without retrieval", needs_retriever=False),
    Method("cove_rag", CoVeRAG, "CoVe with questions answered from retrieved context"),
    Method("rarr", RARR, "RARR: research questions, agreement checks, minimal edits"),
    Method("reex", ReEx, "Re-Ex: sub-questions, error explanation, revision"),
]}


def method_names() -> list[str]:
    return list(METHODS)


def get_method(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise InputError(
            f"unknown method {name!r}; valid methods: {', '.join(METHODS)}"
        ) from None


def build_method(name: str, retriever=None, **options: Any) -> TracedProgram:
    """Build a method's program; SERC-only options are dropped for the baselines."""
    method = get_method(name)
    options = {k: v for k, v in options.items() if method.accepts(k)}
    program = method.program(retriever, **{**options, **method.preset})
    program.method_name = name
    return program
