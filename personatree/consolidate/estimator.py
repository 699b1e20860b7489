"""``Consolidator``: the estimator-style planner of one user's consolidation pass.

Parameters go in the constructor; :meth:`Consolidator.plan` reads a graph (never
mutating it) and returns a :class:`~personatree.consolidate.plan.ConsolidationPlan`;
``labels_`` then holds the clustering of the orphans (−1 for noise).

The pass, in order, all read at one ``now``:

1. prune roots whose confidence fell below θ_prune (their mids stay, loose);
2. delete orphan leaves older than T_orphan (their observations stay in the log), and
   repair mids whose support holds both stances (an older tree or an import):
   :func:`~personatree.consolidate.conflicts.separate_stances`;
3. cluster the orphans (HDBSCAN over the mixed distance) and turn each cluster that
   passes the gates of :mod:`~personatree.consolidate.mids` into a mid (its lines
   about the listener, :func:`~personatree.text.about_listener`, stay orphans); a cluster that
   holds both stances or two speakers (:mod:`personatree.speakers`) is split by
   speaker and stance first, one larger than its cohesion allows
   (:func:`~personatree.consolidate.mids.size_cap`) is halved until its parts fit;
   the leftovers are clustered again until a round forms no mid, so the pass ends at a
   fixed point and a second pass at the same ``now`` plans nothing;
4. record the pass's later opposite-stance leaves as conflicts of its new mids
   (:func:`~personatree.consolidate.conflicts.record_conflicts`);
5. merge near-duplicate mids of one type and stance side, and two such mids whose
   claims read the same when their union passes the gates a cluster passes;
6. take changed mids off their roots, and remove roots left asserting fewer than
   ``min_root_mids`` patterns (:func:`~personatree.consolidate.conflicts.retract_changed`);
7. cap each mid at K supporting leaves (counts survive);
8. promote mids that meet the strict criteria of :mod:`~personatree.consolidate.promote`;
9. list decays (information only; decay is lazy and nothing is written for it).

The planner runs the pass on a copy of the graph and records the difference, so
applying a plan does exactly what the plan shows.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from ..confidence import sigmoid
from ..config import ConfidenceConfig, ConsolidationConfig, InsertionConfig
from ..graph import MemoryGraph
from ..ports import Embedder, Judge
from ..render import node_confidence
from ..schema import SchemaRegistry
from ..types import Level, utc
from .bounds import delete_stale_orphans, merge_mids, prune_roots, trim_mids
from .clustering import ClusterParams, cluster_leaves
from .distance import DistanceWeights, type_mismatch
from ..speakers import leaf_speaker
from ..stance import node_group
from .conflicts import record_conflicts, retract_changed, separate_stances
from .formation import form_mid, promote_mids, type_vectors
from .mids import choose_mid_type, coalesce, cohesion, size_cap, unit
from .plan import ClusterReport, ConsolidationPlan, Decay, NewMid, PlanDiff
from .state import graph_diff, graph_digest

__all__ = ["Consolidator"]


class Consolidator:
    """Plans consolidation passes (scikit-learn style: parameters in, ``labels_`` out).

    Parameters
    ----------
    config : ConsolidationConfig
        Thresholds and weights.
    registry : SchemaRegistry
        Schema types and κ.
    judge : Judge
        Writes the summaries of new mids and roots.
    embedder : Embedder, optional
        Embeds the schema examples used to break mid-type ties and to pick root types;
        without one, file order decides.
    confidence : ConfidenceConfig, optional
        Evidence scale γ and logit clip L (default ``ConfidenceConfig()``).
    insertion : InsertionConfig, optional
        How the pass offers its later leaves to its new mids, exactly as live insertion
        offers a new leaf to existing mids (default ``InsertionConfig()``).

    Attributes
    ----------
    labels_ : ndarray of int
        After :meth:`plan`: for each orphan in ``leaf_ids_``, the index of the cluster
        whose new mid it joined, −1 when it stays an orphan (noise or rejected cluster).
    leaf_ids_ : tuple of str
        The orphans clustered, in the order of ``labels_`` (sorted by time, then id).
    groups_ : ndarray of int
        The stance side (+1 or −1, :func:`personatree.stance.group_of`) of each orphan,
        times one plus the index of its speaker among the orphans' speakers in name
        order (the memory's own user first): equal codes, one speaker and one side.
    method_ : str
        ``"exact"``, ``"knn"`` or ``"none"``.
    """

    def __init__(
        self,
        config: ConsolidationConfig,
        registry: SchemaRegistry,
        judge: Judge,
        *,
        embedder: Embedder | None = None,
        confidence: ConfidenceConfig | None = None,
        insertion: InsertionConfig | None = None,
    ) -> None:
        self.config = config
        self.registry = registry
        self.judge = judge
        self.embedder = embedder
        self.confidence = confidence or ConfidenceConfig()
        self.insertion = insertion or InsertionConfig()
        self.labels_: np.ndarray = np.empty(0, dtype=np.int64)
        self.leaf_ids_: tuple[str, ...] = ()
        self.groups_: np.ndarray = np.empty(0, dtype=np.int64)
        self.method_ = "none"

    def get_params(self) -> dict[str, Any]:
        """The constructor's configuration as plain data."""
        return {"config": self.config.model_dump(), "confidence": self.confidence.model_dump(),
                "insertion": self.insertion.model_dump()}

    def _cluster_params(self) -> ClusterParams:
        c = self.config
        return ClusterParams(
            min_cluster_size=c.n_min, min_samples=c.min_samples or c.n_min, max_exact=c.max_exact,
            knn=c.knn, reduced_dim=c.reduced_dim, seed=c.seed, selection_epsilon=c.selection_epsilon,
            exact_memory_mb=c.exact_memory_mb,
        )

    def plan(self, graph: MemoryGraph, now: datetime, *, base_version: int = 0) -> ConsolidationPlan:
        """Plan one pass over ``graph`` at ``now`` (the graph is only read).

        Parameters
        ----------
        graph : MemoryGraph
            One user's tree.
        now : datetime
            Logical time of the pass.
        base_version : int
            The store version ``graph`` was loaded at (checked when applying).

        Returns
        -------
        ConsolidationPlan
        """
        now = utc(now)
        cfg = self.config
        digest = graph_digest(graph)
        g = graph.copy()
        prunes = prune_roots(g, self.registry, now, cfg.theta_prune)
        separate_stances(g, self.registry, self.confidence)
        clusters, new_mids = self._form_mids(g, now)
        # An orphan goes stale only after it was offered to clustering: a history
        # imported in one go has never been, and dropping its old leaves first would
        # leave the tree of a long import almost empty (everything in the archive).
        deletions = delete_stale_orphans(g, now, cfg.t_orphan_days)
        merges, merge_prunes = merge_mids(g, self.registry, self.judge, cfg.merge_similarity, self.confidence.clip,
                                          ratio=cfg.coalesce_ratio, formable=self._formable)
        merge_prunes += retract_changed(g, now, cfg, self.registry, self.confidence)
        trims = trim_mids(g, cfg.k_leaves)
        promotions = promote_mids(g, now, cfg, self.registry, self.judge, self.confidence,
                                  type_vectors(self.embedder, self.registry, Level.ROOT))
        decays = []
        for n in sorted(list(g.nodes(Level.MID)) + list(g.nodes(Level.ROOT)), key=lambda n: n.id):
            stored, current = sigmoid(n.logit), node_confidence(n, self.registry, now)
            if stored - current >= cfg.decay_report:
                decays.append(Decay(n.id, n.level.value, stored, current))
        de, dn, un, ue = graph_diff(graph, g)
        return ConsolidationPlan(
            user_id=graph.user_id, now=now, base_version=base_version, digest=digest, seed=cfg.seed,
            method=self.method_, clusters=tuple(clusters), new_mids=tuple(new_mids),
            promotions=tuple(promotions), merges=tuple(merges), decays=tuple(decays),
            deletions=tuple(deletions), trims=tuple(trims), prunes=tuple(prunes + merge_prunes),
            diff=PlanDiff(de, dn, un, ue),
        )

    def _form_mids(self, g: MemoryGraph, now: datetime) -> tuple[list[ClusterReport], list[NewMid]]:
        cfg = self.config
        orphans = sorted((n for n in g.orphans(Level.LEAF) if n.embedding is not None),
                         key=lambda n: (n.t_first, n.id))
        self.leaf_ids_ = tuple(n.id for n in orphans)
        self.labels_ = np.full(len(orphans), -1, dtype=np.int64)
        self.method_ = "none"
        if len(orphans) < cfg.n_min:
            return [], []
        emb = np.stack([np.asarray(n.embedding, dtype=np.float32) for n in orphans])
        types = sorted({n.schema_type for n in orphans})
        codes = np.array([types.index(n.schema_type) for n in orphans], dtype=np.int64)
        t0 = orphans[0].t_first
        days = np.array([(n.t_first - t0).total_seconds() / 86400.0 for n in orphans])
        mismatch = type_mismatch(types, self.registry)
        weights, params = DistanceWeights.from_config(cfg), self._cluster_params()
        mid_vectors = type_vectors(self.embedder, self.registry, Level.MID)
        # One code per speaker and stance side: a cluster is split by both before a
        # mid forms (sides ±1 for the memory's own user, ±2, ±3, … for named speakers).
        names = sorted({leaf_speaker(n) or "" for n in orphans})
        groups = np.array([node_group(n) * (1 + names.index(leaf_speaker(n) or "")) for n in orphans],
                          dtype=np.int64)
        self.groups_ = groups
        reports: list[ClusterReport] = []
        made: dict[int, NewMid] = {}
        founders: dict[int, np.ndarray] = {}  # cluster index -> positions of its mid's leaves

        def kind(pos: np.ndarray) -> str | None:
            return choose_mid_type([orphans[i].schema_type for i in pos.tolist()], self.registry,
                                   unit(emb[pos].mean(axis=0)), mid_vectors)[0]

        def form(pos: np.ndarray, index: int, rnd: int) -> bool:
            report, mid, kept = form_mid(g, [orphans[i] for i in pos.tolist()], emb[pos], index, rnd, now,
                                         cfg, self.registry, self.judge, self.confidence, mid_vectors)
            if index == len(reports):
                reports.append(report)
            else:
                reports[index] = report
            if mid is None:
                return False
            made[index], founders[index] = mid, pos[kept]
            self.labels_[pos[kept]] = index
            return True

        remaining = np.arange(len(orphans))
        for rnd in range(1, cfg.max_rounds + 1):
            if remaining.shape[0] < cfg.n_min:
                break
            sub, method = cluster_leaves(emb[remaining], codes[remaining], days[remaining],
                                         mismatch, weights, params)
            if rnd == 1:
                self.method_ = method
            kinds = [kind(remaining[sub == k]) for k in range(int(sub.max(initial=-1)) + 1)]
            sub = coalesce(emb[remaining], sub, kinds, cfg.coalesce_ratio, cfg.min_cohesion)
            formed = False
            for k in range(int(sub.max(initial=-1)) + 1):
                members = remaining[sub == k]
                # Leftovers of a pattern found in an earlier round rejoin its mid.
                host = None if rnd == 1 else self._host(emb, members, kind(members), rnd, made, founders,
                                                        reports, groups)
                if host is not None:
                    g.remove_node(made[host].id)
                    union = np.concatenate([founders[host], members])
                    if form(union, host, rnd):
                        formed = True
                        continue
                    form(founders[host], host, reports[host].round)  # the union failed: restore
                formed = self._form_or_split(members, rnd, form, reports, emb, codes, days,
                                             mismatch, weights, params) or formed
            remaining = remaining[self.labels_[remaining] < 0]
            if not formed:
                break
        mids = record_conflicts(g, [made[i] for i in sorted(made)], orphans, emb, now, self.registry,
                                self.confidence, self.judge, self.insertion)
        return reports, mids

    def _form_or_split(self, members: np.ndarray, rnd: int, form: Any, reports: list[ClusterReport],
                       emb: np.ndarray, codes: np.ndarray, days: np.ndarray, mismatch: np.ndarray,
                       weights: DistanceWeights, params: Any, depth: int = 0) -> bool:
        """Form a mid from ``members``; if the cluster is too loose, split it and try its parts.

        HDBSCAN's densities are global: in a small tree one loose cluster can hold two
        tight patterns (hiking and quiet hotels). Clustering the members on their own
        rescales the density and separates them, so a rejected cluster of at least
        2·n_min leaves is split once or twice before its leaves stay orphans.

        Two rules come first. A cluster holding both stance sides is one topic seen
        from two sides, never one pattern, and one holding two speakers' lines is two
        people: each speaker's side is tried on its own. A cluster
        larger than :func:`size_cap` allows at its cohesion is many patterns: it is
        halved (:func:`bisect`, linear in its size) until the parts fit, at most
        ``max_split_depth`` times.
        """
        cfg = self.config
        sides = self.groups_[members]
        if (sides != sides[0]).any():
            formed = False
            # Each speaker in turn, its +1 side first.
            for side in sorted(set(sides.tolist()), key=lambda c: (abs(c), -c)):
                part = members[sides == side]
                if part.shape[0] >= cfg.n_min:
                    formed = self._form_or_split(part, rnd, form, reports, emb, codes, days, mismatch,
                                                 weights, params, depth) or formed
            return formed
        coh = cohesion(emb[members])
        cap = self._cap(coh)
        too_big = members.shape[0] > cap
        if too_big:
            ids = tuple(sorted(self.leaf_ids_[i] for i in members.tolist()))
            reports.append(ClusterReport(len(reports), rnd, ids, coh, None,
                                         f"{members.shape[0]} leaves > {cap} allowed at cohesion {coh:.2f}: split"))
        elif form(members, len(reports), rnd):
            return True
        if (not too_big and depth >= 2) or depth >= cfg.max_split_depth or members.shape[0] < 2 * cfg.n_min:
            return False
        if too_big:
            sub = bisect(emb[members])
        else:
            sub, _ = cluster_leaves(emb[members], codes[members], days[members], mismatch, weights, params)
            if int(sub.max(initial=-1)) < 1:
                # HDBSCAN sees one blob in so few points: cut it in two by average linkage.
                sub = bisect(emb[members])
        formed = False
        for k in range(int(sub.max()) + 1):
            part = members[sub == k]
            if part.shape[0] == 0:
                continue
            formed = self._form_or_split(part, rnd, form, reports, emb, codes, days, mismatch,
                                         weights, params, depth + 1) or formed
        return formed

    def _cap(self, coh: float) -> int:
        """The configured :func:`~personatree.consolidate.mids.size_cap` at cohesion ``coh``."""
        cfg = self.config
        return size_cap(coh, cfg.min_cohesion, cfg.tight_cohesion, cfg.loose_cluster_size, cfg.max_cluster_size)

    def _formable(self, size: int, coh: float) -> bool:
        """Whether ``size`` leaves at cohesion ``coh`` pass the gates a cluster passes to
        form a mid: the cohesion floor and the size cap at that cohesion."""
        return coh >= self.config.min_cohesion and size <= self._cap(coh)

    def _host(self, emb: np.ndarray, members: np.ndarray, kind: str | None, rnd: int,
              made: dict[int, NewMid], founders: dict[int, np.ndarray],
              reports: list[ClusterReport], groups: np.ndarray) -> int | None:
        """The mid formed in an earlier round of this pass that ``members`` continue, if
        any: same mid type, same stance side, a union within the size cap, and their
        union keeps ``coalesce_ratio`` of the smaller cohesion."""
        cfg = self.config
        own = cohesion(emb[members])
        if kind is None or own < cfg.min_cohesion or (groups[members] != groups[members[0]]).any():
            return None
        mine = emb[members].sum(axis=0, dtype=np.float64)
        best: tuple[float, int] | None = None
        for index in sorted(made):
            if (made[index].schema_type != kind or reports[index].round >= rnd
                    or groups[founders[index][0]] != groups[members[0]]):
                continue
            theirs = emb[founders[index]].sum(axis=0, dtype=np.float64)
            size = founders[index].shape[0]
            base = min(own, float((theirs @ theirs - size) / (size * (size - 1))))
            total = size + members.shape[0]
            union = mine + theirs
            joint = float((union @ union - total) / (total * (total - 1)))
            ratio = joint / base if base > 0 else 0.0
            if total <= self._cap(joint) and ratio >= cfg.coalesce_ratio and (best is None or ratio > best[0]):
                best = (ratio, index)
        return None if best is None else best[1]


def bisect(vectors: np.ndarray, *, exact_limit: int = 1000, iterations: int = 20) -> np.ndarray:
    """Split unit vectors in two: average-linkage clustering on cosine distance for
    small groups, spherical 2-means above ``exact_limit`` rows.

    Average linkage needs the n×n distance matrix; a giant cluster (tens of thousands
    of leaves) is split by 2-means instead, linear in n: seeded by the row least like
    the mean and the row least like that one, so the split is deterministic.

    Parameters
    ----------
    vectors : ndarray of shape (n, d), n ≥ 2
    exact_limit : int
        Largest n split by average linkage.
    iterations : int
        Most 2-means iterations.

    Returns
    -------
    ndarray of int
        Labels 0 and 1 (deterministic for a given input order), both used.
    """
    x = np.asarray(vectors, dtype=np.float32)
    n = x.shape[0]
    if n <= exact_limit:
        from sklearn.cluster import AgglomerativeClustering

        dist = np.clip(1.0 - x @ x.T, 0.0, 2.0).astype(np.float64)
        model = AgglomerativeClustering(n_clusters=2, metric="precomputed", linkage="average")
        return model.fit_predict(dist).astype(np.int64)
    a = int(np.argmin(x @ unit(x.mean(axis=0))))
    b = int(np.argmin(x @ x[a]))
    centres = np.stack([x[a], x[b]])
    labels = np.zeros(n, dtype=np.int64)
    for _ in range(iterations):
        new = np.argmax(x @ centres.T, axis=1).astype(np.int64)
        if (new == labels).all() and _ > 0:
            break
        labels = new
        for k in (0, 1):
            if (labels == k).any():
                centres[k] = unit(x[labels == k].sum(axis=0))
    if (labels == labels[0]).all():  # identical rows: halve by order
        labels = (np.arange(n) >= n // 2).astype(np.int64)
    return labels
