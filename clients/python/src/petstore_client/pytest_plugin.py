"""pytest fixtures: one petstore service per test run, a fresh namespace for each test.

Installed with the package (an entry point in the ``pytest11`` group), so a test just asks::

    def test_create(petstore):                  # a Client bound to a namespace of its own
        pet = petstore.create_pet("Rex", 1)
        assert pet["id"] == 1                   # ids start at 1 in every namespace

Fixtures:

- ``petstore_service`` (session): the running ``Service``. Started once, on the first test
  that needs it (``node dist/petstore.js --port 0 --memory``, admin on with a random key,
  namespaces and ``Prefer`` faults on), stopped at the end of the run. With pytest-xdist the
  controller starts one service and every worker uses it. With ``PETSTORE_URL`` set (and
  ``PETSTORE_ADMIN_KEY``, ``PETSTORE_API_KEY``), the service running there is used instead
  and left running: several pytest processes can share one service.
- ``petstore`` (function): a ``Client`` bound to a namespace made for this test alone (its
  name unique per test, per process and per xdist worker), with the API key and the admin
  key; the namespace is dropped after the test. A service with namespaces off: the root,
  reset before the test (tests must then not run side by side).

Environment: ``PETSTORE_BUNDLE`` (the bundle; default: ``dist/petstore.js`` found from the
working directory up), ``NODE`` (default: ``node`` on the PATH).
"""
from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import warnings
from typing import Any, Dict, Iterator, Optional

import pytest

from .client import Client
from .errors import PetstoreError
from .service import Service

_SERVICE = pytest.StashKey[Optional[Service]]()
_SERVICE_ERROR = pytest.StashKey[Optional[str]]()
_counter = itertools.count(1)
_tag = f"{os.environ.get('PYTEST_XDIST_WORKER', 'p')}-{os.getpid():x}{secrets.token_hex(2)}"


def namespace_name(test_name: str) -> str:
    """A namespace name unique in this process (worker id, pid, random bits, a counter), with
    as much of the test's name as fits in 64 characters, to tell it apart in listings."""
    head = f"{_tag}-{next(_counter)}"
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", test_name).strip("-")
    return f"{head}-{readable}"[:64].rstrip("-") if readable else head


def _from_environment() -> Optional[Service]:
    url = os.environ.get("PETSTORE_URL")
    if not url:
        return None
    admin_key = os.environ.get("PETSTORE_ADMIN_KEY")
    if not admin_key:
        raise pytest.UsageError("PETSTORE_URL is set without PETSTORE_ADMIN_KEY: the fixture needs the admin key")
    api_key = os.environ.get("PETSTORE_API_KEY")
    return Service.attach(url, admin_key, {"pytest": api_key} if api_key else {})


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, in the controller: one service for every worker, started before the first."""
    if os.environ.get("PETSTORE_URL"):
        return
    config = node.config
    if config.stash.get(_SERVICE, None) is None and config.stash.get(_SERVICE_ERROR, None) is None:
        try:
            config.stash[_SERVICE] = Service.start()
        except Exception as err:  # handed to the workers, whose tests fail with it
            config.stash[_SERVICE_ERROR] = f"{type(err).__name__}: {err}"
    service = config.stash.get(_SERVICE, None)
    node.workerinput["petstore"] = json.dumps(
        service.describe() if service else {"error": config.stash.get(_SERVICE_ERROR, None)})


def pytest_unconfigure(config: pytest.Config) -> None:
    service = config.stash.get(_SERVICE, None)
    if service is not None:
        config.stash[_SERVICE] = None
        service.stop()


@pytest.fixture(scope="session")
def petstore_service(request: pytest.FixtureRequest) -> Iterator[Service]:
    """The service of this test run (see the module's documentation)."""
    attached = _from_environment()
    if attached is not None:
        yield attached
        return
    shared: Optional[str] = getattr(request.config, "workerinput", {}).get("petstore")
    if shared:
        described: Dict[str, Any] = json.loads(shared)
        if described.get("url") is None:
            pytest.fail(f"the petstore service could not be started: {described.get('error')}", pytrace=False)
        yield Service.attach(**described)
        return
    service = Service.start()
    try:
        yield service
    finally:
        service.stop()


def _namespaces_on(service: Service) -> bool:
    known = getattr(service, "_namespaces_on", None)
    if known is None:
        status = service.client().request("GET", "/__admin/namespaces").status
        if status not in (200, 404):
            raise RuntimeError(f"GET /__admin/namespaces answered {status}: is the admin key right?")
        known = status == 200
        service._namespaces_on = known  # type: ignore[attr-defined]
        if not known:
            warnings.warn("the petstore service has namespaces off: each test gets the root, reset; "
                          "tests must not run side by side", stacklevel=2)
    return known


@pytest.fixture
def petstore(petstore_service: Service, request: pytest.FixtureRequest) -> Iterator[Client]:
    """A client bound to a fresh namespace of its own, dropped after the test."""
    root = petstore_service.client()
    if not _namespaces_on(petstore_service):
        root.reset()
        listed = root.request("GET", "/__admin/snapshots")  # a reset keeps them (501: none kept)
        for snapshot in listed.body["snapshots"] if listed.status == 200 else []:
            root.snapshots.delete(snapshot["name"])
        yield root
        return
    name = namespace_name(request.node.name)
    yield root.namespace(name)
    try:
        root.namespaces.drop(name)
    except PetstoreError as err:
        if err.status != 404:  # a test that made no request made no namespace
            raise
