"""A client for the petstore service: the /v1 API and every /__admin call, standard library only.

A ``Client`` talks to one service, and to one world in it: the root, or a namespace
(``/ns/{name}``), which has its own pets, limits, clock, journal, faults and snapshots. Every
call makes its own connection, so one client may be used from several threads at once.

    client = Client("http://127.0.0.1:8080", key="...", admin_key="...")
    ns = client.namespace("test-42")
    ns.create_pet("Rex", 1)
    ns.journal.wait(at_least=1, operation="createPet")

Answers with a status of 400 or more raise ``PetstoreError`` (with the Error body), a
connection that ends without a whole answer raises ``BrokenAnswer``. ``request()`` is the way
to see any answer as it is, without raising.
"""
from __future__ import annotations

import http.client
import json
import re
import urllib.parse
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Union

from .errors import BrokenAnswer, PetstoreError
from .response import Response

NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
"""A namespace or snapshot name, as the service accepts it."""

_UNSET: Any = object()




def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _fields(values: Mapping[str, Any]) -> Dict[str, Any]:
    """Python keyword names (``delay_ms``) to the service's field names (``delayMs``)."""
    return {_camel(k): v for k, v in values.items() if v is not _UNSET}


def _query(params: Mapping[str, Any]) -> str:
    pairs: List[tuple] = []
    for name, value in params.items():
        if value is None or value is _UNSET:
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, bool):
                v = "true" if v else "false"
            pairs.append((name, str(v)))
    return ("?" + urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)) if pairs else ""


def _header_filters(header: Union[None, str, Sequence[str], Mapping[str, str]]) -> Optional[List[str]]:
    """``header=`` of a journal filter: "name:value", a list of them, or a dict name -> value."""
    if header is None:
        return None
    if isinstance(header, str):
        return [header]
    if isinstance(header, Mapping):
        return [f"{name}:{value}" for name, value in header.items()]
    return list(header)


def _check_name(what: str, name: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(f"{what} must be 1 to 64 characters of A-Z a-z 0-9 . _ -, got {name!r}")
    return name


class Client:
    """One service, one world in it (the root or a namespace), one API key and the admin key.

    ``url`` is the service's address: its root (``http://127.0.0.1:8080``), its ``/v1`` base
    URL (the one the ready line prints), or a namespace's (``.../ns/NAME``).
    """

    def __init__(self, url: str, key: Optional[str] = None, admin_key: Optional[str] = None,
                 timeout: float = 30.0, headers: Optional[Mapping[str, str]] = None) -> None:
        url = url.rstrip("/")
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        match = re.match(r"^(https?://[^/]+)(?:/ns/([^/]+))?$", url)
        if not match:
            raise ValueError(f"not a petstore URL: {url!r} (expected http://HOST:PORT, optionally with /v1 or /ns/NAME)")
        parsed = urllib.parse.urlsplit(match.group(1))
        if parsed.scheme != "http":
            raise ValueError(f"only http:// is supported, got {url!r}")
        self.root = match.group(1)
        self.namespace_name: Optional[str] = match.group(2)
        self.key = key
        self.admin_key = admin_key
        self.timeout = timeout
        self.headers: Dict[str, str] = dict(headers or {})
        self._host = parsed.hostname or "127.0.0.1"
        self._port = parsed.port or 80
        self.faults = Faults(self)
        self.journal = Journal(self)
        self.snapshots = Snapshots(self)
        self.clock = Clock(self)
        self.namespaces = Namespaces(self)

    # -- where requests go ------------------------------------------------------------------

    @property
    def prefix(self) -> str:
        """``/ns/NAME`` for a namespace, ``""`` for the root."""
        return f"/ns/{self.namespace_name}" if self.namespace_name else ""

    @property
    def url(self) -> str:
        """The base URL of the API in this world, ending in ``/v1``."""
        return self.root + self.prefix + "/v1"

    def namespace(self, name: str) -> "Client":
        """A client bound to namespace ``name`` (made by its first request), same keys."""
        _check_name("a namespace name", name)
        return self._copy(url=f"{self.root}/ns/{name}")

    def root_client(self) -> "Client":
        """The same client bound to the service's root world."""
        return self._copy(url=self.root)

    def with_key(self, key: Optional[str]) -> "Client":
        """The same client with another API key (None: requests without one)."""
        return self._copy(key=key)

    def with_headers(self, headers: Mapping[str, str]) -> "Client":
        """The same client, sending these headers too on every /v1 request (``Prefer``, tracing...)."""
        return self._copy(headers={**self.headers, **headers})

    def _copy(self, **changes: Any) -> "Client":
        args = dict(url=self.root + self.prefix, key=self.key, admin_key=self.admin_key,
                    timeout=self.timeout, headers=self.headers)
        args.update(changes)
        return Client(**args)

    # -- any request ------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, *, headers: Optional[Mapping[str, str]] = None,
                query: Optional[Mapping[str, Any]] = None, key: Any = _UNSET, data: Optional[bytes] = None,
                timeout: Optional[float] = None) -> Response:
        """One request, answered as it is (no exception for an error status).

        ``path`` starts with ``/v1`` or ``/__admin`` and is taken in this client's world (the
        namespace prefix is added); a path starting with ``/ns/`` or ``/healthz`` is sent as is.
        ``body`` is sent as JSON; ``data`` as raw bytes instead. ``key``: the bearer key to send
        (default: the client's API key for /v1, its admin key for /__admin; None: no key).
        """
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', got {path!r}")
        if path.startswith("/v1") or path.startswith("/__admin"):
            target = self.prefix + path
        else:
            target = path
        target += _query(query or {})
        if key is _UNSET:
            key = self.admin_key if path.startswith("/__admin") else self.key
        sent: Dict[str, str] = {}
        if not path.startswith("/__admin"):
            sent.update(self.headers)
        if key is not None:
            sent["Authorization"] = f"Bearer {key}"
        if body is not None and data is None:
            data = json.dumps(body).encode("utf-8")
            sent["Content-Type"] = "application/json"
        sent.update(headers or {})
        return self._send(method, target, data, sent, self.timeout if timeout is None else timeout)

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Response:
        """As ``request``, raising ``PetstoreError`` for a status of 400 or more."""
        response = self.request(method, path, body, **kwargs)
        if response.status >= 400:
            raise PetstoreError(response)
        return response

    def _send(self, method: str, target: str, data: Optional[bytes], headers: Mapping[str, str],
              timeout: float) -> Response:
        conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        try:
            try:
                conn.request(method, target, body=data, headers=dict(headers))
                res = conn.getresponse()
            except http.client.RemoteDisconnected as err:
                raise BrokenAnswer("empty", method, target) from err
            except ConnectionResetError as err:
                raise BrokenAnswer("reset", method, target) from err
            names: Dict[str, str] = {}
            for name, value in res.getheaders():
                lower = name.lower()
                names[lower] = f"{names[lower]}, {value}" if lower in names else value
            try:
                raw = res.read()
            except http.client.IncompleteRead as err:
                raise BrokenAnswer("truncated", method, target, res.status, names, err.partial) from err
            except ConnectionResetError as err:
                raise BrokenAnswer("truncated", method, target, res.status, names) from err
        finally:
            conn.close()
        text = raw.decode("utf-8", errors="replace")
        parsed: Any = None
        if text and "json" in names.get("content-type", ""):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
        return Response(method, target, res.status, names, parsed, text)

    # -- the API (/v1) ----------------------------------------------------------------------

    def list_pets(self, status: Optional[str] = None, limit: Optional[int] = None, cursor: Any = None,
                  headers: Optional[Mapping[str, str]] = None) -> List[dict]:
        """One page of pets (``GET /v1/pets``), in ascending id order."""
        return self.call("GET", "/v1/pets", query={"status": status, "limit": limit, "cursor": cursor},
                         headers=headers).body

    def iter_pets(self, status: Optional[str] = None, limit: Optional[int] = None) -> Iterator[dict]:
        """Every pet, page after page, following each page's ``Link: rel="next"``."""
        response = self.call("GET", "/v1/pets", query={"status": status, "limit": limit})
        while True:
            yield from response.body
            following = response.next_url
            if not following:
                return
            parts = urllib.parse.urlsplit(following)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            response = self.call("GET", target)

    def create_pet(self, name: Any = None, category_id: Any = None, status: Optional[str] = None, *,
                   pet: Optional[Mapping[str, Any]] = None, idempotency_key: Optional[str] = None,
                   headers: Optional[Mapping[str, str]] = None) -> dict:
        """Adds a pet (``POST /v1/pets``); ``pet`` sends that object as is instead of the fields."""
        body = dict(pet) if pet is not None else {"name": name, "categoryId": category_id}
        if pet is None and status is not None:
            body["status"] = status
        sent = dict(headers or {})
        if idempotency_key is not None:
            sent["Idempotency-Key"] = idempotency_key
        return self.call("POST", "/v1/pets", body, headers=sent).body

    def get_pet(self, pet_id: Any, headers: Optional[Mapping[str, str]] = None) -> dict:
        """One pet by id (``GET /v1/pets/{id}``, deprecated by the API)."""
        return self.call("GET", f"/v1/pets/{pet_id}", headers=headers).body

    def openapi(self) -> dict:
        """The OpenAPI document, with this world's ``servers``."""
        return self.call("GET", "/v1/openapi.json").body

    def health(self) -> bool:
        return self.request("GET", "/healthz", key=None).status == 200

    # -- admin --------------------------------------------------------------------------------

    def reset(self) -> None:
        """Empty store (ids from 1), limits, bans, faults, journal and clock back to their start, in this world."""
        self.call("POST", "/__admin/reset")

    def seed(self, pets: Iterable[Mapping[str, Any]]) -> List[dict]:
        """Adds pets (NewPet, optionally with ``id``) in one write; returns them as stored."""
        return self.call("POST", "/__admin/seed", list(pets)).body


class _Part:
    def __init__(self, client: Client) -> None:
        self._client = client


class Faults(_Part):
    """``/__admin/faults``: answers broken on purpose."""

    def arm(self, fault: Optional[Mapping[str, Any]] = None, **fields: Any) -> List[dict]:
        """Arms a fault, given as the service's JSON object or as keywords (``delay_ms=`` for
        ``delayMs``...); returns every armed fault."""
        body = dict(fault or {})
        body.update(_fields(fields))
        return self._client.call("POST", "/__admin/faults", body).body

    def list(self) -> List[dict]:
        return self._client.call("GET", "/__admin/faults").body["faults"]

    def clear(self) -> None:
        self._client.call("DELETE", "/__admin/faults")


class Journal(_Part):
    """``/__admin/requests``: what the clients sent and what they got.

    Filters (keywords): ``method``, ``path`` (exact), ``path_prefix``, ``status``, ``key`` (a
    key's name), ``operation``, ``header`` (``"name:value"``, a list of them or a dict; all must
    match), ``since`` (a requestId), ``limit``.
    """

    @staticmethod
    def _filters(filters: Mapping[str, Any]) -> Dict[str, Any]:
        values = dict(filters)
        header = _header_filters(values.pop("header", None))
        out = _fields(values)
        if header is not None:
            out["header"] = header
        return out

    def query(self, **filters: Any) -> dict:
        """``{"requests": [...], "dropped": N}``, oldest first."""
        return self._client.call("GET", "/__admin/requests", query=self._filters(filters)).body

    def requests(self, **filters: Any) -> List[dict]:
        """Just the matching entries."""
        return self.query(**filters)["requests"]

    def count(self, **filters: Any) -> int:
        return self._client.call("GET", "/__admin/requests/count", query=self._filters(filters)).body["count"]

    def wait(self, at_least: int = 1, timeout_ms: int = 10_000, **filters: Any) -> dict:
        """Waits until at least ``at_least`` entries match or ``timeout_ms`` passes (the service
        waits, woken by the requests themselves): ``{"count", "met", "waitedMs"}``."""
        query = self._filters(filters)
        query.update(atLeast=at_least, timeoutMs=timeout_ms)
        return self._client.call("GET", "/__admin/requests/count", query=query,
                                 timeout=self._client.timeout + timeout_ms / 1000).body

    def clear(self) -> None:
        self._client.call("DELETE", "/__admin/requests")


class Snapshots(_Part):
    """``/__admin/snapshots``: save this world's state under a name, put it back later."""

    def save(self, name: str) -> dict:
        return self._client.call("PUT", f"/__admin/snapshots/{_check_name('a snapshot name', name)}").body

    def restore(self, name: str) -> None:
        self._client.call("POST", f"/__admin/snapshots/{_check_name('a snapshot name', name)}/restore")

    def list(self) -> List[dict]:
        return self._client.call("GET", "/__admin/snapshots").body["snapshots"]

    def delete(self, name: str) -> None:
        self._client.call("DELETE", f"/__admin/snapshots/{_check_name('a snapshot name', name)}")


class Clock(_Part):
    """``/__admin/clock``: this world's clock, which only moves forward."""

    def get(self) -> dict:
        """``{"now": RFC 3339, "offsetMs": N}``."""
        return self._client.call("GET", "/__admin/clock").body

    def advance(self, ms: int) -> dict:
        """Moves the clock ``ms`` milliseconds forward, as if that time had passed."""
        return self._client.call("POST", "/__admin/clock", {"advanceMs": ms}).body


class Namespaces(_Part):
    """``/__admin/namespaces`` of the service's root: the namespaces that exist."""

    def list(self) -> List[dict]:
        """``[{"name", "pets", "requests"}]``."""
        return self._client.root_client().call("GET", "/__admin/namespaces").body["namespaces"]

    def drop(self, name: str) -> None:
        self._client.root_client().call("DELETE", f"/__admin/namespaces/{_check_name('a namespace name', name)}")
