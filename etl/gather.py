"""Cutting a stream into consecutive pieces of about a given size.

Three stages hand work on in pieces measured in bytes: redaction sends lines to its processes
about a megabyte at a time, chains write their rows in row groups of about 32 MB, and export
cuts each file's row groups at about 64 MB. They all gather the same way, so that way is here
once.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def gathered(items: Iterable[T], size: Callable[[T], int], limit: int) -> Iterator[list[T]]:
    """`items`, in order, as lists each closed by the item that brings its size to `limit` or
    past it (an item bigger than `limit` ends the list it joins); the rest as a last list.
    Nothing is yielded for no items."""
    held: list[T] = []
    total = 0
    for item in items:
        held.append(item)
        total += size(item)
        if total >= limit:
            yield held
            held, total = [], 0
    if held:
        yield held
