"""``Entry``: one piece of durable knowledge, and how a domain name is normalised."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = ["Entry", "domain_key", "now_iso"]


def now_iso() -> str:
    """The current UTC time, ISO 8601 with seconds."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def domain_key(domain: str) -> str:
    """``"Web Ops!"`` gives ``web_ops_``: lowercased, every run of non-alphanumerics as ``_``."""
    return re.sub(r"[^a-z0-9]+", "_", str(domain).lower())


@dataclass(frozen=True)
class Entry:
    """An immutable piece of knowledge: what was learned, why, and how far it is trusted."""

    content: str
    reasoning: str = ""
    category: str = "pattern"
    domain: str = "general"
    confidence: float = 0.1
    """0.0 to 1.0; every confirmation adds 0.1."""
    use_count: int = 0
    """How many times it was confirmed (recorded again, or recalled)."""
    created_at: str = field(default_factory=now_iso)
    updated_at: str = field(default_factory=now_iso)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (crosses processes)."""
        return {"content": self.content, "reasoning": self.reasoning, "category": self.category,
                "domain": self.domain, "confidence": self.confidence, "use_count": self.use_count,
                "created_at": self.created_at, "updated_at": self.updated_at}
