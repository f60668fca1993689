"""Phrasings: several sentence templates per attribute and relation, infobox labels, sections.

Data only (like Faker's provider tables): the renderer picks one variant per fact from a hash
of the fact id, so a world always reads the same and two facts rarely read alike.
Templates use ``{s}`` (subject), ``{o}`` (object), ``{v}`` (value), ``{a}`` ("a"/"an" before
``{v}``), ``{start}`` / ``{end}`` (dates of temporal facts).
"""

from __future__ import annotations

__all__ = [
    "ATTRIBUTE_SENTENCES",
    "RELATION_SENTENCES",
    "RELATION_SENTENCES_ENDED",
    "RELATION_SENTENCES_UNDATED",
    "LABELS",
    "SECTION",
    "INCOMING",
    "TYPE_LABEL",
    "LIST_BY_RELATION",
    "LIST_BY_ATTRIBUTE",
    "LIST_BY_YEAR",
    "NEWS_SITES",
    "DISTRACTOR_KINDS",
]

ATTRIBUTE_SENTENCES: dict[str, tuple[str, ...]] = {
    "population": ("{s} has a population of {v}.", "The population of {s} is {v}.", "{v} people live in {s}."),
    "area_km2": ("{s} covers {v} km².", "{s} has an area of {v} square kilometres.", "The area of {s} is {v} km²."),
    "established": (
        "{s} was established on {v}.",
        "{s} was founded on {v}.",
        "The date of establishment of {s} is {v}.",
    ),
    "elevation_m": ("{s} lies at an elevation of {v} m.", "The elevation of {s} is {v} metres.", "{s} sits at {v} m."),
    "birth_date": ("{s} was born on {v}.", "The date of birth of {s} is {v}.", "{s}'s birthday is {v}."),
    "death_date": ("{s} died on {v}.", "{s} passed away on {v}.", "The date of death of {s} is {v}."),
    "gender": ("{s} is {v}.", "The gender of {s} is recorded as {v}."),
    "occupation": ("{s} is known as {a} {v}.", "By profession, {s} is {a} {v}.", "The occupation of {s} is {v}."),
    "height_cm": ("{s} is {v} cm tall.", "{s} stands {v} centimetres tall.", "The height of {s} is {v} cm."),
    "founded": ("{s} was founded on {v}.", "{s} was established on {v}.", "The founding date of {s} is {v}."),
    "industry": ("{s} operates in the {v} industry.", "{s} is active in {v}.", "The industry of {s} is {v}."),
    "employees": ("{s} employs {v} people.", "{s} has a workforce of {v}.", "{s} has {v} employees."),
    "revenue_usd": ("{s} reported revenue of {v}.", "The annual revenue of {s} is {v}.", "{s} brings in {v} a year."),
    "website": ("The official website of {s} is {v}.", "{s} can be found online at {v}."),
    "students": ("{s} enrols {v} students.", "{v} students attend {s}.", "{s} has a student body of {v}."),
    "kind": ("{s} is {a} {v}.", "{s} is classified as {a} {v}."),
    "publication_date": (
        "{s} was published on {v}.",
        "{s} first appeared on {v}.",
        "The publication date of {s} is {v}.",
    ),
    "page_count": ("{s} runs to {v} pages.", "{s} has {v} pages.", "{s} is {v} pages long."),
    "genre": ("{s} belongs to the {v} genre.", "The genre of {s} is {v}.", "{s} is filed under {v}."),
    "isbn": ("The ISBN of {s} is {v}.", "{s} has the ISBN {v}."),
    "release_date": ("{s} was released on {v}.", "{s} came out on {v}.", "The release date of {s} is {v}."),
    "runtime_min": (
        "{s} runs {v} minutes.",
        "{s} has a running time of {v} min.",
        "The runtime of {s} is {v} minutes.",
    ),
    "box_office_usd": ("{s} grossed {v} at the box office.", "The box office takings of {s} came to {v}."),
    "track_count": ("{s} has {v} tracks.", "{s} contains {v} songs.", "There are {v} tracks on {s}."),
    "launch_date": ("{s} was launched on {v}.", "{s} went on sale on {v}.", "The launch date of {s} is {v}."),
    "category": ("{s} is {a} {v}.", "{s} is sold as {a} {v}.", "The product category of {s} is {v}."),
    "price_usd": ("{s} sells for {v}.", "{s} is priced at {v}.", "The list price of {s} is {v}."),
    "field": ("{s} honours achievement in {v}.", "{s} is an award in the field of {v}."),
    "start_date": ("{s} began on {v}.", "{s} opened on {v}.", "The start date of {s} was {v}."),
    "end_date": ("{s} ended on {v}.", "{s} closed on {v}.", "The end date of {s} was {v}."),
    "attendance": ("{s} drew {v} attendees.", "The attendance at {s} was {v}.", "{v} people attended {s}."),
    "sport": ("{s} competes in {v}.", "{s} is {a} {v} team.", "The sport of {s} is {v}."),
    "stadium_capacity": (
        "The home ground of {s} holds {v} spectators.",
        "{s} plays in a stadium with {v} seats.",
        "The stadium capacity of {s} is {v}.",
    ),
}

RELATION_SENTENCES: dict[str, tuple[str, ...]] = {
    "located_in": ("{s} is located in {o}.", "{s} lies in {o}.", "{s} is part of {o}."),
    "capital": ("The capital of {s} is {o}.", "{s} has its capital at {o}."),
    "born_in": ("{s} was born in {o}.", "{s} is a native of {o}.", "The birthplace of {s} is {o}."),
    "died_in": ("{s} died in {o}.", "The place of death of {s} was {o}."),
    "citizen_of": ("{s} is a citizen of {o}.", "{s} holds citizenship of {o}.", "{s} has the nationality of {o}."),
    "married_to": ("{s} married {o} on {start}.", "{s} and {o} were married on {start}."),
    "parent_of": ("{s} is a parent of {o}.", "{o} is a child of {s}."),
    "child_of": ("{s} is a child of {o}.", "A parent of {s} is {o}."),
    "sibling_of": ("{s} is a sibling of {o}.", "{o} is a sibling of {s}."),
    "studied_at": ("{s} has studied at {o} since {start}.",),
    "works_for": ("{s} has worked for {o} since {start}.", "{s} joined {o} on {start} and still works there."),
    "ceo_of": ("{s} has been chief executive of {o} since {start}.", "{s} has led {o} as CEO since {start}."),
    "founded_by": ("{s} was founded by {o}.", "{o} founded {s}.", "{o} is a founder of {s}."),
    "headquartered_in": (
        "{s} is headquartered in {o}.",
        "{s} has its head office in {o}.",
        "The headquarters of {s} are in {o}.",
    ),
    "acquired_by": ("{s} was acquired by {o} on {start}.", "On {start}, {o} acquired {s}."),
    "subsidiary_of": ("{s} has been a subsidiary of {o} since {start}.",),
    "has_subsidiary": ("{s} has owned the subsidiary {o} since {start}.",),
    "author_of": ("{s} wrote {o}.", "{s} is the author of {o}.", "{o} was written by {s}."),
    "published_by": (
        "{s} was published by {o}.",
        "{s} appeared under the imprint of {o}.",
        "The publisher of {s} is {o}.",
    ),
    "directed_by": ("{s} was directed by {o}.", "{o} directed {s}.", "The director of {s} is {o}."),
    "starred_in": ("{s} starred in {o}.", "{s} appeared in {o}.", "{s} was in the cast of {o}."),
    "produced_by": ("{s} was produced by {o}.", "The production company of {s} is {o}."),
    "performed_by": ("{s} was recorded by {o}.", "{s} is an album by {o}.", "{o} recorded {s}."),
    "released_by": ("{s} was released on the label {o}.", "{o} released {s}."),
    "manufactured_by": ("{s} is made by {o}.", "{s} is manufactured by {o}.", "{o} makes {s}."),
    "presented_by": ("{s} is presented by {o}.", "{o} presents {s}."),
    "won": ("{s} won the {o} on {start}.", "On {start}, {s} received the {o}.", "{s} was awarded the {o} on {start}."),
    "held_in": ("{s} took place in {o}.", "{s} was held in {o}.", "The host city of {s} was {o}."),
    "organized_by": ("{s} was organised by {o}.", "{o} organised {s}."),
    "participated_in": ("{s} took part in {o}.", "{s} participated in {o}.", "{s} was among the participants of {o}."),
    "based_in": ("{s} is based in {o}.", "{s} plays its home games in {o}.", "The home city of {s} is {o}."),
    "member_of": ("{s} has played for {o} since {start}.",),
}

# Temporal facts that have ended.
RELATION_SENTENCES_ENDED: dict[str, tuple[str, ...]] = {
    "married_to": ("{s} married {o} on {start}; the marriage ended on {end}.",),
    "studied_at": ("{s} studied at {o} from {start} to {end}.", "{s} attended {o} between {start} and {end}."),
    "works_for": ("{s} worked for {o} from {start} to {end}.", "{s} was employed by {o} between {start} and {end}."),
    "ceo_of": (
        "{s} was chief executive of {o} from {start} to {end}.",
        "{s} served as CEO of {o} between {start} and {end}.",
    ),
    "subsidiary_of": ("{s} was a subsidiary of {o} from {start} to {end}.",),
    "has_subsidiary": ("{s} owned the subsidiary {o} from {start} to {end}.",),
    "member_of": ("{s} played for {o} from {start} to {end}.", "{s} was a player of {o} between {start} and {end}."),
}

# Temporal relations whose fact has no start date.
RELATION_SENTENCES_UNDATED: dict[str, tuple[str, ...]] = {
    "married_to": ("{s} is married to {o}.",),
    "studied_at": ("{s} studied at {o}.",),
    "works_for": ("{s} works for {o}.",),
    "ceo_of": ("{s} is chief executive of {o}.",),
    "acquired_by": ("{s} was acquired by {o}.",),
    "subsidiary_of": ("{s} is a subsidiary of {o}.",),
    "has_subsidiary": ("{s} owns the subsidiary {o}.",),
    "won": ("{s} won the {o}.",),
    "member_of": ("{s} plays for {o}.",),
}

LABELS: dict[str, tuple[str, ...]] = {
    "population": ("Population", "Inhabitants"),
    "area_km2": ("Area", "Total area"),
    "established": ("Established", "Founded"),
    "elevation_m": ("Elevation",),
    "birth_date": ("Born", "Date of birth"),
    "death_date": ("Died", "Date of death"),
    "gender": ("Gender",),
    "occupation": ("Occupation", "Profession"),
    "height_cm": ("Height",),
    "founded": ("Founded", "Established", "Inception"),
    "industry": ("Industry", "Sector"),
    "employees": ("Employees", "Number of employees", "Staff"),
    "revenue_usd": ("Revenue", "Annual revenue"),
    "website": ("Website",),
    "students": ("Students", "Enrolment"),
    "kind": ("Type",),
    "publication_date": ("Published", "Publication date"),
    "page_count": ("Pages", "Length"),
    "genre": ("Genre",),
    "isbn": ("ISBN",),
    "release_date": ("Released", "Release date"),
    "runtime_min": ("Running time", "Length"),
    "box_office_usd": ("Box office",),
    "track_count": ("Tracks", "Number of tracks"),
    "launch_date": ("Launched", "Launch date"),
    "category": ("Category", "Product type"),
    "price_usd": ("Price", "List price"),
    "field": ("Field",),
    "start_date": ("Began", "Start date"),
    "end_date": ("Ended", "End date"),
    "attendance": ("Attendance",),
    "sport": ("Sport",),
    "stadium_capacity": ("Stadium capacity", "Capacity"),
}

SECTION: dict[str, str] = {
    "located_in": "Location",
    "capital": "Location",
    "headquartered_in": "Location",
    "based_in": "Location",
    "held_in": "Location",
    "born_in": "Life",
    "died_in": "Life",
    "citizen_of": "Life",
    "married_to": "Family",
    "parent_of": "Family",
    "child_of": "Family",
    "sibling_of": "Family",
    "studied_at": "Career",
    "works_for": "Career",
    "ceo_of": "Career",
    "member_of": "Career",
    "participated_in": "Career",
    "starred_in": "Career",
    "author_of": "Works",
    "founded_by": "History",
    "acquired_by": "History",
    "subsidiary_of": "History",
    "has_subsidiary": "History",
    "presented_by": "History",
    "organized_by": "History",
    "published_by": "Production",
    "directed_by": "Production",
    "produced_by": "Production",
    "performed_by": "Production",
    "released_by": "Production",
    "manufactured_by": "Production",
    "won": "Awards",
}

# Incoming relations an object's article also states: predicate -> (object type, section).
INCOMING: dict[str, tuple[str, str]] = {
    "ceo_of": ("company", "Leadership"),
    "author_of": ("book", "Authors"),
    "starred_in": ("film", "Cast"),
    "participated_in": ("event", "Participants"),
    "member_of": ("sports_team", "Players"),
    "won": ("award", "Recipients"),
}

TYPE_LABEL: dict[str, str] = {
    "country": "country",
    "region": "region",
    "city": "city",
    "person": "person",
    "company": "company",
    "university": "university",
    "publisher": "publishing house",
    "book": "book",
    "film": "film",
    "album": "music album",
    "product": "product",
    "award": "award",
    "event": "event",
    "sports_team": "sports team",
}

# Directory pages: (relation, subject type) -> title; grouped by the relation's object.
LIST_BY_RELATION: dict[tuple[str, str], str] = {
    ("headquartered_in", "company"): "Companies headquartered in {o}",
    ("headquartered_in", "publisher"): "Publishers in {o}",
    ("located_in", "region"): "Regions of {o}",
    ("located_in", "city"): "Cities in {o}",
    ("located_in", "university"): "Universities in {o}",
    ("based_in", "sports_team"): "Sports teams based in {o}",
    ("held_in", "event"): "Events held in {o}",
    ("born_in", "person"): "People born in {o}",
    ("published_by", "book"): "Books published by {o}",
    ("manufactured_by", "product"): "Products made by {o}",
    ("produced_by", "film"): "Films produced by {o}",
    ("released_by", "album"): "Albums released by {o}",
    ("directed_by", "film"): "Films directed by {o}",
    ("performed_by", "album"): "Albums recorded by {o}",
    ("won", "person"): "People who won the {o}",
    ("won", "book"): "Books that won the {o}",
    ("won", "film"): "Films that won the {o}",
    ("won", "album"): "Albums that won the {o}",
    ("presented_by", "award"): "Awards presented by {o}",
    ("organized_by", "event"): "Events organised by {o}",
    ("studied_at", "person"): "Alumni of {o}",
    ("member_of", "person"): "Players of {o}",
}
# Category pages: (type, attribute) -> title, grouped by the attribute's value.
LIST_BY_ATTRIBUTE: dict[tuple[str, str], str] = {
    ("company", "industry"): "Companies in the {v} industry",
    ("book", "genre"): "Books in the {v} genre",
    ("film", "genre"): "Films in the {v} genre",
    ("album", "genre"): "Albums in the {v} genre",
    ("product", "category"): "Products in the category {v}",
    ("sports_team", "sport"): "Sports teams playing {v}",
    ("event", "kind"): "Events of the kind {v}",
    ("university", "kind"): "Universities of the type {v}",
    ("award", "field"): "Awards in the field of {v}",
}
# Year pages: (type, date attribute) -> title, grouped by year.
LIST_BY_YEAR: dict[tuple[str, str], str] = {
    ("company", "founded"): "Companies founded in {v}",
    ("book", "publication_date"): "Books published in {v}",
    ("film", "release_date"): "Films released in {v}",
    ("album", "release_date"): "Albums released in {v}",
    ("product", "launch_date"): "Products launched in {v}",
}

NEWS_SITES: tuple[tuple[str, str], ...] = (
    ("The Daily Ledger", "https://www.dailyledger.news"),
    ("Global Wire", "https://www.globalwire.news"),
    ("Morning Courier", "https://www.morningcourier.news"),
)

# Near-miss things that share a name with an entity but are not of any world type.
DISTRACTOR_KINDS: tuple[tuple[str, str], ...] = (
    ("band", "{n} (band)"),
    ("podcast", "The {n} Podcast"),
    ("fan club", "{n} Fan Club"),
    ("restaurant", "{n} Grill & Bar"),
    ("ship", "MV {n}"),
    ("racehorse", "{n} (racehorse)"),
)
