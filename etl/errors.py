"""Errors a user can act on; the CLI turns each into one line and a stable exit code."""
from __future__ import annotations


class ConvarchError(Exception):
    exit_code = 1


class UsageError(ConvarchError):
    exit_code = 2


class NoMatch(ConvarchError):
    exit_code = 3


class Busy(ConvarchError):
    """Another ingest holds the warehouse."""
