"""convarch: every coding agent's session store, archived in one DuckDB warehouse."""
from __future__ import annotations

__version__ = "0.1.0"

from convarch.etl.warehouse import connect  # noqa: E402

__all__ = ["connect", "__version__"]
