"""One answer of the service, as the client returns it and as an error carries it."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Optional


@dataclass(frozen=True)
class Response:
    """One answer: ``headers`` with lower-case names (repeated ones joined by ``", "``), ``body``
    parsed as JSON when it is JSON (else None), ``text`` the body as sent."""

    method: str
    path: str
    status: int
    headers: Dict[str, str]
    body: Any
    text: str = field(repr=False)

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())

    @property
    def next_url(self) -> Optional[str]:
        """The target of a ``Link: <...>; rel="next"`` header (RFC 8288), or None."""
        for part in (self.header("link") or "").split(","):
            match = re.match(r'\s*<([^>]*)>\s*;(.*)$', part)
            if match and re.search(r'rel="?next"?', match.group(2)):
                return match.group(1)
        return None
