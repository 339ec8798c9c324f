"""Many tests at once on one service: threads, and whole pytest processes, one namespace each."""
import os
import subprocess
import sys
import threading

from petstore_client import Client

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


def test_threads_in_their_own_namespaces_see_only_their_own(petstore):
    workers, creates = 8, 25
    start = threading.Barrier(workers)
    seen = {}
    failures = []

    def work(index):
        ns = petstore.namespace(f"{petstore.namespace_name}-t{index}")
        try:
            start.wait(timeout=30)
            ids = [ns.create_pet(f"w{index}-{i}", index)["id"] for i in range(creates)]
            ns.clock.advance(1000 * index)
            seen[index] = (ids, [p["name"] for p in ns.iter_pets(limit=100)], ns.journal.count(operation="createPet"),
                           ns.clock.get()["offsetMs"])
        except Exception as err:  # reported below, with the worker's index
            failures.append((index, err))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for index in range(workers):
        try:
            petstore.namespaces.drop(f"{petstore.namespace_name}-t{index}")
        except Exception:
            pass
    assert failures == []
    for index, (ids, names, created, offset) in seen.items():
        assert ids == list(range(1, creates + 1))
        assert names == [f"w{index}-{i}" for i in range(creates)]
        assert created == creates
        assert offset == 1000 * index


def test_several_pytest_processes_share_one_service(petstore_service):
    """The example suite run four times at once, each process in namespaces of its own."""
    env = dict(os.environ)
    env.update(PETSTORE_URL=petstore_service.url, PETSTORE_ADMIN_KEY=petstore_service.admin_key,
               PETSTORE_API_KEY=petstore_service.keys["pytest"], PYTHONDONTWRITEBYTECODE="1")
    runs = [subprocess.Popen([sys.executable, "-m", "pytest", EXAMPLES, "-q", "-p", "no:cacheprovider"],
                             cwd=os.path.dirname(HERE), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True) for _ in range(4)]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    for run, out in zip(runs, outputs):
        assert run.returncode == 0, out
        assert " passed" in out and "failed" not in out, out
    # every process dropped its namespaces at the end of each test
    tags = tuple(f"p-{run.pid:x}" for run in runs)
    left = [ns["name"] for ns in Client(petstore_service.root, admin_key=petstore_service.admin_key).namespaces.list()
            if ns["name"].startswith(tags)]
    assert left == []
