"""notebooks/explore.ipynb: committed without outputs, and runs top to bottom, headless, in a
kernel of this venv's Python against a warehouse built from fixtures."""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from conftest import DEMO, REPO
from convarch import adapters
from convarch.adapters import claude_code
from convarch.etl.ingest import ingest
from convarch.etl.layout import Layout

nbformat = pytest.importorskip("nbformat")
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
EXPLORE = REPO / "notebooks" / "explore.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebooks_are_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs; run `python notebooks/strip_outputs.py`"


def test_explore_runs_top_to_bottom(tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    pytest.importorskip("matplotlib")
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    db = tmp_path / "w.duckdb"
    pairs = [(claude_code, claude_code.resolve_root(DEMO))]
    for name in ("codex", "gemini_cli"):
        adapter = adapters.get(name)
        pairs.append((adapter, adapter.resolve_root(REPO / "fixtures" / name / "contract")))
    ingest(Layout(db), pairs)

    # a kernel spec private to this test, running this venv's interpreter: nothing registered globally
    kernels = tmp_path / "kernels"
    (kernels / "convarch-test").mkdir(parents=True)
    (kernels / "convarch-test" / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "convarch test", "language": "python",
    }))
    monkeypatch.setenv("CONVARCH_DB", str(db))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for var, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_DATA_DIR", "data"),
                     ("JUPYTER_CONFIG_DIR", "config"), ("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "mpl")):
        monkeypatch.setenv(var, str(tmp_path / "jupyter" / sub))   # kernel files stay in the test's folder

    nb = nbformat.read(EXPLORE, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import os, sys\nprint(sys.executable)\nprint(os.environ['CONVARCH_DB'])\nprint(DB)"))
    km = KernelManager(kernel_name="convarch-test", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    started = time.monotonic()
    nbclient.NotebookClient(nb, km=km, kernel_name="convarch-test", timeout=120,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert time.monotonic() - started < 90

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 4      # the plots were drawn
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert re.search(r"^[1-9]\d* hits for 'cache'$", text, re.MULTILINE), text   # search ran from Python
    assert "est. USD" in text and "claude-sonnet-4-5" in text
    executable, env_db, used_db = nb.cells[-1].outputs[0]["text"].split()
    assert executable == sys.executable
    assert Path(env_db) == Path(used_db) == db
