"""Real MCP servers (the official SDK) declared for a test home."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FAKE = Path(__file__).parent / "fakes" / "mcp_server.py"


def stdio_entry(**extra: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(FAKE)], **extra}


def declare(path: Path, servers: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
