"""Starting the petstore service as a process, for tests: on a free port, in memory, admin on.

    with Service.start() as service:          # finds dist/petstore.js, runs it with node
        client = service.client()             # the root world, with an API key and the admin key
        ns = client.namespace("my-test")

The process's stdout and stderr are read on threads for its whole life: a pipe nobody reads
fills up, and the service then drops log lines (it never blocks on them).
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
import queue
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any, Deque, Dict, List, Mapping, Optional, Sequence

from .client import Client
from .errors import ServiceStartError

READY = "petstore listening on "
DEFAULT_ADMIN = {"namespaces": 1000, "preferFaults": True}
"""Admin settings a test session wants: a namespace per test, faults per request."""


def find_bundle(start: Optional[str] = None) -> str:
    """``$PETSTORE_BUNDLE``, else ``dist/petstore.js`` or ``node_modules/petstore/dist/petstore.js``
    in ``start`` (default: the working directory) or the nearest folder above it that has one."""
    given = os.environ.get("PETSTORE_BUNDLE")
    if given:
        if not os.path.isfile(given):
            raise ServiceStartError(f"PETSTORE_BUNDLE names {given}, which is not a file")
        return os.path.abspath(given)
    folder = os.path.abspath(start or os.getcwd())
    while True:
        for candidate in (os.path.join(folder, "dist", "petstore.js"),
                          os.path.join(folder, "node_modules", "petstore", "dist", "petstore.js")):
            if os.path.isfile(candidate):
                return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            raise ServiceStartError(
                "cannot find dist/petstore.js here or in any folder above: build it (npm run build), "
                "or set PETSTORE_BUNDLE to its path")
        folder = parent


class Service:
    """A running petstore service: its URL, keys, and (when this object started it) its process."""

    def __init__(self, url: str, admin_key: str, keys: Mapping[str, str],
                 process: Optional[subprocess.Popen] = None, folder: Optional[str] = None,
                 stderr_tail: Optional[Deque[str]] = None) -> None:
        self.url = url.rstrip("/")
        self.root = self.url[: -len("/v1")] if self.url.endswith("/v1") else self.url
        self.admin_key = admin_key
        self.keys: Dict[str, str] = dict(keys)
        self.process = process
        self.admin: Dict[str, Any] = {}
        """The admin settings this object started the service with ({} for an attached one)."""
        self._folder = folder
        self._stderr_tail = stderr_tail if stderr_tail is not None else collections.deque(maxlen=50)

    @classmethod
    def start(cls, bundle: Optional[str] = None, *, node: Optional[str] = None,
              config: Optional[Mapping[str, Any]] = None, admin: Optional[Mapping[str, Any]] = None,
              args: Sequence[str] = (), timeout: float = 30.0, env: Optional[Mapping[str, str]] = None) -> "Service":
        """Starts ``node BUNDLE --port 0 --memory --config <temp file>`` and waits for its ready line.

        ``config`` is merged over a test config: a key named ``pytest`` with limits no test
        reaches (``service.keys["pytest"]``), and ``admin`` on with a fresh random key (only its
        SHA-256 is in the file), with ``DEFAULT_ADMIN`` and then ``admin`` as its settings.
        ``node``: ``$NODE``, else ``node`` on the PATH.
        """
        bundle = bundle or find_bundle()
        node = node or os.environ.get("NODE") or shutil.which("node")
        if not node:
            raise ServiceStartError("cannot find node: put it on the PATH or set NODE")
        admin_key = secrets.token_hex(16)
        api_key = secrets.token_hex(16)
        settings = dict(config or {})
        keys = list(settings.pop("keys", []))
        keys.append({"key": api_key, "plan": "enterprise", "name": "pytest",
                     "limits": {"perMinute": 10_000_000, "perDay": 1_000_000_000}})
        settings["keys"] = keys
        asked = {**(admin or {}), **{k: v for k, v in settings.get("admin", {}).items() if k not in ("key", "sha256")}}
        wanted = {**DEFAULT_ADMIN, **asked}
        folder = tempfile.mkdtemp(prefix="petstore-pytest-")
        try:
            while True:
                settings["admin"] = {**wanted, "sha256": hashlib.sha256(admin_key.encode()).hexdigest()}
                config_path = os.path.join(folder, "petstore.config.json")
                with open(os.open(config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
                    json.dump(settings, f)
                command = [node, bundle, "--port", "0", "--host", "127.0.0.1", "--memory", "--config", config_path, *args]
                try:
                    service = cls._spawn(command, folder, timeout, env, admin_key)
                    break
                except ServiceStartError as err:
                    # A bundle older than a default setting refuses it: start without the ones
                    # the caller did not ask for (service.admin says what is on).
                    unknown = {name for name in DEFAULT_ADMIN if name not in asked and name in wanted
                               and f"admin.{name} is not a known field" in err.stderr}
                    if not unknown:
                        raise
                    for name in unknown:
                        del wanted[name]
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        service.admin = dict(wanted)
        service.keys.update({k["name"]: k["key"] for k in keys if "key" in k and "name" in k})
        return service

    @classmethod
    def _spawn(cls, command: List[str], folder: str, timeout: float, env: Optional[Mapping[str, str]],
               admin_key: str) -> "Service":
        child_env = dict(os.environ if env is None else env)
        process = subprocess.Popen(command, cwd=folder, env=child_env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   encoding="utf-8", errors="replace")
        lines: "queue.Queue[Optional[str]]" = queue.Queue()
        ready = threading.Event()
        tail: Deque[str] = collections.deque(maxlen=50)

        def read_stdout() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                if not ready.is_set():
                    lines.put(line)
            lines.put(None)

        def read_stderr() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                tail.append(line)

        threading.Thread(target=read_stdout, name="petstore-stdout", daemon=True).start()
        stderr_thread = threading.Thread(target=read_stderr, name="petstore-stderr", daemon=True)
        stderr_thread.start()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                process.kill()
                process.wait()
                raise ServiceStartError(f"no ready line from {' '.join(command[:2])} within {timeout:g} s", "".join(tail))
            if line is None:
                code = process.wait()
                stderr_thread.join(timeout=5)
                raise ServiceStartError(f"the service exited with code {code} before it was ready", "".join(tail), code)
            if line.startswith(READY):
                ready.set()
                url = line[len(READY):].split()[0]
                return cls(url, admin_key, {}, process, folder, tail)

    def client(self, key: Optional[str] = "pytest", **kwargs: Any) -> Client:
        """A client of the root world, with the API key named ``key`` (None: no key) and the admin key."""
        api_key = self.keys[key] if key is not None else None
        return Client(self.root, key=api_key, admin_key=self.admin_key, **kwargs)

    def describe(self) -> Dict[str, Any]:
        """What another process needs to use this service (``Service.attach(**describe())``)."""
        return {"url": self.url, "admin_key": self.admin_key, "keys": dict(self.keys)}

    @classmethod
    def attach(cls, url: str, admin_key: str, keys: Mapping[str, str]) -> "Service":
        """A service started elsewhere (another process started it and stops it)."""
        return cls(url, admin_key, keys)

    @property
    def stderr(self) -> str:
        """The last lines the process wrote on stderr."""
        return "".join(self._stderr_tail)

    def stop(self, timeout: float = 15.0) -> Optional[int]:
        """SIGTERM (in-flight requests finish), then SIGKILL after ``timeout`` s; the exit code.
        A service this object did not start is left alone (None)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._folder:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        return self.process.returncode

    def __enter__(self) -> "Service":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
