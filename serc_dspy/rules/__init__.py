"""The rulebook: every deterministic rule that changes a verdict, a fact, a fix or the text,
by concern (`hygiene`, `quote`, `fix`, `rewrite` / `polish` / `decode`, `firewall`, `draft`).

Each rule has a stable id, a one-line statement of what it decides, why it exists, and its
named thresholds (`RULES`). Programs call rules by name and record each firing as a `Ruling`
in the trace; `RuleSet` switches rules off (`SERC(rules={"quote.overrule": False})`), and an
English-only rule does not fire on a draft in another language (`language_of`).
"""

from serc_dspy.rules import (  # noqa: F401 (each module registers its rules)
    agree,
    asked,
    claims,
    dates,
    draft,
    fixes,
    frames,
    guards,
    hygiene,
    names,
    quotes,
    reading,
    rivals,
    shared,
    shown,
    slots,
    titles,
    yesno,
)
from serc_dspy.rules.base import (
    RULES,
    Rule,
    RuleSet,
    UnknownRule,
    check_ids,
    parse_switches,
)
from serc_dspy.rules.language import language_of

__all__ = ["RULES", "Rule", "RuleSet", "UnknownRule", "check_ids", "language_of",
           "parse_switches", "rule_table"]


def rule_table() -> str:
    """Every rule as a Markdown table row: id, what it decides, default, English-only."""
    lines = ["| rule | decides | default | English only |", "|---|---|---|---|"]
    for rule in RULES.values():
        lines.append(f"| `{rule.id}` | {rule.decides} | {'on' if rule.default else 'off'} | "
                     f"{'yes' if rule.english_only else 'no'} |")
    return "\n".join(lines) + "\n"
