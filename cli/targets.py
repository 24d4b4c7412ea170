"""Which stores a command acts on: every default location, or what the user named."""
from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

from convarch import adapters
from convarch.adapters.base import RootError
from convarch.etl.errors import UsageError


def home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def adapter_named(name: str) -> ModuleType:
    try:
        return adapters.get(name)
    except KeyError:
        known = ", ".join(sorted(adapters.ADAPTERS))
        raise UsageError(f"unknown source {name!r}; known sources: {known}") from None


def default_targets(adapter: ModuleType) -> list[tuple[ModuleType, Path]]:
    """Existing default roots of one adapter, each resolved to its store folder, no repeats."""
    found: list[tuple[ModuleType, Path]] = []
    seen: set[Path] = set()
    for root in adapter.default_roots(os.environ, home()):
        try:
            store = adapter.resolve_root(root)
        except RootError:
            continue
        real = store.resolve()
        if real not in seen:
            seen.add(real)
            found.append((adapter, store))
    return found


def explicit_target(adapter: ModuleType, root: Path) -> tuple[ModuleType, Path]:
    try:
        return adapter, adapter.resolve_root(root.expanduser().absolute())
    except RootError as exc:
        raise UsageError(f"--root: {exc}") from None
