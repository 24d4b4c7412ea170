"""The registry of agent adapters: adding an agent is one module and one line here."""
from __future__ import annotations

from types import ModuleType

from convarch.adapters import claude_code, cursor, goose, gemini_cli, codex, opencode, qwen_code

ADAPTERS: dict[str, ModuleType] = {m.NAME: m for m in (claude_code, cursor, goose, gemini_cli, codex, opencode, qwen_code)}


def get(name: str) -> ModuleType:
    key = name.replace("-", "_").lower()
    aliases = {"claude": "claude_code"}
    key = aliases.get(key, key)
    if key not in ADAPTERS:
        raise KeyError(name)
    return ADAPTERS[key]
