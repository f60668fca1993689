"""The words pages and questions are made of read as English for every value of every vocabulary:
"an ice hockey team", not "a ice hockey team"; a condition on a category that reads for one
entity and for many alike ("the person …", "the people …"), and that the parser reads back."""

from __future__ import annotations

import re

import pytest

from fictionworld.schema import ENTITY_TYPES
from fictionworld.tasks.grammar import clause
from fictionworld.tasks.parse import parse_clause
from fictionworld.tasks.phrasing import CATEGORY_CLAUSE
from fictionworld.tasks.query import Condition
from fictionworld.web.phrasing import ATTRIBUTE_SENTENCES
from fictionworld.web.text import a_or_an

# Every category attribute, with the type that has it and its vocabulary.
CATEGORIES = [(t, a.name, a.categories) for t, spec in ENTITY_TYPES.items() for a in spec.attributes if a.categories]
# An article that disagrees with the next word's first letter ("a ice", "an team").
WRONG_ARTICLE = re.compile(r"\b(?:[Aa] (?=[aeiouAEIOU])|[Aa]n (?=[^aeiouAEIOU\W]))")
# A relative clause with a finite verb: its form would have to agree with the number of what it
# is about ("who work as" for many, "who works as" for one); a clause here serves both.
FINITE = re.compile(r"^(?:who|that|which) (?!were\b)\w+")


def test_every_category_has_a_vocabulary():
    assert {name for _, name, _ in CATEGORIES} >= {"occupation", "sport", "industry", "genre", "kind", "gender"}


@pytest.mark.parametrize(("type_", "name", "values"), CATEGORIES, ids=[f"{t}.{n}" for t, n, _ in CATEGORIES])
def test_a_page_sentence_takes_the_article_its_value_needs(type_, name, values):
    """Each sentence template of the attribute, with each value, as the renderer fills it."""
    for template in ATTRIBUTE_SENTENCES.get(name, ()):
        for value in values:
            text = template.format(s="Zorvath", v=value, a=a_or_an(value))
            assert not WRONG_ARTICLE.search(text), f"{name}: {text!r}"


@pytest.mark.parametrize(("type_", "name", "values"), CATEGORIES, ids=[f"{t}.{n}" for t, n, _ in CATEGORIES])
def test_a_category_clause_reads_for_one_and_for_many_and_parses_back(type_, name, values):
    for value in values:
        condition = Condition(attribute=name, equals=value)
        text = clause(type_, condition, {})
        assert not FINITE.match(text), f"{name}: {text!r} agrees with one number only"
        assert not WRONG_ARTICLE.search(text), f"{name}: {text!r}"
        assert condition in parse_clause(type_, text), f"{name}: {text!r} does not parse back"


def test_occupations_read_without_a_bare_noun_after_work_as():
    text = clause("person", Condition(attribute="occupation", equals="writer"), {})
    assert "work as writer" not in text and "writer" in text
    assert "occupation" not in CATEGORY_CLAUSE or "{}" in CATEGORY_CLAUSE["occupation"]
