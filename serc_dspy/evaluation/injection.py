"""Planted errors: true biography leads with known, recorded corruptions (semantic noise).

SERC is a decoder, so it is measured like one: take true text, inject K errors, decode, count
what is left. Everything here is deterministic from the seed and the article, so a benchmark
can be rerun and resumed and two methods see the very same drafts.

Error kinds (each recorded with its sentence, its span in the draft, the original and the
injected text):
- `year`: a year moved by a few years;
- `number`: another number (a day, a count) changed;
- `place`: a place ("in X", "from X") replaced by a place taken from another article;
- `person`: another person's name replaced by the name of another article's subject;
- `role`: an occupation or role word replaced by another role;
- `dependent`: a role and what the role did ("composer" ... "composed") changed together, so
  that fixing one implies fixing the other (two errors sharing a `group`).

Only values that the rest of the article (the body, lead removed) states may be corrupted:
the evidence must be able to fix them. Injected values never occur anywhere in the article.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from serc_dspy.core.errors import UserError
from serc_dspy.core.text import split_sentences
from serc_dspy.retrieval.knowledge import article_text, read_knowledge_json

ErrorKind = Literal["year", "number", "place", "person", "role", "dependent"]
KINDS: tuple[str, ...] = ("year", "number", "place", "person", "role", "dependent")

_HEADING = re.compile(r"\n\s*==[^=\n].*?==\s*\n")
_YEAR = re.compile(r"(?<![\d.,])(1[5-9]\d\d|20[0-2]\d)(?![\d])")
_NUMBER = re.compile(r"(?<![\d.,])(\d{1,3})(?![\d])")
_NAME_WORD = r"[A-Z][a-zà-ÿ'’-]+"
_NAME = re.compile(rf"\b{_NAME_WORD}(?: (?:de |da |van |von |del |di )?{_NAME_WORD}){{1,2}}\b")

# Roles and what someone in the role does; the second list makes `dependent` errors.
ROLES: dict[str, tuple[str, ...]] = {
    "actor": ("acted",), "actress": ("acted",), "architect": ("designed",),
    "author": ("wrote",), "businessman": (), "businesswoman": (), "cartoonist": ("drew",),
    "composer": ("composed", "compositions"), "dancer": ("danced",), "diplomat": (),
    "economist": (), "engineer": (), "essayist": (), "footballer": ("played",),
    "golfer": ("played",), "journalist": ("reported",), "lawyer": (), "musician": ("played",),
    "novelist": ("novels", "wrote"), "organist": ("organ",), "painter": ("painted", "paintings"),
    "philosopher": (), "photographer": ("photographs", "photographed"), "physician": (),
    "pianist": ("piano",), "poet": ("poems",), "politician": (), "producer": ("produced",),
    "professor": ("taught",), "rapper": ("rapped",), "singer": ("sang", "songs"),
    "songwriter": ("songs",), "surgeon": (), "teacher": ("taught",), "writer": ("wrote",),
    "cyclist": ("raced",), "broadcaster": ("hosted",), "filmmaker": ("films", "directed"),
    "director": ("directed",), "comedian": (), "entrepreneur": ("founded",),
}
ACTIVITY_SWAP: dict[str, str] = {
    "acted": "painted", "designed": "composed", "wrote": "painted", "drew": "sang",
    "composed": "painted", "compositions": "paintings", "danced": "wrote", "played": "sang",
    "reported": "painted", "novels": "paintings", "organ": "violin", "painted": "composed",
    "paintings": "compositions", "photographs": "novels", "photographed": "painted",
    "piano": "cello", "poems": "paintings", "produced": "painted", "taught": "sang",
    "rapped": "painted", "sang": "painted", "songs": "paintings", "raced": "sang",
    "hosted": "painted", "films": "novels", "directed": "composed", "founded": "painted",
}
DEPENDENT_ROLE: dict[str, str] = {
    "painted": "painter", "composed": "composer", "paintings": "painter", "sang": "singer",
    "compositions": "composer", "violin": "violinist", "cello": "cellist", "novels": "novelist",
    "wrote": "writer",
}
# Places a lead names, without a tagger: countries, regions and large cities.
PLACES: frozenset[str] = frozenset("""
Afghanistan Albania Algeria Argentina Armenia Australia Austria Bangladesh Belgium Bolivia
Brazil Bulgaria Cambodia Cameroon Canada Chile China Colombia Croatia Cuba Cyprus Denmark
Ecuador Egypt England Estonia Ethiopia Finland France Germany Ghana Greece Guatemala Haiti
Hungary Iceland India Indonesia Iran Iraq Ireland Israel Italy Jamaica Japan Jordan Kenya Korea
Kuwait Latvia Lebanon Libya Lithuania Malaysia Mali Malta Mexico Mongolia Morocco Nepal
Netherlands Nigeria Norway Pakistan Panama Paraguay Peru Philippines Poland Portugal Romania
Russia Scotland Senegal Serbia Singapore Slovakia Slovenia Somalia Spain Sudan Sweden Switzerland
Syria Taiwan Tanzania Thailand Tunisia Turkey Uganda Ukraine Uruguay Venezuela Vietnam Wales
Yemen Zambia Zimbabwe Algiers Amsterdam Antibes Athens Atlanta Auckland Baghdad Baltimore
Bangkok Barcelona Beijing Beirut Berlin Bogotá Bombay Boston Boulogne-sur-Mer Brussels
Bucharest Budapest Cairo Calcutta Chicago Cleveland Copenhagen Dallas Delhi Detroit Dublin
Edinburgh Florence Geneva Glasgow Hamburg Havana Helsinki Hollywood Honolulu Houston Istanbul
Jakarta Jerusalem Kabul Karachi Kashmir Kyoto Lagos Lahore Lima Lisbon Liverpool London Lyon
Madrid Manchester Manila Marseille Melbourne Miami Milan Montreal Moscow Mumbai Munich Nairobi
Naples Oran Osaka Oslo Ottawa Paris Philadelphia Prague Quebec Rome Rotterdam Santiago Seattle
Seoul Shanghai Stockholm Sydney Tehran Tokyo Toronto Turin Turnhout Vancouver Venice Vienna
Warsaw Wellington Yokohama Zagreb Zurich Alabama Alaska Arizona Arkansas California Colorado
Connecticut Delaware Florida Georgia Hawaii Idaho Illinois Indiana Iowa Kansas Kentucky
Louisiana Maine Maryland Massachusetts Michigan Minnesota Mississippi Missouri Montana Nebraska
Nevada Ohio Oklahoma Oregon Pennsylvania Tennessee Texas Utah Vermont Virginia Washington
Wisconsin Wyoming Bavaria Catalonia Ontario Punjab Queensland Sicily Siberia Tuscany
""".split()) | frozenset({
    "New Zealand", "New York City", "New York", "Los Angeles", "San Francisco", "San Juan",
    "Puerto Rico", "South Korea", "North Korea", "South Africa", "Sri Lanka", "Hong Kong",
    "United States", "United Kingdom", "Saudi Arabia", "East Germany", "West Germany",
    "Buenos Aires", "Rio de Janeiro", "São Paulo", "Mexico City", "New Delhi", "Las Vegas",
    "New Orleans", "Tel Aviv", "Cape Town", "Kuala Lumpur", "St. Louis", "Costa Rica",
    "Andhra Pradesh", "Sierra Maestra", "El Salvador", "Czech Republic", "Ivory Coast"})
_PLACE_ALTERNATIVES = "|".join(sorted(map(re.escape, PLACES), key=len, reverse=True))
_PLACE_NAME = re.compile(rf"(?<![\w-])({_PLACE_ALTERNATIVES})(?![\w-])")

_ARTICLE_FREE_ROLES = ("painter", "chemist", "sculptor", "astronomer", "banker", "botanist",
                       "violinist", "geologist", "jeweller", "zoologist")


class InjectedError(BaseModel):
    """One planted error; `start`/`end` index the injected text in the noisy draft."""

    id: str
    kind: ErrorKind
    sentence: int
    start: int
    end: int
    original: str
    injected: str
    group: str | None = None
    """Errors of one `dependent` pair share a group (fixing one implies fixing the other)."""


class NoisyDraft(BaseModel):
    """A draft with K planted errors, and what scoring needs to judge a decoding of it."""

    id: str
    title: str
    question: str
    clean: str
    draft: str
    sentences: list[str]
    errors: list[InjectedError] = Field(default_factory=list)
    seed: int = 0


class _Candidate(BaseModel):
    kind: ErrorKind
    start: int
    end: int
    original: str
    injected: str
    linked: tuple[int, int, str, str] | None = None  # a dependent pair's second span


def plain_title(title: str) -> str:
    """`Ronaldo (Brazilian footballer)` -> `Ronaldo`; `Rennie Fritchie, Baroness X` -> the
    part before the comma."""
    return re.sub(r"\s*\(.*?\)\s*$", "", title).split(",")[0].strip()


def split_article(text: str) -> tuple[str, str]:
    """(lead, body): the lead is everything before the first `== Section ==` heading."""
    match = _HEADING.search("\n" + text)
    if not match:
        return text.strip(), ""
    cut = max(0, match.start() - 1)
    return text[:cut].strip(), text[cut:].strip()


def load_articles(source: str | Mapping[str, Any]) -> dict[str, str]:
    """`{title: text}` or `{topic: {"resolved_title", "extract"}}` -> `{title: text}`."""

    articles: dict[str, str] = {}
    for topic, value in read_knowledge_json(source, what="articles file").items():
        text = article_text(str(topic), value)
        articles[str(topic)] = text if isinstance(text, str) else "\n\n".join(text)
    if not articles:
        raise UserError("the articles file holds no article")
    return articles


def _contains(text: str, value: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", text, re.IGNORECASE) is not None


def _shifted(value: int, article: str, rng: random.Random, lo: int, hi: int) -> str | None:
    offsets = [d for d in range(-hi, hi + 1) if abs(d) >= lo]
    rng.shuffle(offsets)
    for delta in offsets:
        new = value + delta
        if new > 0 and not _contains(article, str(new)):  # the lead is part of the article
            return str(new)
    return None


def _number_context(draft: str, start: int, end: int) -> str:
    """A number with its next word ("40 recitals", "12 March"): the body must state that."""
    tail = re.match(r"\s+([A-Za-z]+)", draft[end:])
    return draft[start:end] + (" " + tail.group(1) if tail else "")


def _candidates(draft: str, body: str, article: str, subject: str, places: list[str],
                people: list[str], rng: random.Random) -> list[_Candidate]:
    found: list[_Candidate] = []
    subject_words = set(re.findall(r"\w+", subject.lower()))
    for m in _YEAR.finditer(draft):
        new = _shifted(int(m.group(1)), article, rng, 2, 9)
        if new and _contains(body, m.group(1)):
            found.append(_Candidate(kind="year", start=m.start(1), end=m.end(1),
                                    original=m.group(1), injected=new))
    for m in _NUMBER.finditer(draft):
        if _YEAR.fullmatch(m.group(1)):
            continue
        context = _number_context(draft, m.start(1), m.end(1))
        new = _shifted(int(m.group(1)), article, rng, 1, 6)
        if new and " " in context and _contains(body, context):
            found.append(_Candidate(kind="number", start=m.start(1), end=m.end(1),
                                    original=m.group(1), injected=new))
    for m in _PLACE_NAME.finditer(draft):
        place = m.group(1)
        if set(place.lower().split()) & subject_words or not _contains(body, place):
            continue
        options = [p for p in places if not _contains(article, p)]
        if options:
            found.append(_Candidate(kind="place", start=m.start(1), end=m.end(1),
                                    original=place, injected=rng.choice(options)))
    place_spans = {(c.start, c.end) for c in found if c.kind == "place"}
    known_places = set(places) | {c.original for c in found if c.kind == "place"}
    for m in _NAME.finditer(draft):
        name = m.group(0)
        words = set(name.lower().split())
        if words & subject_words or (m.start(), m.end()) in place_spans:
            continue
        if m.start() == 0 or draft[max(0, m.start() - 2):m.start()].strip() in {".", ""}:
            continue  # sentence-initial capitals are not names often enough
        if not _contains(body, name) or not _looks_personal(name, body, known_places):
            continue
        options = [p for p in people if not _contains(article, p)]
        if options:
            found.append(_Candidate(kind="person", start=m.start(), end=m.end(),
                                    original=name, injected=rng.choice(options)))
    for role in ROLES:
        for m in re.finditer(rf"\b{role}\b", draft):
            if not _contains(body, role):
                continue
            options = [r for r in _ARTICLE_FREE_ROLES if not _contains(article, r)]
            if options:
                found.append(_Candidate(kind="role", start=m.start(), end=m.end(),
                                        original=role, injected=rng.choice(options)))
            found.extend(_dependents(draft, body, article, role, m))
    return found


_NOT_PERSONAL = frozenset({
    "university", "school", "college", "club", "award", "awards", "league", "party", "house",
    "city", "national", "royal", "church", "state", "states", "united", "kingdom", "republic",
    "company", "records", "entertainment", "magazine", "festival", "cup", "championship",
    "prize", "academy", "institute", "association", "council", "court", "army", "revolution",
    "movement", "games", "olympics", "series", "season", "commission", "ministry", "group",
    "justice", "secretary", "president", "minister", "general", "commissioner", "governor",
    "chief", "associate", "mayor", "senator", "prime", "judge", "deputy", "vice", "lord", "sir",
    "saint", "st", "the", "of", "and"})


_DEMONYM = re.compile(r"(?:ese|ish|ian|can|ean)$")


def _looks_personal(name: str, body: str, places: set[str]) -> bool:
    """A person's name, without a tagger: 2-3 capitalised words, none of them a place or an
    institution word, whose last word (the surname) the body also uses on its own and never in
    lower case (people are referred to by surname; "Commission" or "One" fail)."""
    words = name.split()
    if name in places or "'" in name or "’" in name or len(set(words)) < len(words) \
            or len(words[-1]) < 3 or any(w in places or w.lower() in _NOT_PERSONAL for w in words) \
            or _PLACE_NAME.search(name) or _DEMONYM.search(words[-1]):
        return False
    surname = words[-1]
    alone = len(re.findall(rf"(?<![\w-]){re.escape(surname)}(?![\w-])", body))
    together = len(re.findall(re.escape(name), body))
    lower = re.search(rf"(?<![\w-]){re.escape(surname.lower())}(?![\w-])", body)
    return alone > together and lower is None


def _dependents(draft: str, body: str, article: str, role: str, m: re.Match) -> list[_Candidate]:
    out = []
    for activity in ROLES[role]:
        for a in re.finditer(rf"\b{activity}\b", draft):
            if a.start() < m.end() + 1 and a.end() > m.start() - 1:
                continue
            swapped = ACTIVITY_SWAP.get(activity)
            new_role = DEPENDENT_ROLE.get(swapped or "")
            if not swapped or not new_role or _contains(article, new_role):
                continue
            if not (_contains(body, role) and _contains(body, activity)):
                continue
            out.append(_Candidate(kind="dependent", start=m.start(), end=m.end(), original=role,
                                  injected=new_role,
                                  linked=(a.start(), a.end(), activity, swapped)))
    return out


def _sentence_of(sentences: list[str], offsets: list[int], position: int) -> int:
    index = 0
    for i, start in enumerate(offsets):
        if start <= position:
            index = i
    return index


def _stable_seed(*parts: Any) -> int:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).hexdigest()
    return int(digest[:16], 16)


def make_draft(title: str, article: str, errors: int, *, seed: int = 0, sentences: int = 3,
               places: list[str] | None = None, people: list[str] | None = None
               ) -> NoisyDraft | None:
    """The first `sentences` sentences of the lead with `errors` planted errors, or None when
    the lead does not offer that many fixable spans."""
    lead, body = split_article(article)
    parts = split_sentences(lead)[:sentences]
    if not parts or not body:
        return None
    clean = " ".join(parts)
    subject = plain_title(title)
    rng = random.Random(_stable_seed(seed, title, errors))
    found = _candidates(clean, body, article, subject, places or [], people or [], rng)
    chosen = _choose(found, errors, rng)
    if chosen is None:
        return None
    return _apply(title, subject, clean, chosen, seed)


def _spans(c: _Candidate) -> list[tuple[int, int]]:
    return [(c.start, c.end)] + ([(c.linked[0], c.linked[1])] if c.linked else [])


def _choose(found: list[_Candidate], errors: int, rng: random.Random) -> list[_Candidate] | None:
    """`errors` non-overlapping candidates, kinds taken in a shuffled round robin."""
    by_kind: dict[str, list[_Candidate]] = {}
    for c in found:
        by_kind.setdefault(c.kind, []).append(c)
    for group in by_kind.values():
        rng.shuffle(group)
    kinds = [k for k in KINDS if k in by_kind]
    rng.shuffle(kinds)
    chosen: list[_Candidate] = []
    taken: list[tuple[int, int]] = []
    used: set[str] = set()  # one error per original value, so scoring by text is unambiguous
    count = 0
    while count < errors and any(by_kind.get(k) for k in kinds):
        for kind in kinds:
            if count >= errors:
                break
            pool = by_kind.get(kind) or []
            while pool:
                c = pool.pop()
                size = 2 if c.linked else 1
                clash = any(s < e2 and s2 < e for s, e in _spans(c) for s2, e2 in taken)
                if clash or c.original in used or count + size > errors:
                    continue
                chosen.append(c)
                used.update([c.original] + ([c.linked[2]] if c.linked else []))
                taken.extend(_spans(c))
                count += size
                break
    return chosen if count == errors else None


def _apply(title: str, subject: str, clean: str, chosen: list[_Candidate], seed: int
           ) -> NoisyDraft:
    edits = []  # (start, end, original, injected, kind, group)
    for n, c in enumerate(chosen):
        group = f"g{n + 1}" if c.linked else None
        edits.append((c.start, c.end, c.original, c.injected, c.kind, group))
        if c.linked:
            s, e, original, injected = c.linked
            edits.append((s, e, original, injected, "dependent", group))
    edits.sort()
    draft, shift, placed = clean, 0, []
    for start, end, original, injected, kind, group in edits:
        s = start + shift
        draft = draft[:s] + injected + draft[s + (end - start):]
        placed.append((s, s + len(injected), original, injected, kind, group))
        shift += len(injected) - (end - start)
    sentences = split_sentences(draft)
    offsets, cursor = [], 0
    for sentence in sentences:
        cursor = draft.find(sentence, cursor)
        offsets.append(cursor)
    errors = [InjectedError(id=f"e{i + 1}", kind=kind, sentence=_sentence_of(sentences, offsets, s),
                            start=s, end=e, original=original, injected=injected, group=group)
              for i, (s, e, original, injected, kind, group) in enumerate(placed)]
    return NoisyDraft(id=f"{title}#k{len(errors)}", title=title,
                      question=f"Tell me a bio of {subject}.", clean=clean, draft=draft,
                      sentences=sentences, errors=errors, seed=seed)


def _pools(articles: Mapping[str, str]) -> tuple[dict[str, list[str]], list[str]]:
    """Places each article names, and every subject's name: the replacement pools."""
    places = {title: sorted({m.group(1) for m in _PLACE_NAME.finditer(text)})
              for title, text in articles.items()}
    people = sorted({plain_title(t) for t in articles if len(plain_title(t).split()) >= 2})
    return places, people


def make_drafts(articles: Mapping[str, str], *, bios: int, errors: int, seed: int = 0,
                sentences: int = 3, offset: int = 0) -> list[NoisyDraft]:
    """The first `bios` articles (in file order, after the first `offset`, which a held-out
    split skips) whose lead can carry `errors` errors. The pools of replacement places and
    people always come from every article, so a split changes no draft it keeps."""
    if bios < 1 or errors < 0 or sentences < 1 or offset < 0:
        raise UserError(f"need bios >= 1, errors >= 0, sentences >= 1 and offset >= 0 (got "
                        f"{bios}, {errors}, {sentences}, {offset})")
    places, people = _pools(articles)
    out = []
    for title, text in list(articles.items())[offset:]:
        others_places = sorted({p for t, ps in places.items() if t != title for p in ps})
        others_people = [p for p in people if p != plain_title(title)]
        draft = make_draft(title, text, errors, seed=seed, sentences=sentences,
                           places=others_places, people=others_people)
        if draft is not None:
            out.append(draft)
        if len(out) == bios:
            break
    if len(out) < bios:
        raise UserError(f"only {len(out)} of {len(articles) - offset} articles can carry {errors} "
                        f"planted errors in {sentences} sentences; ask for fewer --bios or "
                        "--errors, or more --sentences")
    return out


def corpus_articles(articles: Mapping[str, str], drafts: list[NoisyDraft], *,
                    include_lead: bool = False) -> dict[str, str]:
    """What the decoder may retrieve from: each drafted article's body (lead removed)."""
    out = {}
    for draft in drafts:
        lead, body = split_article(articles[draft.title])
        out[draft.title] = f"{lead}\n\n{body}" if include_lead else body
    return out
