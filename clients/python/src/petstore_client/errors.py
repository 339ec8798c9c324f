"""The two ways a call fails: an answer with an error status, or no whole answer at all."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from .response import Response


class PetstoreError(Exception):
    """The service answered with a status of 400 or more.

    Carries the Error body the service sends with every such answer (``code``, ``message``,
    ``status``) and the whole answer (``response``), so a test can assert on any of it::

        with pytest.raises(PetstoreError) as caught:
            petstore.get_pet(999)
        assert caught.value.code == "not_found"
    """

    def __init__(self, response: "Response") -> None:
        body = response.body if isinstance(response.body, dict) else {}
        self.response = response
        self.status: int = response.status
        self.code: Optional[str] = body.get("code") if isinstance(body.get("code"), str) else None
        message = body.get("message")
        self.message: str = message if isinstance(message, str) else f"HTTP {response.status}"
        self.body: Any = response.body
        self.headers = response.headers
        super().__init__(f"{response.method} {response.path}: {self.status} {self.code or ''}: {self.message}".replace("  ", " "))


class BrokenAnswer(Exception):
    """The connection ended without a whole answer.

    ``kind`` says how, with the names the service's connection faults use: ``"reset"`` (the
    connection was reset), ``"empty"`` (closed before any byte of an answer) or ``"truncated"``
    (the status line and headers came, then only part of the body). ``status`` and ``headers``
    are those of the cut answer for ``"truncated"``, else None.
    """

    def __init__(self, kind: str, method: str, path: str, status: Optional[int] = None,
                 headers: Optional[dict] = None, partial: bytes = b"") -> None:
        self.kind = kind
        self.status = status
        self.headers = headers
        self.partial = partial
        super().__init__(f"{method} {path}: the connection ended without a whole answer ({kind})")


class ServiceStartError(Exception):
    """The service process could not be started: its exit code and what it wrote on stderr."""

    def __init__(self, message: str, stderr: str = "", exit_code: Optional[int] = None) -> None:
        self.stderr = stderr
        self.exit_code = exit_code
        super().__init__(message + (f"\n{stderr.rstrip()}" if stderr.strip() else ""))
