"""The neutral benchmark data model every loader produces.

A benchmark is a set of :class:`Conversation` streams. Each stream is a list of
:class:`Turn` objects in the order an agent would have seen them, plus the
:class:`Question` objects asked after the stream. Gold evidence is a set of turn ids
of the same stream. Nothing here depends on the engine, so the baselines and the
loaders can be used (and tested) on their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Mapping

__all__ = ["Turn", "Question", "Conversation", "Dataset", "strip_questions"]


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a stream: what becomes one observation.

    Attributes
    ----------
    id : str
        The upstream id (LoCoMo ``dia_id`` such as ``"D1:3"``, a KnowMe entry id,
        a PrefEval position such as ``"pref:1"``). Unique within its conversation.
    speaker : str
        Who said it (a person's name; ``"I"`` for KnowMe's narrator).
    text : str
        The text as the memory sees it (image captions and narrative fields folded in).
    at : datetime
        When it was said (UTC).
    session : str
        The session it belongs to; ingestion consolidates at session boundaries.
    role : str
        ``"user"`` or ``"assistant"`` (both LoCoMo speakers are people: ``"user"``).
    """

    id: str
    speaker: str
    text: str
    at: datetime
    session: str
    role: str = "user"


@dataclass(frozen=True, slots=True)
class Question:
    """A question asked after the stream, with its gold evidence turns.

    Attributes
    ----------
    id : str
        Unique within the conversation.
    text : str
        The query given to the memory.
    category : str
        LoCoMo category id as text (``"1"`` … ``"5"`` or whatever the file has),
        a KnowMe task name, a PrefEval form, or a LoCoMo-Plus relation type.
    evidence : tuple of str
        Gold turn ids (only those that exist in the stream; see ``dropped_evidence``).
    adversarial : bool
        Abstention / adversarial questions, reported separately.
    at : datetime or None
        When the question is asked (``None``: after the last turn).
    answer : str
        The gold answer, kept for reports only (never used for scoring recall).
    dropped_evidence : tuple of str
        Evidence strings that could not be parsed or name no turn of the stream.
    from_user : bool
        The query is said by a person the memory is about (a LoCoMo-Plus trigger),
        as an agent recalls for the user's latest message, rather than a question
        asked about them.
    """

    id: str
    text: str
    category: str
    evidence: tuple[str, ...]
    adversarial: bool = False
    at: datetime | None = None
    answer: str = ""
    dropped_evidence: tuple[str, ...] = ()
    from_user: bool = False


@dataclass(frozen=True, slots=True)
class Conversation:
    """One memory stream (one user of the memory) with the questions asked about it.

    Attributes
    ----------
    id : str
        Used as the memory's user id.
    turns : tuple of Turn
        In replay order.
    questions : tuple of Question
        Asked after the stream.
    meta : Mapping
        Loader-specific details (speakers, host conversation, form…).
    """

    id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def sessions(self) -> list[tuple[str, list[Turn]]]:
        """Consecutive runs of turns sharing a session id, in order.

        Returns
        -------
        list of (session id, turns)
            A session id that recurs later (a flashback) starts a new run.
        """
        runs: list[tuple[str, list[Turn]]] = []
        for t in self.turns:
            if runs and runs[-1][0] == t.session:
                runs[-1][1].append(t)
            else:
                runs.append((t.session, [t]))
        return runs


@dataclass(frozen=True, slots=True)
class Dataset:
    """A loaded benchmark.

    Attributes
    ----------
    name : str
        ``"locomo"``, ``"knowme"``, ``"prefeval"`` or ``"locomo_plus"``.
    conversations : tuple of Conversation
    meta : Mapping
        Loader notes (counts of dropped evidence, options used).
    """

    name: str
    conversations: tuple[Conversation, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_turns(self) -> int:
        """Total turns over all conversations."""
        return sum(len(c.turns) for c in self.conversations)

    @property
    def n_questions(self) -> int:
        """Total questions over all conversations."""
        return sum(len(c.questions) for c in self.conversations)


def strip_questions(conv: Conversation) -> Conversation:
    """The same stream with no questions (used to prove ingestion never sees them).

    Parameters
    ----------
    conv : Conversation

    Returns
    -------
    Conversation
    """
    return replace(conv, questions=())
