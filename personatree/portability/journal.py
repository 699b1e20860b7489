"""Journal events an import accepts: those this version writes and can replay."""

from __future__ import annotations

from typing import Any, Mapping

from ..engine.core import Engine
from ..errors import InputError, PersonaTreeError
from ..export_format import check_time
from ..inputs import check_id


__all__ = ["check_payload"]


# -- journal payloads ---------------------------------------------------------------------
#
# ``rebuild`` replays the journal, so an imported event must carry what its replayer
# reads, with the right types; a forged event would otherwise make every later rebuild
# of the user fail. Keys are checked exactly (the writers' own keys, nothing else), so
# what imports is what this version writes and replays (a consolidation's plan summary
# excepted, see below).


def _payload_keys(payload: Mapping[str, Any], where: str, required: set[str], optional: set[str] | None) -> None:
    """Required keys present; with ``optional`` given, no key outside the two sets."""
    missing = required - set(payload)
    if missing:
        raise InputError(f"{where} has no {', '.join(repr(k) for k in sorted(missing))}")
    extra = set() if optional is None else set(payload) - required - optional
    if extra:
        raise InputError(f"{where} has unknown fields {sorted(extra)}")


def _observation_payload(payload: Mapping[str, Any], where: str, engine: Engine) -> None:
    # ``observe`` and ``delete_observation`` both name one observation, and nothing else.
    _payload_keys(payload, where, {"observation_id"}, set())
    check_id(payload["observation_id"], f"{where}.observation_id", engine.config.limits)


def _forget_payload(payload: Mapping[str, Any], where: str, engine: Engine) -> None:
    _payload_keys(payload, where, {"node_id"}, {"cascade"})
    check_id(payload["node_id"], f"{where}.node_id", engine.config.limits)
    if not isinstance(payload.get("cascade", False), bool):
        raise InputError(f"{where}.cascade must be true or false")


def _consolidate_payload(payload: Mapping[str, Any], where: str, engine: Engine) -> None:
    from pydantic import ValidationError

    from ..config import ConsolidationConfig

    # A consolidation's payload also summarises the plan (counts, digest), which grows
    # with the planner; the replayer reads only ``now`` and ``config``, so only those are pinned.
    _payload_keys(payload, where, {"now"}, None)
    check_time(payload["now"], f"{where}.now")
    raw = payload.get("config")
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}.config must be an object, got {type(raw).__name__}")
    # The replayer keeps the fields this version knows (older exports lack new ones).
    known = {k: v for k, v in raw.items() if k in ConsolidationConfig.model_fields}
    try:
        ConsolidationConfig(**known)
    except (ValidationError, PersonaTreeError, TypeError, ValueError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        detail = f"{'.'.join(map(str, first['loc']))}: {first['msg']}" if first else str(exc)
        raise InputError(f"{where}.config is not a valid consolidation configuration: {detail[:200]}") from None


_PAYLOAD_CHECKS = {
    "observe": _observation_payload,
    "forget": _forget_payload,
    "consolidate": _consolidate_payload,
    "delete_observation": _observation_payload,
}


def check_payload(kind: str, payload: Mapping[str, Any], where: str, engine: Engine) -> None:
    """Refuse a journal event this version could not replay."""
    replayers = engine.replayers
    check = _PAYLOAD_CHECKS.get(kind)
    if check is not None:
        try:
            check(payload, where, engine)
        except InputError as exc:
            raise InputError(str(exc)) from None
        return
    if kind not in replayers:
        known = sorted(set(_PAYLOAD_CHECKS) | set(replayers))
        raise InputError(f"{where}: unknown journal event kind {kind[:40]!r}; this version knows {known}")
