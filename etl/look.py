"""Which files a run looks at.

An `ingest` run lists and stats every file of every store: that is how it finds what changed
without being told, and it costs a third of a second on a store of 20,000 transcripts. Under
`watch` the operating system's change notices name the paths written, created, deleted or
moved, so a pick-up can look at just those: a store with no notice is not listed, a store
whose files were only written is not listed again either (its last listing is kept), and of
its files only the ones named are stat-ed and compared with their watermarks.

Notices can be lost (a full queue, a network file system, a path spelt in a way not foreseen
here), so this only ever narrows a run that `watch` also follows with a full look every
`--interval`; a file a notice missed waits for that look, as every change did before notices
narrowed anything.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

#: A SQLite database's change shows as a write to one of these beside it.
SIDECARS = ("-wal", "-journal", "-shm")


@dataclass
class Look:
    """What a `watch` run was told changed since its last full look.

    `written`: files whose bytes changed. `listed`: files and folders created, deleted or
    moved; a folder ends with the path separator and stands for everything under it. Roots
    in `whole` (not watched: notices cannot speak for them) are looked at whole every run, and
    so is every root when `full`. `listings` is each root's files as last listed, kept by
    `watch` from run to run."""

    written: frozenset[str] = frozenset()
    listed: frozenset[str] = frozenset()
    whole: frozenset[str] = frozenset()
    full: bool = False
    listings: dict[tuple[str, str], dict] = field(default_factory=dict)

    def files(self, adapter, root: Path) -> tuple[list | None, Named | None]:
        """The files of `root` to look at, in the order found, and what the notices named
        there (None: the root is looked at whole); (None, None) when nothing under it was
        noticed."""
        key = (adapter.NAME, str(root))
        here = None if self.full or str(root) in self.whole else self._under(str(root))
        if here is not None and not here.paths and not here.folders:
            return None, None
        listing = self.listings.get(key)
        if listing is None or here is None or here.relist:
            listing = self.listings[key] = {str(sf.path): sf for sf in adapter.discover(root)}
        if here is None:
            return list(listing.values()), None
        if here.folders:
            return [sf for path, sf in listing.items() if here(path)], here
        wanted = here.files()
        return [sf for path, sf in listing.items() if path in wanted], here

    def _under(self, root: str) -> Named | None:
        """The noticed files and folders under `root` (a store folder, or a database file and
        its sidecars); None when the root is to be looked at whole: given relative (notices
        name absolute paths), or inside a folder that came, went or moved."""
        if not os.path.isabs(root):
            return None
        written, listed = _spelt_as(root, self.written), _spelt_as(root, self.listed)
        if any(f.endswith(os.sep) and (root + os.sep).startswith(f) for f in listed):
            return None
        prefix = root if not os.path.isdir(root) else root.rstrip(os.sep) + os.sep
        paths = frozenset(p for p in (written | listed) if p.startswith(prefix) and not p.endswith(os.sep))
        folders = tuple(f for f in listed if f.endswith(os.sep) and f.startswith(prefix))
        return Named(paths, folders, bool(folders) or not paths.isdisjoint(listed))


def _spelt_as(root: str, paths: frozenset[str]) -> frozenset[str]:
    """Paths noticed under the real location of a root reached through a symlink (macOS's
    notices name real paths, /private/var for /var), spelt as under the root, as its files are
    listed."""
    real = os.path.realpath(root)
    if real == root:
        return paths
    return frozenset(root + p[len(real):] if p == real or p.startswith(real + os.sep) else p for p in paths)


class Named(NamedTuple):
    """The files of a store a notice named: those written, created, deleted or moved, a
    database whose sidecar was, and everything under a folder that came, went or moved."""

    paths: frozenset[str]
    folders: tuple[str, ...]
    #: whether a path came, went or moved there: the store is listed again
    relist: bool = False

    def __call__(self, path: str) -> bool:
        return (path in self.paths or any(path + s in self.paths for s in SIDECARS)
                or (bool(self.folders) and path.startswith(self.folders)))

    def files(self) -> set[str]:
        """The paths named, a sidecar's standing for its database."""
        return set(self.paths) | {p[: -len(s)] for p in self.paths for s in SIDECARS if p.endswith(s)}
