"""SERC's own options, declared once: each field's type, default, meaning and CLI flag.

`SERC(retriever, options=SercOptions(...), **overrides)` reads them; the stages share them
through `Settings`; the method registry's SERC-only list is these fields, so an option that
does not apply to a baseline is refused from this one declaration. The options every method
takes (retrieval depth, workers, LMs, progress, the deadline) are `TracedProgram`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from serc_dspy.programs.base import InputError

Density = Literal["sentence", "atomic"]
QueryMode = Literal["lm", "facts"]
EvidenceMode = Literal["summary", "passages"]
VerdictMode = Literal["check", "fact", "choose"]
Reconstruction = Literal["rebuild", "minimal"]


def option(value: Any, doc: str, /, *, flag: str | None = None, cli_help: str | None = None,
           **argparse: Any) -> Any:
    """A field with its meaning and, where the CLI has one, its flag: `cli_help` is the help
    line when it says more than `doc` (the CLI's own defaults), and `argparse` any keyword the
    flag needs beyond what the field's type gives it (`commands/options.py`)."""
    extra = {"flag": flag, "help": cli_help or doc, "argparse": argparse} if flag else None
    return Field(value, description=doc, json_schema_extra=extra)


class SercOptions(BaseModel):
    """What SERC does, beside which LM and retriever it uses. Every field is optional; the
    defaults are the paper's (the offline model's CPU defaults are the CLI's, see
    `backends.spec.run_defaults`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    firewall: bool = option(True, "run the entity firewall (phase 1, steps 3-5)",
                            flag="--no-firewall", cli_help="skip the entity firewall")
    use_retrieval: bool = option(
        True, "False takes every piece of evidence from the LM's own knowledge and never calls "
        "the retriever (the paper's \"w/o RAG\" ablation)", flag="--no-retrieval",
        cli_help="verify against the LM's own knowledge; no retriever needed")
    density: Density = option(
        "sentence", "\"sentence\" groups a sentence's facts into check nodes of at most "
        "`max_facts_per_check`; \"atomic\" gives each fact its own check (High-Density)",
        flag="--density", cli_help="'atomic' = one check node per fact (High-Density)")
    max_facts_per_check: int = option(5, "the paper's bound on a check node's degree",
                                      flag="--max-facts-per-check", type=int,
                                      cli_help="SERC methods: facts per check node (default 5)")
    match_cutoff: float = option(0.75, "similarity a returned `original` needs to be mapped "
                                       "to a fact")
    polish_temperature: float = option(0.1, "the paper polishes at 0.1")
    queries: QueryMode = option(
        "lm", "\"lm\" (the paper) writes each check node's search query with the LM; \"facts\" "
        "searches with the subject and the facts themselves (no call; suits BM25 corpora)",
        flag="--queries", cli_help="check-node search queries: 'lm' writes them (the paper), "
        "'facts' searches with the facts (default for the offline models)")
    evidence: EvidenceMode = option(
        "summary", "\"summary\" (the paper) has the LM summarise the passages before the "
        "verdicts; \"passages\" judges and corrects against the retrieved passages directly",
        flag="--evidence", cli_help="'summary': the LM summarises passages into evidence (the "
        "paper); 'passages': verdicts read the passages (offline models' default)")
    verdicts: VerdictMode = option(
        "check", "\"check\" judges a check node's facts in one call; \"fact\" each fact in its "
        "own call that first quotes its evidence sentence; \"choose\" masks each detail and has "
        "the LM choose, in two option orders, among the values the evidence offers "
        "(`programs/serc/choice.py`)", flag="--verdicts",
        cli_help="'check': one verdict call per check node; 'fact': one call per fact that "
        "quotes its evidence; 'choose': each detail of a fact chosen, in two option orders, "
        "among the values the evidence offers, and swapped in place when both choose the same "
        "other value")
    max_sentences: int = option(100, "sentences past it are kept verbatim and unverified")
    max_facts_per_sentence: int = option(12, "facts past it are not checked (logged)")
    compiled: str | Path | None = option(
        "auto", "\"auto\" applies, on the first run, the packaged state of the offline model "
        "the run uses; None keeps the frozen paper prompts; a `.json` path or a packaged NAME "
        "is applied at construction", flag="--compiled", metavar="PATH_OR_NAME",
        cli_help="SERC methods: apply a compiled state saved by `serc compile` (a .json path, "
        "or a packaged name such as verify_smollm2); default: the model's own packaged state, "
        "if it ships one")
    rules: dict[str, bool] | None = option(
        None, "switch named rules on or off, e.g. {\"quote.overrule\": False} "
        "(`serc_dspy.rules.RULES`)", flag="--rule", action="append", default=[],
        metavar="+ID|-ID", cli_help="switch a rule on (+ID) or off (-ID), e.g. "
        "-quote.overrule; repeatable (SERC methods; see the rule table in docs/rules.md)")
    fact_evidence: bool = option(
        False, "besides the check node's query, search each fact's own text too (no LM call) "
        "and show each verdict its own fact's passages first", flag="--fact-evidence",
        cli_help="SERC methods: search each fact's own text too and show each verdict its own "
        "passages first")
    evidence_window: int | None = option(
        None, "with evidence=\"passages\", cut each passage a check node reads to this many "
        "sentences around the one about each of its facts", flag="--evidence-window",
        metavar="SENTENCES", cli_help="SERC methods reading passages: cut each passage a check "
        "node reads to this many sentences around the one about each of its facts")
    reconstruct: Reconstruction = option(
        "rebuild", "\"rebuild\" (the paper) rewrites a changed sentence from its facts; "
        "\"minimal\" makes each correction in place in the draft's sentence",
        flag="--reconstruct", cli_help="SERC methods: rebuild changed sentences from their "
        "facts (the paper) or make each correction in place (minimal); default: the model's "
        "own (minimal for qwen1.5b), else rebuild")
    verifier: Any = option(
        None, "a claim verifier (`serc_dspy.verifiers`) whose verdict is one of the signals "
        "`agree.contradiction` counts before a fact is changed", flag="--verifier",
        metavar="KIND=MODEL", cli_help="SERC methods: a claim-versus-evidence classifier as one "
        "more signal before a fact is changed (nli=, minicheck=, hhem=, binary=, seq2seq= a "
        "local model directory or a hub id already cached); needs the hf extra")

    @field_validator("max_facts_per_check")
    @classmethod
    def _degree(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"max_facts_per_check must be at least 1, got {value}")
        return value

    @field_validator("match_cutoff")
    @classmethod
    def _cutoff(cls, value: float) -> float:
        if not 0.0 < value <= 1.0:
            raise ValueError(f"match_cutoff must be in (0, 1], got {value}")
        return value

    @field_validator("max_sentences", "max_facts_per_sentence")
    @classmethod
    def _bounds(cls, value: int) -> int:
        if value < 1:
            raise ValueError("max_sentences and max_facts_per_sentence must be at least 1")
        return value

    @field_validator("evidence_window")
    @classmethod
    def _window(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"evidence_window must be at least 1 sentence, got {value}")
        return value

    @field_validator("verifier")
    @classmethod
    def _verifier(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "averify", None)):
            raise ValueError("verifier must have averify(claims, evidence) (see "
                             "serc_dspy.verifiers.ClassifierVerifier)")
        return value

    @model_validator(mode="after")
    def _applies(self) -> SercOptions:
        """A bound that cannot take effect is refused, not ignored (docs/cli.md)."""
        if self.evidence_window is not None and not (self.evidence == "passages"
                                                     and self.use_retrieval):
            raise ValueError("evidence_window cuts retrieved passages: it needs "
                             "evidence='passages' and retrieval (--evidence passages, without "
                             "--no-retrieval)")
        if self.fact_evidence and not self.use_retrieval:
            raise ValueError("fact_evidence searches each fact's own text: it needs retrieval "
                             "(drop --no-retrieval or --fact-evidence)")
        return self

    @classmethod
    def build(cls, options: SercOptions | None, overrides: dict[str, Any]) -> SercOptions:
        """`options` with `overrides` applied, validated; a bad value is an `InputError` with
        one line naming it."""
        try:
            return cls.model_validate({**(dict(options) if options else {}),
                                       **overrides})
        except ValidationError as exc:
            error = exc.errors()[0]
            cause = (error.get("ctx") or {}).get("error")
            if cause is not None:
                raise InputError(str(cause)) from None
            name = ".".join(str(part) for part in error.get("loc", ()))
            got = error.get("input")
            raise InputError(f"{name}: {error['msg']}, got {got!r}" if name else
                             error["msg"]) from None

    @property
    def check_degree(self) -> int:
        """Facts per check node: one at "atomic" density."""
        return 1 if self.density == "atomic" else self.max_facts_per_check


SERC_OPTION_NAMES = frozenset(SercOptions.model_fields)
"""The options only SERC takes: a baseline refuses (`Method.accepts`) or drops them."""
