"""Deterministic hygiene for extracted facts: statements only, and only what the sentence said.

A 1.5B fact extractor was seen adding facts from its own memory ("She was born in Warsaw" from
a sentence about polonium), which were then verified SUPPORTED and written into the answer.
A variable node must be a reading of its sentence, so every fact is checked here before it
enters the graph:

- placeholders, bare names and fragments (fewer than three words, counted by `text.words`,
  where each CJK character is a word) are dropped;
- a fact that pastes several sentences back is split into them;
- a fact is *grounded* only if each of its numbers and capitalised names, and most of its
  content words, occur in the sentence or the subject (a word counts when it shares its first
  five letters with one there, so "married" matches "marry" and "discovered" "discovery").

Dropped facts are returned with a reason so the caller can log them; nothing is dropped
silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from serc_dspy.text import is_wide, normalise, similarity, split_sentences, words

MIN_FACT_WORDS = 3
# Share of a fact's content words that may be missing from its sentence (rewording slack).
MAX_UNGROUNDED_SHARE = 0.25
# Content words a claim needs before one swapped word can witness a contradiction.
MIN_SWAP_CONTEXT = 3
# A "quote" this close to its claim, yet absent from the evidence, is the claim echoed back.
ECHO_SIMILARITY = 0.9

_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)])\s+")
_PLACEHOLDER = re.compile(r"^(?:atomic\s+)?(?:fact|statement|claim)s?\s*\d*$|^n/?a$|^none$|"
                          r"^\.+$|^unknown$", re.IGNORECASE)
# Function words and the verbs a paraphrase adds; they carry no claim of their own.
_STOP = set("""
a an the and or but nor of in on at to for from by with without as into onto over under about
after before during since until between among through per via than then also too very so such
is are was were be been being am has have had having do does did done will would shall should
can could may might must not no yes it its it's this that these those there here their them
they he him his she her hers we us our you your i me my mine who whom whose which what when
where why how all any both each few more most other some own same only just one ones
later earlier first became become becomes becoming known named called made make makes
""".split())


def _words(text: str) -> list[str]:
    """Words and numbers (`text.words`: each CJK character is a word); a possessive is its
    name ("Curie's" -> "Curie")."""
    return [w[:-2] if w[-2:].lower() in ("'s", "’s") else w for w in words(text)]


def _is_content(word: str) -> bool:
    """Long enough to carry meaning: 3+ letters, a number, or one CJK character (a word)."""
    return len(word) > 2 or _is_number(word) or is_wide(word)


def _stem(word: str) -> str:
    return word.lower()[:5]


def _is_number(word: str) -> bool:
    return word[0].isdigit()


def _content_words(text: str, subject: str = "") -> list[str]:
    """A text's content words and numbers: no function words, none of the subject's own name
    words, no word under 3 letters."""
    skip = {w.lower() for w in _words(subject)}
    return [w for w in _words(text) if w.lower() not in _STOP and w.lower() not in skip
            and _is_content(w)]


def _content_stems(text: str, subject: str = "") -> set[str]:
    return {_stem(w) for w in _content_words(text, subject)}


def split_fact(text: str) -> list[str]:
    """Clean one extracted item: strip list marks and quotes; split pasted multi-sentence text."""
    text = _LIST_MARK.sub("", " ".join(str(text or "").split())).strip(" \"'`")
    if not text:
        return []
    if not _SENTENCE_BREAK.search(text):
        return [text]
    parts = split_sentences(text)
    return [p.strip() for p in parts if p.strip()] if len(parts) > 1 else [text]


def not_a_statement(fact: str) -> str | None:
    """Why `fact` is not a statement (a placeholder, a bare name, a fragment), or None."""
    if _PLACEHOLDER.match(fact.strip(" .")):
        return "a placeholder, not a fact"
    words = _words(fact)
    if len(words) < MIN_FACT_WORDS:
        return f"a fragment of {len(words)} word(s), not a statement"
    if all(w[0].isupper() or _is_number(w) for w in words):
        return "a bare name, not a statement"
    return None


def ungrounded(fact: str, sentence: str, subject: str, *, words: bool = True) -> str | None:
    """Why `fact` says something its sentence (or the subject) does not, or None if grounded.

    `words=False` checks numbers and names only (a rewording may change the other words).
    """
    source = _words(sentence) + _words(subject)
    exact = {w.lower() for w in source}
    stems = {_stem(w) for w in source if not _is_number(w)}
    numbers = {w for w in source if _is_number(w)}

    def known(word: str) -> bool:
        return word.lower() in exact or (len(word) >= 5 and _stem(word) in stems)

    missing_numbers = [w for w in _words(fact) if _is_number(w) and w not in numbers]
    if missing_numbers:
        return f"number(s) {', '.join(missing_numbers)} not in the sentence"
    content = [w for w in _words(fact) if not _is_number(w) and w.lower() not in _STOP
               and _is_content(w)]
    names = [w for w in content if w[0].isupper() and not known(w)]
    if names:
        return f"name(s) {', '.join(names)} not in the sentence"
    missing = [w for w in content if not known(w)]
    if words and content and len(missing) > max(1, MAX_UNGROUNDED_SHARE * len(content)):
        return f"word(s) {', '.join(missing)} not in the sentence"
    return None


def clean_facts(facts, sentence: str, subject: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The facts to keep (deduplicated, in order) and the dropped ones with their reasons."""
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    seen: set[str] = set()
    for item in facts or []:
        for fact in split_fact(item):
            key = fact.lower().rstrip(".")
            if key in seen:
                continue
            seen.add(key)
            reason = not_a_statement(fact) or ungrounded(fact, sentence, subject)
            if reason:
                dropped.append((fact, reason))
            else:
                kept.append(fact)
    return kept, dropped


# A quote "is about the same event" as a claim when this share of one side's content words
# occurs in the other.
SAME_EVENT_SHARE = 0.5
MAX_EXTRA_NAMES = 2
"""Names a swap's quote may carry beyond those it swaps in (a country after a city)."""


_MONTHS = frozenset("""january february march april may june july august september october
november december jan feb mar apr jun jul aug sep sept oct nov dec""".split())


def _key_terms(words: list[str], skip: set[str]) -> tuple[set[str], set[str]]:
    """Numbers, and capitalised words that are not sentence starts or function words."""
    numbers, names = set(), set()
    for position, word in enumerate(words):
        if _is_number(word):
            numbers.add(word)
        elif (word[0].isupper() and word.lower() not in _STOP and position > 0
              and word.lower() not in skip and word.lower() not in _MONTHS):
            names.add(word.lower())
    return numbers, names


@dataclass(frozen=True)
class Substitution:
    """What a cited quote says instead of the claim; `old`/`new` are set when exactly one
    detail was swapped, so the claim can be corrected by swapping it back."""

    reason: str
    old: str | None = None
    new: str | None = None
    contradicted: tuple[str, ...] = ()
    """The claim's details the quote gives other values for (all of them, when several)."""

    def kept_by(self, fix: str) -> bool:
        """Whether a fix still states every contradicted detail: then it fixed nothing."""
        return bool(self.contradicted) and all(
            re.search(rf"(?<!\w){re.escape(term)}(?!\w)", fix, re.IGNORECASE)
            for term in self.contradicted)

    def apply(self, claim: str) -> str | None:
        """The claim with `old` replaced by `new` (whole words), or None if not applicable."""
        if not (self.old and self.new):
            return None
        fixed, count = re.subn(rf"(?<!\w){re.escape(self.old)}(?!\w)", self.new, claim)
        return fixed if count else None


def _original_case(term: str, words: list[str]) -> str:
    return next((w for w in words if w.lower() == term), term)


def _event_stems(text: str, subject: str) -> set[str]:
    """The content stems that say what happened: no numbers and no month names, which two
    events on the same day share ("born on 26 October" and "retired on 26 October")."""
    return {_stem(w) for w in _content_words(text, subject)
            if not _is_number(w) and w.lower().rstrip(".") not in _MONTHS}


def _same_event(claim: str, quote: str, subject: str, *, overrule: bool = False) -> bool:
    """Half the event words of the claim, or of the quote, are shared. To overrule a verdict
    the claim's side must be: half its event words, and two of them when it has two ("radium"
    alone does not make "isolated radium in 1910" the event of "discovered radium in 1898")."""
    c_words, q_words = _event_stems(claim, subject), _event_stems(quote, subject)
    if overrule:  # the names being swapped are the detail, not the event: set them aside
        skip = {w.lower() for w in _words(subject)}
        c_names = {_stem(n) for n in _key_terms(_words(claim), skip)[1]}
        q_names = {_stem(n) for n in _key_terms(_words(quote), skip)[1]}
        c_words, q_words = c_words - (c_names - q_names), q_words - (q_names - c_names)
    if not c_words or not q_words:
        return False
    shared = len(c_words & q_words)
    if overrule:
        return shared / len(c_words) >= SAME_EVENT_SHARE and shared >= min(2, len(c_words))
    return max(shared / len(c_words), shared / len(q_words)) >= SAME_EVENT_SHARE


def _quoted_sentences(quote: str) -> list[str]:
    """A verifier asked for one sentence often copies a whole passage; each of its sentences
    is read on its own, or the names and dates of the others would blur the one that counts."""
    return split_sentences(quote) or [quote]


def _first_witness(found: list[Substitution | None]) -> Substitution | None:
    """A swap of one detail for one (which can be undone) before a looser one."""
    found_ = [w for w in found if w is not None]
    return next((w for w in found_ if w.old and w.new), found_[0] if found_ else None)


def substituted_detail(claim: str, quote: str, subject: str, *, same_event: bool = True,
                       overrule: bool = False) -> Substitution | None:
    """The detail a cited evidence sentence gives another value for, or None.

    Each sentence of the quote is read on its own (see `_in_sentence`); `overrule=True`, for
    a claim the verifier did not contradict, asks for more shared event words.
    """
    return _first_witness([_in_sentence(claim, sentence, subject, same_event=same_event,
                                        overrule=overrule)
                           for sentence in _quoted_sentences(quote)])


def _in_sentence(claim: str, quote: str, subject: str, *, same_event: bool = True,
                 overrule: bool = False) -> Substitution | None:
    """The detail a cited evidence sentence gives another value for, or None.

    Small verifiers quote the right sentence and still answer SUPPORTED ("born in Kraków"
    against "born ... in Warsaw"). When the quote is about the same event (half its content
    words shared, and the same date if the claim has one) and both sides carry a number, or a
    name, that the other lacks, the quote substitutes that detail: the claim is contradicted.
    `same_event=False` skips the same-event test, for a claim already judged CONTRADICTED
    whose swapped detail is wanted. Numbers pair with numbers of as many digits (a year with
    a year, not with the day of the month).
    """
    claim_words, quote_words = _words(claim), _words(quote)
    skip = {w.lower() for w in _words(subject)}
    if same_event and not _same_event(claim, quote, subject, overrule=overrule):
        return None
    c_numbers, c_names = _key_terms(claim_words, skip)
    q_numbers, q_names = _key_terms(quote_words, skip)
    q_name_stems = {_stem(n) for n in q_names}
    c_name_stems = {_stem(n) for n in c_names}
    pairs = []
    claim_numbers = c_numbers - q_numbers
    shapes = {len(n) for n in claim_numbers}
    quote_numbers = {n for n in q_numbers - c_numbers if len(n) in shapes}
    if claim_numbers and quote_numbers:
        pairs = [(claim_numbers, quote_numbers)]
    else:
        claim_only = {n for n in c_names if _stem(n) not in q_name_stems}
        quote_only = {n for n in q_names if _stem(n) not in c_name_stems}
        anchored = (not same_event or not c_numbers  # a dated claim needs a dated quote
                    or bool(c_numbers & q_numbers))
        # A swap replaces a name or two; a quote with many names the claim lacks is about
        # something else ("appeared in Masti (2004)" against a 2004 music video's credits).
        if claim_only and quote_only and anchored and \
                len(quote_only) <= len(claim_only) + MAX_EXTRA_NAMES:
            pairs = [(claim_only, quote_only)]
    if not pairs:
        return None
    olds, news = pairs[0]
    reason = (f"the evidence says {', '.join(sorted(news))} where the claim says "
              f"{', '.join(sorted(olds))}")
    contradicted = tuple(sorted(_original_case(term, claim_words) for term in olds))
    if len(olds) == 1 and len(news) == 1:
        return Substitution(reason, _original_case(next(iter(olds)), claim_words),
                            _original_case(next(iter(news)), quote_words), contradicted)
    return Substitution(reason, contradicted=contradicted)


def swapped_word(claim: str, quote: str, subject: str) -> Substitution | None:
    """The one content word of a claim that a quote about the same event says differently.

    Role and field swaps are lower-case ("a child painter" against "a child actor"), so
    `substituted_detail`, which pairs numbers and names, cannot see them. A quote that repeats
    every content word of the claim but one (the claim having at least three) is about the
    same event and replaces that word. The replacement is not located, so the substitution
    only witnesses the contradiction; the corrector finds the new word in the quote.
    """
    claim_stems = _event_stems(claim, subject)
    if len(claim_stems) < MIN_SWAP_CONTEXT:
        return None
    for sentence in _quoted_sentences(quote):
        missing = claim_stems - _event_stems(sentence, subject)
        old = next((w for w in _words(claim) if _stem(w) in missing), None)
        if len(missing) == 1 and old:
            return Substitution(f"the evidence repeats the claim except {old!r}",
                                contradicted=(old,))
    return None


def contradiction_witness(claim: str, quote: str, subject: str) -> Substitution | None:
    """What in a quote, taken from the evidence, shows that a claim is wrong: a number or name
    it gives another value for in the same event, or the one content word it replaces. None
    means the quote shows no conflict, and a CONTRADICTED verdict citing it rests on the
    verifier's word alone."""
    witness = substituted_detail(claim, quote, subject)
    if witness is None:
        # A quote that shares only some of the event's words ("died in 1944 of anaemia" and
        # "died on 4 July 1934 at a sanatorium") still witnesses one detail swapped for one.
        for sentence in _quoted_sentences(quote):
            if not _event_stems(claim, subject) & _event_stems(sentence, subject):
                continue
            loose = _in_sentence(claim, sentence, subject, same_event=False)
            if loose is not None and loose.old and loose.new:
                witness = loose
                break
    return witness or swapped_word(claim, quote, subject)


_NEGATION = re.compile(r"\b(?:not|never|no|neither|nor|without|none|nothing|nobody|"
                       r"unsuccessful(?:ly)?|denied|refused|failed)\b|n['’]t\b", re.IGNORECASE)


def _negations(text: str) -> set[str]:
    return {m.lower() for m in _NEGATION.findall(text or "")}


def rewords(original: str, fixed: str, subject: str) -> bool:
    """Whether a "fix" says what its fact said: the same content words and numbers (only
    function words moved or changed) and the same negations. Small correctors answer
    "born in 1923" with "born on 1923", or drop an "also"; that changes no fact."""
    before, after = _content_stems(original, subject), _content_stems(fixed, subject)
    return bool(before) and before == after and _negations(original) == _negations(fixed)


def loses_content(original: str, fixed: str, kept_aside: str | None = None,
                  share: float = 0.3) -> bool:
    """True when a fix drops more than `share` of its fact's content words (the swapped detail
    aside): a correction must change the wrong detail, not rewrite the fact away."""
    wanted = _content_stems(original) - _content_stems(kept_aside or "")
    return bool(wanted) and len(wanted - _content_stems(fixed)) > share * len(wanted)


_CLAUSE = re.compile(r",\s+and\s+(she|he|they|it|her|his|their|its)\s+(?=\S+\s+\S+)",
                     re.IGNORECASE)
PRONOUN_CLASSES: dict[str, frozenset[str]] = {
    "she": frozenset({"she", "her", "hers", "herself"}),
    "he": frozenset({"he", "him", "his", "himself"}),
    "they": frozenset({"they", "them", "their", "theirs", "themselves"}),
    "it": frozenset({"it", "its", "itself"}),
}
_PRONOUN = re.compile(r"\b(" + "|".join(sorted({p for c in PRONOUN_CLASSES.values() for p in c},
                                               key=len, reverse=True)) + r")\b", re.IGNORECASE)


def subject_pronouns(text: str) -> frozenset[str]:
    """The pronouns an answer uses for its subject: the class (she / he / they / it) it uses
    most. Empty when no class leads (no pronouns, or a tie): then no pronoun is taken to be the
    subject."""
    counts = {name: 0 for name in PRONOUN_CLASSES}
    for match in _PRONOUN.findall(text or ""):
        for name, members in PRONOUN_CLASSES.items():
            if match.lower() in members:
                counts[name] += 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if ranked[0][1] == 0 or ranked[0][1] == ranked[1][1]:
        return frozenset()
    return PRONOUN_CLASSES[ranked[0][0]]


def split_clauses(fact: str, name: str, pronouns: frozenset[str] = frozenset()) -> list[str]:
    """Split "X did A, and her B was C" into two facts, the pronoun replaced by the name, so a
    correction of one clause cannot take the other clause with it.

    Only a pronoun of the subject's own class (`subject_pronouns` of the answer) is replaced:
    in "Marie Curie met Pierre, and he proposed to her" the "he" is Pierre, and in "..., and it
    became a leading laboratory" the "it" is the laboratory; such a clause stays whole."""
    match = _CLAUSE.search(fact)
    if not name or match is None or match.group(1).lower() not in pronouns:
        return [fact]
    pronoun = match.group(1).lower()
    lead = fact[:match.start()].rstrip(" ,") + "."
    who = name if pronoun in ("she", "he", "they", "it") else f"{name}'s"
    rest = fact[match.end():].strip()
    return [lead, f"{who} {rest}"]


def lost_content(output: str, sources: list[str], subject: str) -> str | None:
    """Why `output` does not say everything `sources` say, or None: every content word (by its
    first five letters) and every negation of the sources must survive, and the output may
    add no negation. A rewrite or a polish may reorder and join, never drop or negate."""
    source = " ".join(sources)
    lost = sorted(_content_stems(source, subject) - _content_stems(output, subject))
    if lost:
        return f"it drops {', '.join(lost)}"
    before, after = _negations(source), _negations(output)
    if before != after:
        changed = sorted((before - after) | (after - before))
        return f"it changes the negation ({', '.join(changed)})"
    return None


def orphan_details(sentence: str, facts: list[str], subject: str) -> list[str]:
    """Numbers and names of a sentence that none of its extracted facts carries (the
    extractor left them out): a rewrite from the facts would lose them."""
    have = {w.lower() for w in _words(" ".join(facts) + " " + subject)}
    words = _words(sentence)
    found = []
    for position, word in enumerate(words):
        capital = word[0].isupper() and (position > 0 or len(words) == 1)
        if (_is_number(word) or capital) and word.lower() not in have \
                and word.lower() not in _STOP:
            found.append(word)
    return list(dict.fromkeys(found))


def minimal_edit(sentence: str, changes: list[tuple[str, str | None]]) -> str | None:
    """The sentence with each fact's change made in place, or None when one cannot be placed.

    A change `(fact, correction)` is placed when the words the correction replaces occur once
    in the sentence; a pruned fact (`correction` None) cannot be cut out of a sentence by words
    alone, so it is never placed here."""
    import difflib

    text = sentence
    for fact, fixed in changes:
        if not fixed:
            return None
        old, new = fact.split(), fixed.split()
        matcher = difflib.SequenceMatcher(None, [w.lower() for w in old],
                                          [w.lower() for w in new], autojunk=False)
        edits = [(" ".join(old[a:b]).strip(".,;"), " ".join(new[c:d]).strip(".,;"))
                 for tag, a, b, c, d in matcher.get_opcodes() if tag != "equal"]
        if not edits:
            continue
        for before, after in edits:
            if not before or text.count(before) != 1:
                return None
            text = text.replace(before, after, 1)
    return text if text != sentence else None


def unstated_details(sentence: str, facts: list[str], subject: str) -> str | None:
    """Why a rewritten sentence is not a faithful statement of its facts, or None.

    It must keep every number and name of its facts, and add none the facts do not have.
    """
    source = " ".join(facts)
    added = ungrounded(sentence, source, subject, words=False)
    if added:
        return f"it adds {added.removesuffix(' not in the sentence')}"
    have = {w.lower() for w in _words(sentence)}
    lost = sorted({w for w in _words(source) if (_is_number(w) or w[0].isupper())
                   and w.lower() not in have and w.lower() not in _STOP})
    return f"it drops {', '.join(lost)}" if lost else None


def opening_name(claim: str) -> str:
    """The capitalised words a claim opens with ("Marie Curie was born..." -> "Marie Curie"):
    a stand-in subject for claims that come without one, as in the labelled stage data."""
    words = []
    for word in _words(claim):
        if not word[0].isupper():
            break
        words.append(word)
    return " ".join(words)


@dataclass(frozen=True)
class HeldVerdict:
    """A cited verdict after it has been held to its own quote (`hold_to_quote`)."""

    verdict: str
    swap: Substitution | None = None  # the detail the quote gives another value for
    note: str | None = None  # why the verdict changed, for the run's log

    @property
    def unwitnessed(self) -> bool:
        """A contradiction that rests on the verifier's word alone: it needs a second vote."""
        return self.verdict == "CONTRADICTED" and self.swap is None


def hold_to_quote(verdict: str, claim: str, quote: str | None, evidence: str,
                  subject: str) -> HeldVerdict:
    """Hold a cited verdict to its quote, the rule `SERC.cross_check` runs and the
    `verify_cited` compile stage scores.

    - A quote not taken from the evidence proves nothing. A contradiction that cites the
      claim itself there (an echo) rests on nothing: NOT_FOUND, so it is pruned, never
      "corrected" from thin air.
    - A quote from the evidence that gives another value for one of the claim's details
      contradicts the claim, whatever a small model answered (`substituted_detail`, with the
      stricter same-event test for overruling).
    - A CONTRADICTED verdict keeps its witness (`contradiction_witness`) for the correction;
      without one it is `unwitnessed`.
    """
    if not quote:
        return HeldVerdict(verdict)
    if normalise(quote) not in normalise(evidence):
        if verdict == "CONTRADICTED" and similarity(quote, claim) >= ECHO_SIMILARITY:
            return HeldVerdict("NOT_FOUND", note="judged CONTRADICTED citing the claim itself, "
                               "which the evidence does not contain; NOT_FOUND")
        return HeldVerdict(verdict)
    if verdict == "CONTRADICTED":
        return HeldVerdict(verdict, contradiction_witness(claim, quote, subject))
    swap = substituted_detail(claim, quote, subject, overrule=True)
    if swap is None:
        return HeldVerdict(verdict)
    return HeldVerdict("CONTRADICTED", swap, f"judged {verdict}, but {swap.reason}; CONTRADICTED")
