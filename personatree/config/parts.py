"""Confidence, insertion and input-limit settings."""

from __future__ import annotations

from pydantic import Field, model_validator

from .frozen import Frozen

__all__ = ["ConfidenceConfig", "InsertionConfig", "InputLimits"]


class ConfidenceConfig(Frozen):
    """Log-odds confidence parameters.

    Attributes
    ----------
    gamma : float
        Evidence scale γ: one unit of ψ moves the logit by γ.
    clip : float
        L: logits are clipped to [−L, L].
    """

    gamma: float = Field(default=0.6, gt=0.0, le=5.0)
    clip: float = Field(default=6.0, gt=0.0, le=50.0)


class InsertionConfig(Frozen):
    """Validator-gated conservative insertion: match = κ·(a·ψ + b·sim).

    Attributes
    ----------
    a, b : float
        Weights of the validator score and of cosine similarity in the match.
    theta_attach : float
        A support match must reach this to attach.
    theta_conflict : float
        ψ ≤ −θ_conflict records a conflict edge and negative evidence.
    min_support_psi : float
        ψ must also reach this to attach, so similarity alone never attaches.
    candidates : int
        How many κ-compatible candidates (by similarity) the validator sees.
    similarity_floor : float
        Candidates below this cosine similarity are not sent to the validator.
    stance_topic_similarity : float
        A leaf of the opposite stance to a mid at least this similar is on its topic
        and is a conflict, whatever the judge said; below it, it is unrelated. The
        default equals ``ConsolidationConfig.member_similarity``, the gate that
        consolidation uses for the same question.
    update_candidates : int
        With a judge that reads changes (an LLM judge whose ``update`` operation is
        not offline), each new statement is shown with this many of the person's
        earlier statements closest to it, said in earlier sessions, and the judge
        says which of them it changes (:mod:`personatree.change_links`).
    update_floor : float
        Earlier statements below this cosine with the new one are not shown. Low on
        purpose: a change is often told in other words than what it ends.
    update_specific : bool
        Those cosines are taken with the person's mean statement subtracted (what
        all their statements share, small talk most of all), so the statements
        closest to what is specific to the new one are shown.
    """

    a: float = Field(default=0.7, ge=0.0, le=1.0)
    b: float = Field(default=0.3, ge=0.0, le=1.0)
    theta_attach: float = Field(default=0.55, gt=0.0, le=1.0)
    theta_conflict: float = Field(default=0.35, gt=0.0, le=1.0)
    min_support_psi: float = Field(default=0.3, gt=0.0, le=1.0)
    candidates: int = Field(default=5, ge=1, le=100)
    similarity_floor: float = Field(default=0.35, ge=-1.0, le=1.0)
    stance_topic_similarity: float = Field(default=0.45, ge=-1.0, le=1.0)
    update_candidates: int = Field(default=12, ge=1, le=50)
    update_floor: float = Field(default=0.1, ge=-1.0, le=1.0)
    update_specific: bool = True

    @model_validator(mode="after")
    def _similarity_cannot_attach_alone(self) -> "InsertionConfig":
        # With ψ ≤ 0 the best possible match is b·1; it must stay below θ_attach.
        if self.b >= self.theta_attach:
            raise ValueError("b must be below theta_attach so that similarity alone never attaches")
        return self


class InputLimits(Frozen):
    """Limits on what one call accepts (bigger inputs get a typed error).

    Attributes
    ----------
    max_message_chars : int
        Longest accepted message.
    max_messages : int
        Most messages in one observation.
    max_id_chars : int
        Longest user, session, observation or node id.
    """

    max_message_chars: int = Field(default=32_000, ge=1)
    max_messages: int = Field(default=512, ge=1)
    max_id_chars: int = Field(default=256, ge=8)
