"""Advisory-lock key spaces of the PostgreSQL store.

Each lock uses the two-int form ``(space, hashtext(user_id))``; the first int is one
of these spaces, so our locks never collide with an application's own advisory locks
on ``hashtext`` keys.
"""

from __future__ import annotations

__all__ = ["LOCK_JOB", "LOCK_MIGRATE", "LOCK_TURN", "LOCK_WRITE", "USER_KEY"]

LOCK_WRITE = 0x5054_0001  # per-user commits (transaction-level)
LOCK_JOB = 0x5054_0002  # lock_user: consolidation and other long per-user jobs (session-level)
LOCK_MIGRATE = 0x5054_0003  # schema migrations (second key 0)
LOCK_TURN = 0x5054_0004  # hold_user: a writer's turn from reading a tree to committing (session-level)

# The second key of a per-user lock, from the (escaped) user id bound as a parameter.
USER_KEY = "hashtext(%s)"
