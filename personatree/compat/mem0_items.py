"""The parts of :class:`personatree.compat.mem0.Memory` that shape Mem0's values: scopes
(``user_id`` / ``agent_id`` / ``run_id`` and ``filters``), memory items, metadata
filters and the configuration dictionary of ``Memory.from_config``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Mapping

from ..config import PersonaTreeConfig
from ..errors import ConfigError, InputError
from ..types import Level, Node, Observation

__all__ = ["Scope", "scope_of", "memory_item", "matches", "tree_options", "RESERVED"]

#: Observation metadata keys the facade writes (the caller's metadata may not use them).
RESERVED = frozenset({"agent_id", "run_id", "updates", "mem0"})
_ENTITY = ("user_id", "agent_id", "run_id")
_AGENT_PREFIX, _RUN_PREFIX = "agent:", "run:"
#: Filter operators understood on metadata values.
_OPERATORS = frozenset({"eq", "ne", "in", "nin", "contains", "icontains"})


@dataclass(frozen=True)
class Scope:
    """Whose tree a call reads or writes, and what narrows it.

    Attributes
    ----------
    tree_user : str
        The PersonaTree user: ``user_id``, else ``"agent:<agent_id>"``, else
        ``"run:<run_id>"``.
    agent_id, run_id : str or None
        Narrow the tree to the evidence of observations added with them.
    where : dict
        Metadata filters (key → value or ``{operator: value}``).
    """

    tree_user: str
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    where: dict[str, Any] = field(default_factory=dict)

    @property
    def narrowed(self) -> bool:
        """Whether anything beyond the tree's user narrows the call."""
        return bool(self.where) or (self.agent_id is not None and not self.tree_user.startswith(_AGENT_PREFIX)) \
            or (self.run_id is not None and not self.tree_user.startswith(_RUN_PREFIX))


def _entity(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{name} must be a non-empty string")
    return value.strip()


def scope_of(user_id: object, agent_id: object, run_id: object, filters: object) -> Scope:
    """The scope of a call from Mem0's arguments; an id may come as an argument or in
    ``filters`` (Mem0's newer form), not as two different values.

    Raises
    ------
    InputError
        When no id is given, an id is not a non-empty string, the two places disagree,
        or ``filters`` uses a logical operator (``AND``/``OR``/``NOT``).
    """
    if filters is not None and not isinstance(filters, Mapping):
        raise InputError(f"filters must be a mapping, got {type(filters).__name__}")
    where = dict(filters or {})
    ids: dict[str, str | None] = {}
    for name, arg in zip(_ENTITY, (user_id, agent_id, run_id)):
        given, in_filter = _entity(arg, name), _entity(where.pop(name, None), f"filters[{name!r}]")
        if given and in_filter and given != in_filter:
            raise InputError(f"{name}={given!r} and filters[{name!r}]={in_filter!r} disagree")
        ids[name] = given or in_filter
    for key in where:
        if key in ("AND", "OR", "NOT"):
            raise InputError(f"filter operator {key} is not supported; give key: value filters (all must match)")
        if key in RESERVED:
            raise InputError(f"filters[{key!r}] is not a metadata key")
    uid, aid, rid = ids["user_id"], ids["agent_id"], ids["run_id"]
    if uid is None and aid is None and rid is None:
        raise InputError("at least one of 'user_id', 'agent_id' or 'run_id' must be provided")
    tree_user = uid or (f"{_AGENT_PREFIX}{aid}" if aid else f"{_RUN_PREFIX}{rid}")
    return Scope(tree_user, uid, aid, rid, where)


def _one(actual: object, cond: object, key: str) -> bool:
    if not isinstance(cond, Mapping):
        return (cond == "*" and actual is not None) or actual == cond
    for op, value in cond.items():
        if op not in _OPERATORS:
            raise InputError(f"filters[{key!r}] uses unknown operator {op!r}; use one of {sorted(_OPERATORS)}")
        ok = {
            "eq": lambda: actual == value,
            "ne": lambda: actual != value,
            "in": lambda: isinstance(value, (list, tuple)) and actual in value,
            "nin": lambda: isinstance(value, (list, tuple)) and actual not in value,
            "contains": lambda: isinstance(actual, str) and isinstance(value, str) and value in actual,
            "icontains": lambda: isinstance(actual, str) and isinstance(value, str) and value.lower() in actual.lower(),
        }[op]()
        if not ok:
            return False
    return True


def matches(scope: Scope, obs: Observation) -> bool:
    """Whether an observation is inside ``scope`` (its agent, run and metadata filters)."""
    meta = obs.metadata
    if scope.agent_id is not None and not scope.tree_user.startswith(_AGENT_PREFIX) \
            and meta.get("agent_id") != scope.agent_id:
        return False
    if scope.run_id is not None and not scope.tree_user.startswith(_RUN_PREFIX) and meta.get("run_id") != scope.run_id:
        return False
    return all(_one(meta.get(k), cond, k) for k, cond in scope.where.items())


def _iso(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def caller_metadata(obs: Observation | None) -> dict[str, Any]:
    """The metadata the caller gave ``add`` (without the keys the facade writes)."""
    return {} if obs is None else {k: v for k, v in obs.metadata.items() if k not in RESERVED}


def memory_item(node: Node, tree_user: str, confidence: float | None, obs: Observation | None, *,
                score: float | None = None, archived: bool = False) -> dict[str, Any]:
    """A node as a Mem0 memory: ``id``, ``memory``, ``hash``, ``metadata``,
    ``created_at``, ``updated_at``, the entity ids, and PersonaTree's own fields
    (``level``, ``schema_type``, ``confidence``, ``support``, ``archived``).

    A leaf's ``metadata`` is what ``add`` was given with the observation it was read
    from; a pattern's or claim's is empty. ``confidence`` is ``None`` for an archived
    leaf (outside the tree, it has no current confidence).
    """
    meta = obs.metadata if obs is not None else {}
    item: dict[str, Any] = {
        "id": node.id,
        "memory": node.content,
        # md5 as Mem0 uses, to compare texts; not a security measure.
        "hash": hashlib.md5(node.content.encode("utf-8"), usedforsecurity=False).hexdigest(),
        "metadata": caller_metadata(obs),
        "created_at": _iso(node.t_first),
        "updated_at": None if node.t_last == node.t_first else _iso(node.t_last),
    }
    if tree_user.startswith(_AGENT_PREFIX):
        item["agent_id"] = tree_user[len(_AGENT_PREFIX):]
    elif tree_user.startswith(_RUN_PREFIX):
        item["run_id"] = tree_user[len(_RUN_PREFIX):]
    else:
        item["user_id"] = tree_user
    for key in ("agent_id", "run_id"):
        if meta.get(key) is not None:
            item[key] = meta[key]
    if score is not None:
        item["score"] = float(score)
    item.update({
        "level": node.level.value,
        "schema_type": node.schema_type,
        "confidence": None if confidence is None else round(float(confidence), 4),
        "support": node.n_support if node.level is not Level.LEAF else None,
        "archived": archived,
    })
    return item


def tree_options(config: Mapping[str, Any]) -> tuple[str, PersonaTreeConfig]:
    """(store path, PersonaTree configuration) of a ``Memory.from_config`` dictionary.

    Keys: ``path`` (a SQLite file or store URL), ``personatree`` (a
    :class:`~personatree.config.PersonaTreeConfig` or its fields), ``llm`` (Mem0's
    ``{"provider", "config": {"model", "api_key", "temperature", "max_tokens",
    "ollama_base_url" | "openai_base_url" | "api_base"}}``: the LLM judge),
    ``history_db_path`` and ``version`` (accepted; history lives in the store).

    Raises
    ------
    ConfigError
        For another key (``vector_store``, ``embedder``, ``graph_store``...: PersonaTree
        keeps its own index and embedder), or a value of the wrong type.
    """
    if not isinstance(config, Mapping):
        raise ConfigError(f"config must be a mapping, got {type(config).__name__}")
    unknown = sorted(set(config) - {"path", "personatree", "llm", "history_db_path", "version"})
    if unknown:
        raise ConfigError(f"config keys {unknown} are not supported: PersonaTree keeps its own store, index and "
                          "embedder; give 'path' (a SQLite file or store URL), 'personatree' and 'llm'")
    path = config.get("path", "personatree.db")
    if not isinstance(path, str) or not path:
        raise ConfigError("config['path'] must be a SQLite file path or a store URL")
    base = config.get("personatree") or {}
    cfg = base if isinstance(base, PersonaTreeConfig) else PersonaTreeConfig(**dict(base))
    llm = config.get("llm")
    if llm is not None:
        cfg = cfg.model_copy(update=_judge_fields(llm, cfg))
    return path, cfg


def _judge_fields(llm: object, cfg: PersonaTreeConfig) -> dict[str, Any]:
    if not isinstance(llm, Mapping) or not isinstance(llm.get("config", {}), Mapping):
        raise ConfigError("config['llm'] must be {'provider': ..., 'config': {'model': ...}}")
    provider, opts = llm.get("provider"), dict(llm.get("config") or {})
    model = opts.pop("model", None)
    if not isinstance(model, str) or not model:
        raise ConfigError("config['llm']['config']['model'] must name a model")
    if isinstance(provider, str) and provider not in ("litellm", "") and not model.startswith(f"{provider}/"):
        model = f"{provider}/{model}"
    kwargs: dict[str, Any] = {}
    for key in ("ollama_base_url", "openai_base_url", "api_base", "base_url"):
        if opts.get(key):
            kwargs["api_base"] = opts.pop(key)
    for key in ("api_key", "max_tokens", "top_p"):
        if key in opts:
            kwargs[key] = opts.pop(key)
    options = dict(cfg.judge_options)
    if "temperature" in opts:
        options["temperature"] = opts.pop("temperature")
    if opts:
        raise ConfigError(f"config['llm']['config'] keys {sorted(opts)} are not supported")
    options["completion_kwargs"] = {**dict(options.get("completion_kwargs") or {}), **kwargs}
    return {"judge": model, "judge_options": options}
