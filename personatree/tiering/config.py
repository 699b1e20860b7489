"""``TieringConfig``: sizes and weights of the HMO tiers (ARCHITECTURE.md, "HMO tiering").

Defined in :mod:`personatree.config` with the other configuration models; this is
its documented home inside the tiering package.
"""

from __future__ import annotations

from ..config import TieringConfig

__all__ = ["TieringConfig"]
