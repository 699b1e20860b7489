"""What a stance in a sentence is about: the clause that carries it (our own sentences)."""

from __future__ import annotations

import pytest

from personatree.text import content_lemmas, tokenize
from personatree.text.scope import clauses, side_scopes, takes_side_on


def _lemmas(text: str) -> frozenset[str]:
    return content_lemmas(tokenize(text))


def test_clauses_end_at_punctuation_quotes_labels_and_clause_conjunctions() -> None:
    assert clauses("[pier] I told her: 'Don't wait up,' because the ferry was late") == [
        "pier", "i told her", "don't wait up", "the ferry was late",
    ]
    assert clauses("I can't and won't") == ["i can't and won't"]  # "and" joins, "can't" is one word


@pytest.mark.parametrize(
    ("text", "topic", "side", "expected"),
    [("I don't play chess anymore.", "chess", -1, True),
     ("Chess? Can't stand it these days.", "chess", -1, True),  # a pronoun reaches back
     ("[chess club] The referee said 'No phones!'", "chess", -1, False),
     ("I watched the chess final, no snacks allowed.", "chess", -1, False),
     ("Chess keeps me calm, so I don't mind the long evenings.", "chess", -1, False),
     ("I've started playing chess again.", "chess", 1, True),
     ("I've started playing chess again.", "chess", -1, False),
     ("I never raise my voice if the chess coach is around.", "chess", -1, False),
     ("If I ever quit chess, I'd take up go.", "chess", -1, False)],  # a condition stops nothing
)
def test_takes_side_on_reads_the_clause_that_carries_the_side(text, topic, side, expected) -> None:
    assert takes_side_on(text, _lemmas(topic), side) is expected, side_scopes(text)


def test_a_clause_that_names_nothing_is_about_the_sentence_but_its_label() -> None:
    # "[at the rink]" says where it was told: a bare "I can't" is not about the rink.
    assert not takes_side_on("[at the rink] I told her: 'I can't!'", _lemmas("rink"), -1)
    assert takes_side_on("Rink skating, I can't.", _lemmas("rink"), -1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("My kids don't like chess at all.", False),
     ("I know he would never bother with chess.", False),
     ("My coach says no chess before exams.", True),  # told to the speaker: a restriction
     ("My partner and I don't play chess anymore.", True),
     ("I don't play chess since my brother moved away.", True)],
)
def test_a_denial_told_of_another_person_is_theirs(text, expected) -> None:
    assert takes_side_on(text, _lemmas("chess"), -1) is expected, side_scopes(text)


@pytest.mark.parametrize(
    "text",
    ["There was no chess board in the cabin.", "I checked, and no one was at the chess club.",
     "Nobody plays chess on our street."],
)
def test_a_scene_told_by_what_is_not_there_takes_no_side(text) -> None:
    assert not takes_side_on(text, _lemmas("chess"), -1), side_scopes(text)


def test_a_feeling_of_the_moment_takes_no_side() -> None:
    # "felt awful" reads against the pieces as a feeling of the moment; the denial is
    # about the dust. A side taken with a denial, a dislike or a stop still counts.
    text = "I tidied the board, there was no dust on it, but the chess pieces felt awful to touch."
    assert not takes_side_on(text, _lemmas("chess"), -1), side_scopes(text)
    assert [source for _, _, source in side_scopes(text)] == ["affect"]
    for said in ("I don't play chess anymore.", "Chess? Can't stand it these days.",
                 "I hate chess these days."):
        assert takes_side_on(said, _lemmas("chess"), -1), side_scopes(said)
