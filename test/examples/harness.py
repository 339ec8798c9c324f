#!/usr/bin/env python3
"""A test harness in Python (standard library only) around the petstore service.

It starts the service, waits for its ready line, and then does what a harness of a pet store
client does: reset, seed, check what was sent (the request journal), move the clock past a
429 instead of waiting, break a create's answer and retry it with the same Idempotency-Key
(one pet, not two), and save and restore a snapshot.

    python3 harness.py [path/to/dist/petstore.js]      (NODE=/path/to/node to choose node)

The service's stdout is read on a thread for the whole run: a pipe nobody reads fills up, and
a service that cannot write its log lines stops answering.
"""
import http.client
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request

ADMIN_KEY = "admin-key-python-example"
CLIENT_KEY = "client-key-python-example"


def start(bundle, config_path):
    """Starts the service on a free port; returns (process, base URL without /v1)."""
    node = os.environ.get("NODE", "node")
    proc = subprocess.Popen(
        [node, bundle, "--port", "0", "--config", config_path],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    lines = queue.Queue()

    def read(stream, sink):
        for line in stream:
            sink.put(line)
        sink.put(None)

    threading.Thread(target=read, args=(proc.stdout, lines), daemon=True).start()
    # stderr is drained too, for the same reason.
    threading.Thread(target=read, args=(proc.stderr, queue.Queue()), daemon=True).start()
    while True:
        line = lines.get(timeout=10)
        if line is None:
            raise RuntimeError("the service exited before its ready line")
        if line.startswith("petstore listening on "):
            url = line.split()[-1]
            return proc, url[: -len("/v1")]


def call(base, method, path, body=None, key=CLIENT_KEY, headers=None):
    """One request; returns (status, headers, parsed JSON body or None)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", "Bearer " + key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            text = res.read()
            return res.status, res.headers, json.loads(text) if text else None
    except urllib.error.HTTPError as err:
        text = err.read()
        return err.code, err.headers, json.loads(text) if text else None


def admin(base, method, path, body=None):
    return call(base, method, "/__admin" + path, body, key=ADMIN_KEY)


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print("ok:", what)


def main():
    bundle = sys.argv[1] if len(sys.argv) > 1 else "dist/petstore.js"
    folder = tempfile.mkdtemp(prefix="petstore-python-")
    config_path = os.path.join(folder, "petstore.config.json")
    with open(config_path, "w") as f:
        json.dump({
            "plans": {"free": {"perMinute": 2, "perDay": 1000}},
            "keys": [{"key": CLIENT_KEY, "plan": "free", "name": "python-client"}],
            "admin": {"key": ADMIN_KEY},
        }, f)
    proc, base = start(bundle, config_path)
    try:
        check(admin(base, "POST", "/reset")[0] == 204, "reset")
        status, _, seeded = admin(base, "POST", "/seed", [{"name": "Rex", "categoryId": 1}, {"name": "Tom", "categoryId": 2}])
        check(status == 201 and len(seeded) == 2, "seed two pets")

        # What did the client send? The journal says.
        call(base, "GET", "/v1/pets?limit=10")
        _, _, journal = admin(base, "GET", "/requests?path=/v1/pets")
        entry = journal["requests"][-1]
        check(entry["query"] == {"limit": "10"} and entry["key"] == "python-client" and entry["status"] == 200,
              "the journal shows the request, its query and the key's name")

        # A 429: move the clock by its Retry-After instead of sleeping.
        status, headers, _ = call(base, "GET", "/v1/pets")
        while status != 429:
            status, headers, _ = call(base, "GET", "/v1/pets")
        retry_after = int(headers["Retry-After"])
        _, _, clock = admin(base, "POST", "/clock", {"advanceMs": retry_after * 1000})
        check(clock["offsetMs"] == retry_after * 1000, "the clock moved by Retry-After")
        check(call(base, "GET", "/v1/pets")[0] == 200, "served again after the moved time")

        # A create whose answer is cut in half: stored, but the client does not know it.
        admin(base, "POST", "/clock", {"advanceMs": 60_000})
        admin(base, "POST", "/faults", {"operation": "createPet", "kind": "truncated"})
        host, port = base[len("http://"):].rsplit(":", 1)
        body = json.dumps({"name": "Once", "categoryId": 3})
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.request("POST", "/v1/pets", body, {
            "Authorization": "Bearer " + CLIENT_KEY, "Content-Type": "application/json", "Idempotency-Key": "create-once",
        })
        res = conn.getresponse()
        try:
            res.read()
            cut = False
        except http.client.IncompleteRead:
            cut = True
        conn.close()
        check(res.status == 201 and cut, "the create's answer was truncated")
        status, headers, pet = call(base, "POST", "/v1/pets", {"name": "Once", "categoryId": 3},
                                    headers={"Idempotency-Key": "create-once"})
        check(status == 201 and headers["Idempotent-Replayed"] == "true", "the retry is answered from the first create")
        admin(base, "POST", "/clock", {"advanceMs": 60_000})
        _, _, pets = call(base, "GET", "/v1/pets?limit=100")
        check([p["name"] for p in pets].count("Once") == 1, "exactly one pet from the create and its retry")

        # Snapshot, change, restore.
        status, _, saved = admin(base, "PUT", "/snapshots/after-create")
        check(status == 201 and saved["pets"] == 3, "snapshot saved with three pets")
        admin(base, "POST", "/clock", {"advanceMs": 60_000})
        call(base, "POST", "/v1/pets", {"name": "Extra", "categoryId": 4})
        check(admin(base, "POST", "/snapshots/after-create/restore")[0] == 204, "snapshot restored")
        admin(base, "POST", "/clock", {"advanceMs": 60_000})
        _, _, pets = call(base, "GET", "/v1/pets?limit=100")
        check([p["name"] for p in pets] == ["Rex", "Tom", "Once"], "the pets are those of the snapshot")
        print("harness example: ok")
    finally:
        proc.terminate()
        proc.wait(timeout=15)


if __name__ == "__main__":
    main()
