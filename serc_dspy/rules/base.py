"""The rulebook's frame: a `Rule` names one deterministic decision, the registry lists every
rule, and a `RuleSet` says which rules are on for a run.

Why rules at all: a 1.5B model's verdicts, fixes and rewrites are held to their evidence and
their input by deterministic checks. Each check that can change a verdict, a fact, a fix or the
text is a rule with a stable id, so a user can see which rule changed their text (a `Ruling` in
the trace), switch it off (`SERC(rules={"quote.overrule": False})`, `--rule -quote.overrule`),
and measure what it is worth (`serc bench ... --ablate quote.overrule`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from serc_dspy.core.errors import UserError


@dataclass(frozen=True)
class Rule:
    """One deterministic decision: what it decides, why it exists, and its thresholds."""

    id: str
    decides: str
    why: str
    english_only: bool = False
    """It reads English words (function words, negations, pronouns, month names): it does not
    fire on a draft in another language."""
    default: bool = True
    thresholds: Mapping[str, float] = field(default_factory=dict)
    found_on: str = ""
    """The case it was found on, when one case motivated it (a bio, a trace)."""
    acts_without_ruling: bool = False
    """It can change a run (its calls) without leaving a ruling, so an ablation decodes every
    answer again rather than carrying over those it never fired on."""

    @property
    def concern(self) -> str:
        return self.id.split(".", 1)[0]


RULES: dict[str, Rule] = {}
"""Every rule, by id, in registration order (one module per concern registers its own)."""


def register(*rules: Rule) -> None:
    for rule in rules:
        if rule.id in RULES:
            raise ValueError(f"rule {rule.id!r} is registered twice")
        RULES[rule.id] = rule


class UnknownRule(UserError):
    """A rule id that no rule has; the message lists the valid ids."""


RuleSwitch = Callable[[str], bool]
"""Whether a rule is on (`Run.on`, `RuleSet.on`): what rule functions take to ask."""


def check_ids(ids: Iterable[str]) -> None:
    unknown = sorted(set(ids) - set(RULES))
    if unknown:
        raise UnknownRule(f"unknown rule {unknown[0]!r}; valid rules: {', '.join(RULES)}")


class RuleSet:
    """Which rules are on: each rule's default, overridden by `switches` ({id: bool}); an
    English-only rule is off for a draft that is not English (`for_language`)."""

    def __init__(self, switches: Mapping[str, bool] | None = None):
        switches = dict(switches or {})
        check_ids(switches)
        bad = [k for k, v in switches.items() if not isinstance(v, bool)]
        if bad:
            raise UserError(f"rules[{bad[0]!r}] must be True or False, got "
                            f"{switches[bad[0]]!r}")
        self.switches = switches
        self.language = "en"

    def for_language(self, language: str) -> RuleSet:
        """A copy for one run's draft language."""
        copy = RuleSet(self.switches)
        copy.language = language
        return copy

    def on(self, rule_id: str) -> bool:
        rule = RULES[rule_id]  # a typo in the code is a KeyError, never a silent "off"
        if rule.english_only and self.language != "en":
            return False
        return self.switches.get(rule_id, rule.default)

    def off(self) -> list[str]:
        """The rules that are off for this run, in registry order."""
        return [rule_id for rule_id in RULES if not self.on(rule_id)]


def parse_switches(specs: Iterable[str]) -> dict[str, bool]:
    """`["-quote.overrule", "+fix.swap_back"]` (the CLI's `--rule`) as switches."""
    switches: dict[str, bool] = {}
    for spec in specs:
        spec = spec.strip()
        if not spec or spec[0] not in "+-":
            raise UserError(f"--rule takes +ID or -ID (switch a rule on or off), got {spec!r}")
        switches[spec[1:]] = spec[0] == "+"
    check_ids(switches)
    return switches
