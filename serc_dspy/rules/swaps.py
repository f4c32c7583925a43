"""The swap is the edit: a correction replaces the slot's span in the draft's sentence and
nothing else but the article in front of it (`choose.swap`, `rewrite.in_place`), and a
character diff proves it (`only_span_changed`). A value that opens on the very words standing
before the span ("U.S. Highway 60" for the "70" of "U.S. Highway 70") is swapped in without
them, so no swap writes its frame twice ("U.S. Highway U.S. Highway 60")."""

from __future__ import annotations

import re

from serc_dspy.rules.slots import _count


def unrepeated(head: str, new: str) -> str:
    """`new` without its opening words where the text before the span (`head`) ends on them
    ("The historic U.S. Highway " and "U.S. Highway 60": "60"); `new` itself where it does
    not, or where nothing of it would be left."""
    before, words = head.split(), new.split()
    for k in range(len(words) - 1, 0, -1):
        if [w.lower() for w in before[-k:]] == [w.lower() for w in words[:k]]:
            return re.sub(rf"^\s*(?:\S+\s+){{{k}}}", "", new)
    return new


def swap(text: str, old: str, new: str) -> str | None:
    """`text` with the one whole-word `old` replaced by `new`, and the article before it agreed
    ("a" / "an"); a value that opens on its own article after the sentence's article ("The
    Golden Goose" to "The Soldier's Tale") keeps the sentence's alone ("The The ..." is no
    swap a ruling explains); None unless `old` stands exactly once."""
    if _count(text, old) != 1:
        return None
    start = re.search(rf"(?<!\w){re.escape(old)}(?!\w)", text).start()
    before, own = re.search(r"\b(the|an?)\s+$", text[:start], re.IGNORECASE), \
        re.match(r"(the|an?)\s+(?=\S)", new, re.IGNORECASE)
    if before and own and before.group(1).lower() != "the" and own.group(1).lower() == "the":
        text = text[:before.start()] + text[start:]  # "a The Hague": "The Hague"
    elif before and own:
        new = new[own.end():]
    new = unrepeated(text[:start], new)
    fixed = re.sub(rf"(?<!\w){re.escape(old)}(?!\w)", lambda _: new, text, count=1)
    at = fixed.find(new)
    article = re.search(r"\b(an?|An?)\s+$", fixed[:at])
    if article:
        want = "an" if new[:1].lower() in "aeiou" else "a"
        if article.group(1).lower() != want:
            want = want.capitalize() if article.group(1)[0].isupper() else want
            fixed = fixed[:article.start(1)] + want + fixed[article.end(1):]
    return fixed


def only_span_changed(before: str, after: str, old: str, new: str) -> bool:
    """The character diff of a swap: `after` is `before` with `old` replaced by `new` and, at
    most, the article in front of it agreed, or one of two articles met at the span dropped
    ("The Golden Goose" to "The Soldier's Tale"); nothing else."""
    if _count(before, old) != 1:
        return False
    a = before.find(old) if old in before else re.search(
        rf"(?<!\w){re.escape(old)}(?!\w)", before).start()
    head, tail = before[:a], before[a + len(old):]
    if not after.endswith(tail):
        return False
    indefinite = re.compile(r"\b(?:an?|An?)\s+$")
    for value in dict.fromkeys((new, re.sub(r"^(?:the|an?)\s+(?=\S)", "", new, flags=re.I),
                                unrepeated(head, new))):
        if not after[:len(after) - len(tail)].endswith(value):
            continue
        new_head = after[:len(after) - len(tail) - len(value)]
        dropped = indefinite.sub("", head) if re.match(r"the\s", value, re.I) else head
        if new_head in (head, dropped) or \
                indefinite.sub("a ", new_head) == indefinite.sub("a ", head):
            return True
    return False
