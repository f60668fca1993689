"""Vocabularies (data, not logic): title words, name suffixes, mascots."""

from __future__ import annotations


def _t(s: str) -> tuple[str, ...]:
    return tuple(w.replace("_", " ") for w in s.split())


COMPANY_SUFFIXES: dict[str, tuple[str, ...]] = {
    "software": _t("Software Systems Labs Digital"),
    "biotechnology": _t("Biotech Biosciences Genomics"),
    "logistics": _t("Logistics Freight Shipping"),
    "food processing": _t("Foods Mills Dairy"),
    "textiles": _t("Textiles Weavers Fabrics"),
    "shipbuilding": _t("Shipyards Marine Dockworks"),
    "renewable energy": _t("Energy Power Solar Wind"),
    "mining": _t("Mining Minerals Resources"),
    "banking": _t("Bank Capital Savings"),
    "insurance": _t("Insurance Assurance Mutual"),
    "telecommunications": _t("Telecom Networks Communications"),
    "aerospace": _t("Aerospace Aviation Avionics"),
    "automotive": _t("Motors Automotive Vehicles"),
    "pharmaceuticals": _t("Pharma Pharmaceuticals Laboratories"),
    "retail": _t("Stores Retail Markets"),
    "media": _t("Media Broadcasting Pictures Studios"),
    "construction": _t("Construction Builders Engineering"),
    "chemicals": _t("Chemicals Chemie Polymers"),
    "agriculture": _t("Agro Farms Seeds"),
    "consumer electronics": _t("Electronics Devices Instruments"),
    "robotics": _t("Robotics Automation Machines"),
    "tourism": _t("Travel Tours Hotels"),
    "glassmaking": _t("Glassworks Crystal Glass"),
    "furniture": _t("Furniture Woodworks Interiors"),
}
COMPANY_FORMS = _t("Group Holdings Industries Company Works AG Ltd")

PUBLISHER_PATTERNS = _t("{s}_Press {s}_Books {s}_House Editions_{s} {s}_&_{t} {s}_Publishing")
UNIVERSITY_PATTERNS = {
    "public": _t("University_of_{c} {s}_University {c}_State_University"),
    "private": _t("{s}_College {s}_University {s}_School_of_Economics"),
    "technical": _t("{c}_Institute_of_Technology {s}_Polytechnic {s}_Technical_University"),
    "art academy": _t("{c}_Academy_of_Fine_Arts {s}_Conservatory {s}_School_of_Design"),
}

ADJECTIVES = _t(
    "Silent Hollow Crimson Distant Burning Quiet Hidden Frozen Golden Broken Last Iron Pale "
    "Restless Salt Bitter Northern Sleeping Wandering Glass Paper Lantern Copper Wild Secret "
    "Vanished Long Narrow Endless Patient Borrowed Unfinished Drowned Little Scarlet Amber"
)
NOUNS = _t(
    "Harbor River Garden Orchard Winter Lighthouse Archive Letters Tide Mirror Shadow Compass "
    "Bridge Cartographer Weaver Bell Ledger Meadow Island Clockmaker Ferry Chapel Station Frontier "
    "Inheritance Observatory Salt Signal Valley Orchestra Passage Season Window Mountain Border "
    "Almanac Tower Fever Witness Heron Glacier Comet Caravan Rain Threshold Embassy Quarry"
)
TITLE_PATTERNS = _t(
    "The_{a}_{n} {n}_of_{s} The_{n}_of_{s} {s}'s_{n} A_{n}_in_{s} Letters_from_{s} "
    "The_{a}_{n}s {a}_{n} After_the_{n} The_{n}_at_{s} {s} Return_to_{s} Beyond_the_{a}_{n}"
)
ALBUM_PATTERNS = _t("{a}_{n} {n}s_of_{s} {s} Songs_for_the_{n} {a}_{n}s Live_in_{s} {n}_Sessions")
PRODUCT_WORDS = _t("Aero Nova Pulse Vector Orbit Terra Flux Axis Zephyr Quill Ridge Atlas Lumen Vela")
AWARD_PATTERNS = {
    "literature": _t("{s}_Prize_for_Literature {s}_Book_Award {s}_Medal_for_Fiction"),
    "film": _t("{s}_Film_Award Golden_{n}_Award {s}_Prize_for_Cinema"),
    "music": _t("{s}_Music_Prize {s}_Award_for_Composition Silver_{n}_Award"),
    "science": _t("{s}_Medal_for_Science {s}_Prize_in_Physics {s}_Award_for_Research"),
    "business": _t("{s}_Enterprise_Award {s}_Prize_for_Innovation"),
    "sport": _t("{s}_Trophy {s}_Cup {s}_Sportsmanship_Award"),
}
EVENT_TITLES = {
    "festival": "Festival",
    "conference": "Conference",
    "trade fair": "Trade Fair",
    "marathon": "Marathon",
    "summit": "Summit",
    "exhibition": "Exhibition",
    "film festival": "Film Festival",
    "book fair": "Book Fair",
    "music festival": "Music Festival",
    "symposium": "Symposium",
}
MASCOTS = _t(
    "Herons Foxes Comets Wolves Falcons Otters Ravens Stags Lynxes Hornets Mariners Pilots Rangers "
    "Miners Anchors Kestrels Badgers Storm Lions Owls Bears Giants Rovers Tigers Eagles Sharks"
)
TEAM_PATTERNS = _t("{c}_{m} FC_{s} {s}_United Athletic_{s} {c}_{s}_{m}")
