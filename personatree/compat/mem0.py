"""Mem0's ``Memory`` over a PersonaTree store: ``from mem0 import Memory`` becomes
``from personatree.compat.mem0 import Memory``.

The calls and the shapes of their results are Mem0's (OSS ``Memory``): ``add``,
``search``, ``get_all``, ``get``, ``update``, ``delete``, ``delete_all``, ``history``,
``reset`` and ``from_config``, with ``user_id`` / ``agent_id`` / ``run_id`` given as
arguments or inside ``filters``, messages as a string, one message or a list of
``{"role", "content"}``, ``limit`` (or ``top_k``), and results as ``{"results": [{"id",
"memory", "hash", "metadata", "score", "created_at", "updated_at", "user_id"...}]}``.

What differs, because PersonaTree keeps an evidence tree rather than a list of facts:

* **A memory is a node of the tree.** ``add`` records the interaction verbatim in the
  user's log and returns the statements its judge read from it (the *leaves*, event
  ``"ADD"``); consolidation (``PersonaTree.consolidate``) later turns recurring
  evidence into patterns and claims, which ``get_all`` and ``search`` return too, each
  with ``level`` (``leaf`` / ``mid`` / ``root``), ``schema_type``, ``confidence`` and,
  for a pattern or claim, ``support`` (how much evidence it rests on). ``infer=False``
  changes nothing: the messages are always kept verbatim and read by the judge.
* **The tree is per user.** ``user_id`` names the tree; without it, ``agent_id`` (then
  ``run_id``) does. An ``agent_id`` or ``run_id`` given with a ``user_id`` is stored with
  the observation (the run as its session) and narrows reads to the evidence of those
  observations, and to the patterns and claims that evidence supports.
* **update is a new observation.** ``update(memory_id, data)`` records ``data`` as a new
  statement of the memory's user (its metadata names the memory it updates); the old
  evidence stays, as history: ``get(memory_id)`` still returns it, ``history`` lists
  the update, and the tree weighs old and new evidence (a reversal shows as a
  conflict). The result lists the new memories it made (event ``"UPDATE"``).
* **delete of a leaf vs a claim.** Deleting a leaf removes that statement and withdraws
  its evidence from the pattern it supported (a pattern left with no evidence goes
  too); the verbatim message stays in the log. Deleting a pattern or claim removes the
  claim only: its evidence stays and may form it again at the next consolidation
  (``cascade=True`` removes the evidence below it too). ``delete_all`` with a
  ``run_id`` or ``agent_id`` deletes those observations and everything read from them;
  with only a user, the user's whole tree and log.
* **No other stores.** ``from_config`` takes ``path`` (a SQLite file or store URL),
  ``personatree`` (a :class:`~personatree.config.PersonaTreeConfig`) and Mem0's ``llm``
  block (the LLM judge); ``vector_store``, ``embedder`` and ``graph_store`` are refused
  with a :class:`~personatree.errors.ConfigError`. Missing ids raise
  :class:`~personatree.errors.UnknownNodeError` (``get`` returns ``None``, like Mem0),
  bad arguments :class:`~personatree.errors.InputError` (a ``ValueError``, as Mem0's).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..api import PersonaTree
from ..errors import InputError, NotFoundError, UnknownNodeError, UnknownUserError
from ..types import Edge, EdgeKind, Node, Observation
from .mem0_items import RESERVED, Scope, caller_metadata, matches, memory_item, scope_of, tree_options

__all__ = ["Memory"]

#: A node to return, its similarity score (searches only) and whether it is archived.
_Row = tuple[Node, "float | None", bool]
_UPDATED, _DELETED = "Memory updated successfully!", "Memory deleted successfully!"
_DELETED_ALL = "Memories deleted successfully!"


def _limit(limit: object, top_k: object) -> int:
    value = top_k if top_k is not None else limit
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError("limit (top_k) must be a positive integer")
    return value


class Memory:
    """Mem0's ``Memory`` interface over a :class:`~personatree.api.PersonaTree`.

    Parameters
    ----------
    config : Mapping, optional
        As :meth:`from_config` takes it; default: a SQLite file ``personatree.db``.
    tree : PersonaTree, optional
        An open tree to use instead (it is not closed by :meth:`close`).
    """

    def __init__(self, config: Mapping[str, Any] | None = None, *, tree: PersonaTree | None = None) -> None:
        if tree is not None and config:
            raise InputError("give a config or a tree, not both")
        if tree is None:
            path, cfg = tree_options(config or {})
            tree = PersonaTree.open(path, cfg)
            self._owns = True
        else:
            self._owns = False
        self.tree = tree
        # node id → tree user, learned as ids are handed out (Mem0's calls by id name no user).
        self._owner: dict[str, str] = {}

    @classmethod
    def from_config(cls, config_dict: Mapping[str, Any]) -> "Memory":
        """A Memory from a configuration dictionary (see :func:`~.mem0_items.tree_options`).

        Raises
        ------
        ConfigError
        """
        return cls(config_dict or {"path": "personatree.db"})

    def close(self) -> None:
        """Close the tree (unless it was handed in)."""
        if self._owns:
            self.tree.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------

    def add(
        self,
        messages: str | Mapping[str, Any] | Sequence[Mapping[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        filters: Mapping[str, Any] | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        """Record an interaction; return the memories (leaves) read from it.

        Returns
        -------
        dict
            ``{"results": [{"id", "memory", "event": "ADD", "metadata", "level",
            "schema_type", "action", "pattern"}...]}``; empty for an interaction already
            recorded.

        Raises
        ------
        InputError
            For bad messages or metadata, no id, ``memory_type`` or ``prompt``.
        """
        if memory_type is not None or prompt is not None:
            raise InputError("memory_type and prompt are not supported: PersonaTree's judge reads every interaction")
        scope = scope_of(user_id, agent_id, run_id, filters)
        return {"results": self._observe(scope, messages, metadata, "ADD")}

    def _observe(self, scope: Scope, messages: object, metadata: Mapping[str, Any] | None, event: str,
                 extra: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        if isinstance(messages, Mapping):
            messages = [messages]
        meta = dict(metadata or {})
        taken = RESERVED & set(meta)
        if taken:
            raise InputError(f"metadata keys {sorted(taken)} are reserved by the Mem0 facade")
        meta.update({k: v for k, v in (("agent_id", scope.agent_id), ("run_id", scope.run_id)) if v is not None})
        meta.update(extra or {})
        rep = self.tree.observe(scope.tree_user, messages, session_id=scope.run_id, metadata=meta)  # type: ignore[arg-type]
        caller = {k: v for k, v in meta.items() if k not in RESERVED}
        out = []
        for d in rep.decisions:
            self._owner[d.leaf_id] = scope.tree_user
            out.append({"id": d.leaf_id, "memory": d.content, "event": event, "metadata": caller, "level": "leaf",
                        "schema_type": d.schema_type, "action": d.action, "pattern": d.target})
        return out

    def update(self, memory_id: str, data: str, metadata: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Record ``data`` as a new statement of the memory's user; the old evidence stays.

        Returns
        -------
        dict
            ``{"message": ..., "results": [the new memories, event "UPDATE"]}``.

        Raises
        ------
        UnknownNodeError, InputError
        """
        if not isinstance(data, str) or not data.strip():
            raise InputError("data must be a non-empty string")
        user, node = self._find(memory_id)
        obs = self._source(user, node)
        old = obs.metadata if obs is not None else {}
        scope = Scope(user, None, old.get("agent_id"), old.get("run_id"))
        merged = {**caller_metadata(obs), **dict(metadata or {})}
        results = self._observe(scope, data, merged, "UPDATE", {"updates": memory_id})
        for r in results:
            r["previous_id"] = memory_id
        return {"message": _UPDATED, "results": results}

    def delete(self, memory_id: str, *, cascade: bool = False) -> dict[str, str]:
        """Delete one memory (see the module notes for a leaf vs a claim).

        Raises
        ------
        UnknownNodeError
        """
        user, _node = self._find(memory_id)
        self.tree.forget(user, memory_id, cascade=cascade)
        self._owner.pop(memory_id, None)
        return {"message": _DELETED}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, str]:
        """Delete the memories of a user, or of an agent or run (their observations and
        everything read from them).

        Raises
        ------
        InputError
            With no id.
        """
        scope = scope_of(user_id, agent_id, run_id, None)
        if scope.tree_user not in self.tree.users():
            return {"message": _DELETED_ALL}
        if not scope.narrowed:
            self.tree.delete_user(scope.tree_user)
        else:
            for obs in self.tree.store.observations(scope.tree_user):
                if matches(scope, obs):
                    self.tree.delete_observation(scope.tree_user, obs.id)
        self._owner = {k: v for k, v in self._owner.items() if v != scope.tree_user}
        return {"message": _DELETED_ALL}

    def reset(self) -> None:
        """Delete every user's memories in the store."""
        for user in self.tree.users():
            try:
                self.tree.delete_user(user)
            except UnknownUserError:
                continue  # deleted meanwhile by another process
        self._owner.clear()

    # -- reading ------------------------------------------------------------------------

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory, or ``None`` when no user has it."""
        try:
            user, node = self._find(memory_id)
        except (NotFoundError, InputError):
            return None
        return self._items(user, [(node, None, node.id in self._archived(user))])[0]

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = 100,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """The memories of a scope, oldest first: the tree's leaves, patterns and claims,
        and the archived leaves (``"archived": true``)."""
        scope = scope_of(user_id, agent_id, run_id, filters)
        n = _limit(limit, top_k)
        if scope.tree_user not in self.tree.users():
            return {"results": []}
        nodes: list[_Row] = [(x, None, False) for x in self.tree.nodes(scope.tree_user)]
        nodes += [(x, None, True) for x in self.tree.store.archive(scope.tree_user)]
        nodes.sort(key=lambda t: (t[0].t_first, t[0].id))
        return {"results": self._items(scope.tree_user, self._inside(scope, nodes))[:n]}

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = 100,
        top_k: int | None = None,
        threshold: float | None = None,
        rerank: bool = False,
    ) -> dict[str, Any]:
        """Memories of a scope most similar to ``query`` (cosine ``score``), best first.

        ``rerank`` is accepted for Mem0's callers and changes nothing: there is no
        reranker; ``recall`` is PersonaTree's query-conditioned retrieval.

        Raises
        ------
        QueryError, InputError
        """
        scope = scope_of(user_id, agent_id, run_id, filters)
        n = _limit(limit, top_k)
        if threshold is not None and (not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0):
            raise InputError("threshold must be a number between 0 and 1")
        if scope.tree_user not in self.tree.users():
            return {"results": []}
        stats = self.tree.stats(scope.tree_user)
        # Filters apply after similarity: a narrowed search ranks everything first.
        k = max(1, sum(int(stats.get(key, 0)) for key in ("leaves", "mids", "roots", "archived_leaves"))) \
            if scope.narrowed else n
        hits = self.tree.search(scope.tree_user, query, k=k)
        if threshold is not None:
            hits = [h for h in hits if h.score >= threshold]
        graph = self.tree.graph(scope.tree_user)
        archived = {h.node_id for h in hits if h.archived}
        arch_nodes = {x.id: x for x in self.tree.store.archive(scope.tree_user, sorted(archived))} if archived else {}
        rows: list[_Row] = [(arch_nodes[h.node_id] if h.archived else graph.node(h.node_id), h.score, h.archived)
                            for h in hits if h.node_id in arch_nodes or h.node_id in graph]
        return {"results": self._items(scope.tree_user, self._inside(scope, rows))[:n]}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The changes of a memory, oldest first: its ``ADD``, each ``UPDATE`` (the new
        statement recorded by :meth:`update`) and its ``DELETE``. A deleted memory has
        no ``ADD`` entry: what is forgotten leaves no copy in the store.

        Raises
        ------
        UnknownNodeError
            When no user has or had the memory.
        """
        user, node = self._find(memory_id, deleted=True)
        out: list[dict[str, Any]] = []
        if node is not None:
            out.append(self._change(memory_id, None, node.content, "ADD", node.t_first.isoformat()))
        for obs in self.tree.store.observations(user):
            if obs.metadata.get("updates") == memory_id:
                text = "\n".join(m.content for m in obs.messages if m.role == "user")
                out.append(self._change(memory_id, node.content if node else None, text, "UPDATE", obs.at.isoformat()))
        for ev in self.tree.store.events(user):
            if ev.kind == "forget" and ev.payload.get("node_id") == memory_id:
                out.append(self._change(memory_id, None, None, "DELETE", ev.at.isoformat(), deleted=True))
        for i, entry in enumerate(out, start=1):
            entry["id"] = i
        return out

    # -- helpers ------------------------------------------------------------------------

    @staticmethod
    def _change(memory_id: str, old: str | None, new: str | None, action: str, at: str,
                deleted: bool = False) -> dict[str, Any]:
        return {"id": 0, "memory_id": memory_id, "previous_value": old, "new_value": new, "action": action,
                "created_at": at, "updated_at": at if action != "ADD" else None, "is_deleted": int(deleted)}

    def _archived(self, user: str) -> set[str]:
        return set(self.tree.store.archive_ids(user))

    def _find(self, memory_id: str, *, deleted: bool = False) -> tuple[str, Any]:
        """(tree user, node) of an id; with ``deleted``, a forgotten node gives (user, None)."""
        if not isinstance(memory_id, str) or not memory_id:
            raise InputError("memory_id must be a non-empty string")
        known = self._owner.get(memory_id)
        users = ([known] if known else []) + [u for u in self.tree.users() if u != known]
        for user in users:
            node = self._node(user, memory_id)
            if node is not None:
                self._owner[memory_id] = user
                return user, node
        if deleted:
            for user in users:
                if any(e.kind == "forget" and e.payload.get("node_id") == memory_id for e in self.tree.store.events(user)):
                    return user, None
        raise UnknownNodeError(f"no memory with id {memory_id!r}")

    def _node(self, user: str, memory_id: str) -> Node | None:
        try:
            return self.tree.node(user, memory_id)
        except (NotFoundError, InputError):
            pass
        found = self.tree.store.archive(user, [memory_id]) if memory_id in self._archived(user) else []
        return found[0] if found else None

    def _source(self, user: str, node: Node) -> Observation | None:
        """The observation a leaf was read from (``None`` for a pattern or claim)."""
        if not node.provenance:
            return None
        found = self.tree.store.observations(user, [node.provenance[0].observation_id])
        return found[0] if found else None

    def _inside(self, scope: Scope, nodes: Sequence[_Row]) -> list[_Row]:
        """The nodes inside a narrowed scope: leaves of matching observations, and the
        patterns and claims those leaves support."""
        if not scope.narrowed or not nodes:
            return list(nodes)
        user = scope.tree_user
        inside_obs = {o.id for o in self.tree.store.observations(user) if matches(scope, o)}
        graph = self.tree.graph(user)
        keep = {n.id for n in graph.nodes() if any(p.observation_id in inside_obs for p in n.provenance)}
        keep |= {n.id for n, _s, arch in nodes if arch and any(p.observation_id in inside_obs for p in n.provenance)}
        keep |= _ancestors(keep, graph.edges(EdgeKind.SUPPORT))
        return [t for t in nodes if t[0].id in keep]

    def _items(self, user: str, nodes: Iterable[_Row]) -> list[dict[str, Any]]:
        rows = list(nodes)
        wanted = sorted({n.provenance[0].observation_id for n, _s, _a in rows if n.provenance})
        obs = {o.id: o for o in self.tree.store.observations(user, wanted)} if wanted else {}
        out = []
        for n, score, arch in rows:
            self._owner[n.id] = user
            source = obs.get(n.provenance[0].observation_id) if n.provenance else None
            conf = None if arch else self.tree.confidence(user, n.id)
            out.append(memory_item(n, user, conf, source, score=score, archived=arch))
        return out


def _ancestors(ids: set[str], support: Iterable[Edge]) -> set[str]:
    """Every node above ``ids`` along support edges."""
    up: dict[str, list[str]] = {}
    for e in support:
        up.setdefault(e.src, []).append(e.dst)
    out: set[str] = set()
    todo = list(ids)
    while todo:
        for parent in up.get(todo.pop(), []):
            if parent not in out:
                out.add(parent)
                todo.append(parent)
    return out
