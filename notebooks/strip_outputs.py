"""Clear the outputs and execution counts of notebooks before committing them.

    python notebooks/strip_outputs.py                # every notebook in this folder
    python notebooks/strip_outputs.py path/to/x.ipynb
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat


def strip(path: Path) -> bool:
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if cell.get("outputs") or cell.get("execution_count") is not None:
            cell["outputs"], cell["execution_count"] = [], None
            changed = True
        if "execution" in cell.get("metadata", {}):
            del cell["metadata"]["execution"]
            changed = True
    if changed:
        nbformat.write(nb, path)
    return changed


def main(argv: list[str]) -> None:
    paths = [Path(a) for a in argv] or sorted(Path(__file__).parent.glob("*.ipynb"))
    for path in paths:
        print(f"{'stripped' if strip(path) else 'clean   '} {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
