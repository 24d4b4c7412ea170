"""The registry of agent adapters: adding an agent is one module and one line here."""
from __future__ import annotations

from types import ModuleType

from convarch.adapters import claude_code, amp, kimi_cli, kimi_code, factory_droid, cursor, goose, gemini_cli, codex, opencode, qwen_code, pi, hermes, openhands, antigravity, grok_build, grok_cli, copilot_cli, cline, roo_code, kilo_code, crush, openclaw, continue_dev, aider

ADAPTERS: dict[str, ModuleType] = {m.NAME: m for m in (claude_code, amp, kimi_cli, kimi_code, factory_droid, cursor, goose, gemini_cli, codex, opencode, qwen_code, pi, hermes, openhands, antigravity, grok_build, grok_cli, copilot_cli, cline, roo_code, kilo_code, crush, openclaw, continue_dev, aider)}


def get(name: str) -> ModuleType:
    key = name.replace("-", "_").lower()
    aliases = {"claude": "claude_code", "grok": "grok_build", "agy": "antigravity", "continue": "continue_dev",
               "copilot": "copilot_cli", "droid": "factory_droid", "gemini": "gemini_cli", "qwen": "qwen_code",
               "roo": "roo_code", "kilo": "kilo_code", "kimi": "kimi_code"}
    key = aliases.get(key, key)
    if key not in ADAPTERS:
        raise KeyError(name)
    return ADAPTERS[key]


#: What each adapter is tested against (shown by `convarch sources`): samples from the agent's
#: own repository, realistic public samples from other projects, or only fixtures written here.
VENDOR, REALISTIC, OWN = "vendor fixtures", "realistic samples", "own fixtures only"
EVIDENCE: dict[str, str] = {
    "claude_code": REALISTIC, "codex": REALISTIC, "cursor": REALISTIC, "goose": REALISTIC,
    "gemini_cli": REALISTIC, "qwen_code": REALISTIC, "opencode": REALISTIC, "cline": VENDOR,
    "roo_code": OWN, "kilo_code": OWN, "copilot_cli": REALISTIC, "crush": REALISTIC, "pi": REALISTIC,
    "kimi_cli": REALISTIC, "kimi_code": REALISTIC, "factory_droid": REALISTIC, "amp": OWN,
    "openhands": REALISTIC, "antigravity": REALISTIC, "grok_build": REALISTIC, "grok_cli": OWN,
    "hermes": REALISTIC, "aider": OWN, "continue_dev": OWN, "openclaw": REALISTIC,
}
