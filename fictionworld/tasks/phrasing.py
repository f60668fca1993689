"""Words for task questions: how a condition, a column and a blurred clue read (data only)."""

from __future__ import annotations

__all__ = ["PLURAL", "SOMEONE", "HOP_CLAUSES", "TEMPORAL_CLAUSES", "HOP_NOUN", "ATTR_NOUN", "DATE_VERB",
           "CATEGORY_CLAUSE", "KEY_HEADER"]  # fmt: skip

PLURAL = {
    "country": "countries",
    "region": "regions",
    "city": "cities",
    "person": "people",
    "company": "companies",
    "university": "universities",
    "publisher": "publishing houses",
    "book": "books",
    "film": "films",
    "album": "music albums",
    "product": "products",
    "award": "awards",
    "event": "events",
    "sports_team": "sports teams",
}
# An unnamed entity of a type inside a clue ("directed by someone born in…").
SOMEONE = {
    "country": "a country",
    "region": "a region",
    "city": "a city",
    "person": "someone",
    "company": "a company",
    "university": "a university",
    "publisher": "a publishing house",
    "book": "a book",
    "film": "a film",
    "album": "an album",
    "product": "a product",
    "award": "an award",
    "event": "an event",
    "sports_team": "a sports team",
}
KEY_HEADER = {
    "person": "Name",
    "publisher": "Publisher",
    "sports_team": "Team",
    "album": "Album",
}
# (predicate, inverse) -> paraphrases of a clause, {} for what is reached (the first is the plain one).
HOP_CLAUSES: dict[tuple[str, bool], tuple[str, ...]] = {
    ("headquartered_in", False): ("headquartered in {}", "with headquarters in {}", "whose head office is in {}"),
    ("based_in", False): ("based in {}", "whose home city is {}"),
    ("held_in", False): ("held in {}", "that took place in {}"),
    ("located_in", False): ("located in {}", "situated in {}"),
    ("capital", False): ("whose capital is {}",),
    ("born_in", False): ("born in {}", "whose birthplace is {}", "native to {}"),
    ("died_in", False): ("who died in {}", "whose place of death is {}"),
    ("citizen_of", False): ("holding citizenship of {}", "with citizenship of {}"),
    ("published_by", False): ("published by {}", "issued by {}"),
    ("manufactured_by", False): ("made by {}", "manufactured by {}"),
    ("produced_by", False): ("produced by {}", "with production by {}"),
    ("released_by", False): ("released on the label of {}", "released under the label of {}"),
    ("directed_by", False): ("directed by {}", "made under the direction of {}"),
    ("performed_by", False): ("recorded by {}", "performed by {}"),
    ("presented_by", False): ("presented by {}", "awarded by {}"),
    ("organized_by", False): ("organised by {}", "whose organiser is {}"),
    ("founded_by", False): ("founded by {}", "whose founders include {}"),
    ("acquired_by", False): ("acquired by {}", "bought by {}"),
    ("won", False): ("that won {}", "that received {}"),
    ("studied_at", False): ("who studied at {}", "who attended {}"),
    ("member_of", False): ("who played for {}", "who have played for {}"),
    ("author_of", True): ("written by {}", "authored by {}"),
    ("starred_in", True): ("starring {}", "featuring {}"),
    ("participated_in", False): ("who took part in {}", "who participated in {}"),
}
# Temporal relations with a dated span: predicate -> clauses with {} (the entity), {a}–{b} (years).
TEMPORAL_CLAUSES: dict[str, tuple[str, ...]] = {
    "member_of": (
        "who played for {} at some point between {a} and {b}",
        "who were players of {} at any time from {a} to {b}",
    ),
    "studied_at": (
        "who studied at {} at some point between {a} and {b}",
        "who were students at {} at any time from {a} to {b}",
    ),
}
# (predicate, inverse, reached type) -> column noun ("headquarters", "director").
HOP_NOUN = {
    "headquartered_in": "headquarters city",
    "based_in": "home city",
    "held_in": "host city",
    "capital": "capital",
    "born_in": "birthplace",
    "died_in": "place of death",
    "citizen_of": "citizenship",
    "published_by": "publisher",
    "manufactured_by": "manufacturer",
    "produced_by": "production company",
    "released_by": "record label",
    "directed_by": "director",
    "performed_by": "artist",
    "presented_by": "presenting body",
    "organized_by": "organiser",
    "founded_by": "founder",
    "acquired_by": "acquirer",
}
# Attribute nouns for columns and numeric clauses ("whose population is between…").
ATTR_NOUN = {
    "population": "population",
    "area_km2": "area in km²",
    "established": "date of establishment",
    "elevation_m": "elevation in metres",
    "birth_date": "date of birth",
    "death_date": "date of death",
    "gender": "gender",
    "occupation": "occupation",
    "height_cm": "height in cm",
    "founded": "founding date",
    "industry": "industry",
    "employees": "number of employees",
    "revenue_usd": "annual revenue in US dollars",
    "website": "official website",
    "students": "number of students",
    "kind": "type",
    "publication_date": "publication date",
    "page_count": "page count",
    "genre": "genre",
    "isbn": "ISBN",
    "release_date": "release date",
    "runtime_min": "running time in minutes",
    "box_office_usd": "box office gross in US dollars",
    "track_count": "number of tracks",
    "launch_date": "launch date",
    "category": "product category",
    "price_usd": "price in US dollars",
    "field": "field",
    "start_date": "start date",
    "end_date": "end date",
    "attendance": "attendance",
    "sport": "sport",
    "stadium_capacity": "stadium capacity",
}
# Date attributes as a verb for range clauses ("founded between 1990 and 1999").
DATE_VERB = {
    "established": "established",
    "birth_date": "born",
    "death_date": "who died",
    "founded": "founded",
    "publication_date": "published",
    "release_date": "released",
    "launch_date": "launched",
    "start_date": "that began",
    "end_date": "that ended",
}
# A category condition as a clause, {} for the value. It must read for one entity ("the person
# '…'") and for many ("the people '…'") alike, and the value is a bare noun: an attribute
# whose values are nouns that would need an article or a plural ("writer") is left out, and reads
# "whose occupation is writer" (tests/test_phrasing.py reads every value of every vocabulary).
CATEGORY_CLAUSE = {
    "industry": "in the {} industry",
    "genre": "in the {} genre",
    "category": "in the category {}",
    "sport": "playing {}",
    "kind": "of the kind {}",
    "field": "in the field of {}",
    "gender": "recorded as {}",
}
