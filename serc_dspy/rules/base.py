"""The rulebook's frame: a `Rule` names one deterministic decision, the registry lists every
rule, and a `RuleSet` says which rules are on for a run.

Why rules at all: a 1.5B model's verdicts, fixes and rewrites are held to their evidence and
their input by deterministic checks. Each check that can change a verdict, a fact, a fix or the
text is a rule with a stable id, so a user can see which rule changed their text (a `Ruling` in
the trace), switch it off (`SERC(rules={"quote.overrule": False})`, `--rule -quote.overrule`),
and measure what it is worth (`serc bench ... --ablate quote.overrule`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from serc_dspy.errors import UserError


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


def check_ids(ids: Iterable[str]) -> None:
    unknown = sorted(set(ids) - set(RULES))
    if unknown:
        raise UnknownRule(f"unknown rule {unknown[0]!r}; valid rules: {', '.join(RULES)}")


_ENGLISH = frozenset("""the a an and of to is was were are be been he she it they his her their
its that this with for on at by from as not no which who also had has have""".split())
_OTHER = frozenset("""der die das und ist sind war wurde wurden nicht sie er ein eine einer den
dem des zu mit von für auf bei aus nach le les et est une du il elle au aux sont était été pour
dans par qui el los las y es por con para del una fue su sus lo il della che di è sono het een
van zijn werd niet met voor och är var som och ett att på av""".split())
"""Function words of German, French, Spanish, Italian, Dutch and Swedish that English prose does
not use (names aside)."""
_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_LATIN_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
ASCII_LETTER_SHARE = 0.85
MIN_OTHER_WORDS = 2


def language_of(text: str) -> str:
    """`en` when a text reads as English, else `other` (a documented heuristic, no model): it
    is `other` when fewer than `ASCII_LETTER_SHARE` of its letters are ASCII (Chinese,
    Russian, Greek...), or when it has more function words of other European languages than
    English ones (and at least `MIN_OTHER_WORDS`). A short English sentence without function
    words, or a text with no letters, counts as English."""
    letters = _LETTER.findall(text or "")
    if not letters:
        return "en"
    if sum(ch.isascii() for ch in letters) / len(letters) < ASCII_LETTER_SHARE:
        return "other"
    found = _LATIN_WORD.findall((text or "").lower())
    english = sum(w in _ENGLISH for w in found)
    other = sum(w in _OTHER for w in found)
    return "other" if other >= MIN_OTHER_WORDS and other > english else "en"


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
