"""Stitch a change-of-mind scenario into a real host stream.

The host is one speaker of a LoCoMo conversation: only that speaker's turns are kept,
as the background chatter of one person's memory. The scenario's statements become
that speaker's turns, each in a session of its own dated between two host sessions
(the midpoint of the gap), spread over the host's calendar: the earlier statements
after sessions ``start``, ``start + 2``, ``start + 4`` … of the kept stream, the change
three sessions after the last of them, and the question after two more host sessions.
Host sessions after the question are left out (the memory holds only what happened
before it was asked), and so are those more than a few sessions before the first
statement (so that a live replay, one consolidation per session, stays affordable).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Sequence

from .scenarios import Scenario, ScenarioError
from .types import Conversation, Question, Turn

__all__ = ["Case", "stitch", "stitch_all", "speaker_stream", "STATEMENT_EVERY", "CHANGE_AFTER", "ASK_AFTER",
           "MAX_LEAD"]

# Host sessions between two earlier statements, between the last of them and the
# change, and between the change and the question. LoCoMo sessions are days to weeks
# apart, so the statements span weeks and the change comes weeks after the last one.
STATEMENT_EVERY = 2
CHANGE_AFTER = 3
ASK_AFTER = 2
# At most this many host sessions before the first statement: enough background to
# bury the scenario, while a live replay (a consolidation per session) stays affordable.
MAX_LEAD = 6


@dataclass(frozen=True, slots=True)
class Case:
    """One scenario stitched into one host stream.

    Attributes
    ----------
    scenario : Scenario
    conversation : Conversation
        The stream (host turns and scenario turns, in time order) and its one question,
        whose gold evidence is the change turn.
    statement_ids : tuple of str
        Turn ids of the earlier statements, oldest first.
    change_id : str
        Turn id of the change.
    host : str
        ``"<conversation id>/<speaker>"``.
    """

    scenario: Scenario
    conversation: Conversation
    statement_ids: tuple[str, ...]
    change_id: str
    host: str

    @property
    def labels(self) -> dict[str, str]:
        """``{turn id: "old" | "new"}`` for the scenario's turns."""
        out = {t: "old" for t in self.statement_ids}
        out[self.change_id] = "new"
        return out


def speaker_stream(host: Conversation, speaker: str) -> list[list[Turn]]:
    """The host's sessions restricted to one speaker's turns (empty sessions dropped).

    Parameters
    ----------
    host : Conversation
    speaker : str

    Returns
    -------
    list of list of Turn
        Sessions in order.
    """
    return [[t for t in turns if t.speaker == speaker] for _, turns in host.sessions()
            if any(t.speaker == speaker for t in turns)]


def _between(sessions: Sequence[Sequence[Turn]], after: int) -> datetime:
    # The midpoint of the gap after session `after` (1-based count of sessions before).
    end = sessions[after - 1][-1].at
    if after < len(sessions):
        nxt = sessions[after][0].at
        if nxt > end:
            return end + (nxt - end) / 2
    return end + timedelta(hours=12)


def stitch(scenario: Scenario, host: Conversation, speaker: str, *, start: int, case_id: str,
           first: int = 0) -> Case:
    """Insert ``scenario`` into ``speaker``'s stream of ``host``.

    Parameters
    ----------
    scenario : Scenario
    host : Conversation
        A LoCoMo conversation.
    speaker : str
        One of its two speakers: the person of the memory.
    start : int
        Host sessions before the first statement (at least 1), counted from ``first``.
    case_id : str
        Id of the resulting conversation (the memory's user id).
    first : int
        Host sessions left out at the start of the speaker's stream.

    Returns
    -------
    Case

    Raises
    ------
    ScenarioError
        When the host stream has too few sessions for the scenario from ``start``.
    """
    sessions = speaker_stream(host, speaker)[first:]
    n_old = len(scenario.statements)
    afters = [start + STATEMENT_EVERY * j for j in range(n_old)]
    afters.append(afters[-1] + CHANGE_AFTER)
    last = afters[-1] + ASK_AFTER  # host sessions kept
    if start < 1 or last > len(sessions):
        raise ScenarioError(f"host {host.id}/{speaker} has {len(sessions)} sessions; the scenario needs "
                            f"{last} from start {start}", scenario=scenario.id)
    texts = [s.text for s in scenario.statements] + [scenario.change.text]
    inserted: list[Turn] = []
    ids: list[str] = []
    for j, (after, text) in enumerate(zip(afters, texts)):
        tid = f"S{j + 1}" if j < n_old else "CHANGE"
        ids.append(tid)
        inserted.append(Turn(tid, speaker, text, _between(sessions, after), f"{case_id}/scenario-{j + 1}", "user"))
    history = [t for s in sessions[:last] for t in s]
    asked = _between(sessions, last)
    turns = sorted(history + inserted, key=lambda t: t.at)
    q = Question(id="question", text=scenario.question, category=scenario.split, evidence=(ids[-1],), at=asked)
    meta = {"host": host.id, "speaker": speaker, "first": first, "start": start, "scenario": scenario.id,
            "split": scenario.split, "kind": scenario.kind}
    conv = Conversation(case_id, tuple(turns), (q,), meta)
    return Case(scenario, conv, tuple(ids[:-1]), ids[-1], f"{host.id}/{speaker}")


def stitch_all(scenarios: Sequence[Scenario], hosts: Sequence[Conversation], *, seed: int = 0) -> list[Case]:
    """Stitch every scenario into a host speaker, spreading scenarios over hosts.

    Scenario ``i`` goes to host ``i mod len(hosts)``; successive rounds over the hosts
    alternate between their two speakers. Where the case starts in the host's calendar,
    and how many host sessions (1 to :data:`MAX_LEAD`) come before the first statement,
    are drawn from a generator seeded by ``seed`` and the scenario id. The host and the
    speaker depend on the scenario's position in ``scenarios``: one split run alone
    (``--split heldout``) stitches its scenarios into other hosts than the whole file
    does, so compare figures of runs over the same scenarios.

    Parameters
    ----------
    scenarios : sequence of Scenario
    hosts : sequence of Conversation
        LoCoMo conversations (``meta`` names ``speaker_a`` and ``speaker_b``).
    seed : int

    Returns
    -------
    list of Case

    Raises
    ------
    ScenarioError
        When there is no host or a host is too short for a scenario.
    """
    if not hosts:
        raise ScenarioError("no host conversation to stitch into")
    out: list[Case] = []
    for i, sc in enumerate(scenarios):
        host = hosts[i % len(hosts)]
        which = "speaker_a" if (i // len(hosts)) % 2 == 0 else "speaker_b"
        speaker = str(host.meta.get(which) or "")
        sessions = speaker_stream(host, speaker)
        span = STATEMENT_EVERY * (len(sc.statements) - 1) + CHANGE_AFTER + ASK_AFTER
        rng = random.Random(f"{seed}:{sc.id}")
        if len(sessions) - span < 1:
            raise ScenarioError(f"host {host.id}/{speaker} is too short ({len(sessions)} sessions)", scenario=sc.id)
        start = rng.randint(1, min(len(sessions) - span, MAX_LEAD))
        # Which part of the host's calendar the case uses: any, not only its opening.
        first = rng.randint(0, len(sessions) - span - start)
        out.append(stitch(sc, host, speaker, start=start, first=first, case_id=f"faith-{sc.id}"))
    return out
