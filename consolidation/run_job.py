#!/usr/bin/env python3
"""Scheduled consolidation job: consolidate every user changed since the last run.

    python consolidation/run_job.py /var/lib/personatree/memory.db            # local process pool
    python consolidation/run_job.py /data/memory.db --scheduler tcp://dask:8786 # Dask cluster

Exit code 0 when every user succeeded (or had nothing to do), 1 when any user failed,
2 for a bad invocation. See consolidation/README.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Allow running from a source checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from personatree.cli.consolidate import job_main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(job_main())
