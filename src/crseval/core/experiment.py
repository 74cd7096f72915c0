"""What a config says of the experiment as a whole, asked the same way everywhere: whether its sessions are
imported or simulated, and where its results go.

The config checks read a config before the schema has validated it, so a section of the wrong shape is
answered here (not an import) and left to the schema to name.
"""

from __future__ import annotations

from typing import Any


def imports_sessions(config: Any) -> bool:
    """The sessions come from a conversation corpus (`sessions.source: import`), not from the simulator."""
    sessions = config.get("sessions") if isinstance(config, dict) else None
    return isinstance(sessions, dict) and sessions.get("source") == "import"


def results_dir(config: dict) -> str:
    """Every output of the experiment is under results/<experiment>/ of the working directory."""
    return f"results/{config['experiment']}"
