"""``notebooks/explore_tree.ipynb`` runs top to bottom, so it cannot rot.

Executed with nbclient in a real ``python3`` kernel (ipykernel). It loads the model in
the kernel process and runs a consolidation pass and a recall, which takes longer
than a minute on a small CI machine, hence ``slow``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "explore_tree.ipynb"


@pytest.mark.slow
def test_notebook_runs_top_to_bottom(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError (with the cell and traceback) on any failure
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<iframe srcdoc=" in h and "pt-data" in h for h in html), "the tree view is shown inline"
    assert any("image/png" in o.get("data", {}) for o in outputs), "the confidence plot is drawn"
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    assert "evidence leaves" in text and "route:" in text and "tokens:" in text
    assert any("<th>action</th>" in h for h in html), "the recall trace is shown"
    # The plotted curve meets the confidence the tree stores, and the claim plotted has
    # counter-evidence, so conflicts are on the plot.
    line = re.search(r"plotted (\d\.\d\d) now, stored (\d\.\d\d) \((\d+) supporting, (\d+) conflicting\)", text)
    assert line is not None, text
    assert line.group(1) == line.group(2) and int(line.group(3)) > 0 and int(line.group(4)) > 0, line.group(0)
    # No progress bars or their warnings in the outputs (the model loads silently).
    everything = text + "".join(str(o.get("data", "")) for o in outputs)
    assert "TqdmWarning" not in everything and "Loading weights" not in everything and "it/s]" not in everything
    nbformat.write(nb, tmp_path / "explore_tree.executed.ipynb")


def test_the_notebook_has_no_fallback_branches() -> None:
    # Consolidation and the plot's claim are always there: no cell pretends otherwise.
    source = "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells)
    for phrase in ("not part of this build", "no claim yet", "No patterns yet", "psi = +0.8", "+0.8)"):
        assert phrase not in source, phrase
