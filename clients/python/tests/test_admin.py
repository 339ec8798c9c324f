"""Every admin call of the client: reset, seed, journal, clock, snapshots, faults."""
import pytest

from petstore_client import BrokenAnswer, PetstoreError


def test_reset_empties_the_store_and_ids_start_again(petstore):
    petstore.create_pet("Rex", 1)
    petstore.reset()
    assert petstore.list_pets() == []
    assert petstore.create_pet("Tom", 2)["id"] == 1


def test_seed_with_and_without_ids(petstore):
    stored = petstore.seed([{"name": "Rex", "categoryId": 1}, {"id": 10, "name": "Tom", "categoryId": 2, "status": "sold"}])
    assert [p["id"] for p in stored] == [1, 10]
    assert petstore.get_pet(10)["status"] == "sold"


def test_seed_refuses_a_bad_pet(petstore):
    with pytest.raises(PetstoreError) as caught:
        petstore.seed([{"name": "Rex"}])
    assert caught.value.status == 400
    assert petstore.list_pets() == []


def test_journal_query_count_and_clear(petstore):
    petstore.list_pets(limit=10)
    petstore.create_pet("Rex", 1)
    with pytest.raises(PetstoreError):
        petstore.get_pet(42)
    page = petstore.journal.query()
    assert page["dropped"] == 0
    assert [(e["method"], e["path"], e["status"]) for e in page["requests"]] == [
        ("GET", "/v1/pets", 200), ("POST", "/v1/pets", 201), ("GET", "/v1/pets/42", 404)]
    first = page["requests"][0]
    assert first["query"] == {"limit": "10"} and first["key"] == "pytest"
    assert page["requests"][1]["body"] == {"name": "Rex", "categoryId": 1}
    assert petstore.journal.count(method="POST") == 1
    assert petstore.journal.count(status=404) == 1
    assert [e["status"] for e in petstore.journal.requests(since=first["requestId"])] == [201, 404]
    assert len(petstore.journal.requests(limit=1)) == 1
    petstore.journal.clear()
    assert petstore.journal.count() == 0


def test_admin_requests_are_not_in_the_journal(petstore):
    petstore.clock.get()
    petstore.faults.list()
    assert petstore.journal.count() == 0


@pytest.mark.parametrize("filters, field", [
    ({"status": "abc"}, "status"),
    ({"limit": 0}, "limit"),
    ({"limit": 1001}, "limit"),
    ({"method": "G E T"}, "method"),
])
def test_a_bad_journal_filter_is_a_400_naming_it(petstore, filters, field):
    with pytest.raises(PetstoreError) as caught:
        petstore.journal.query(**filters)
    assert caught.value.status == 400
    assert field in caught.value.message


def test_the_clock_moves_forward_only(petstore):
    before = petstore.clock.get()
    assert before["offsetMs"] == 0
    moved = petstore.clock.advance(3_600_000)
    assert moved["offsetMs"] == 3_600_000
    assert moved["now"] > before["now"]
    for bad in (-1, 1.5, "10"):
        with pytest.raises(PetstoreError) as caught:
            petstore.clock.advance(bad)
        assert caught.value.status == 400
    assert petstore.clock.get()["offsetMs"] == 3_600_000
    petstore.reset()
    assert petstore.clock.get()["offsetMs"] == 0


def test_moving_the_clock_ends_a_429_instead_of_sleeping(petstore):
    # Requests without a key (401s) have a small budget per client address: used up, a 429.
    keyless = petstore.with_key(None)
    answer = keyless.request("GET", "/v1/pets")
    budget = int(answer.header("x-ratelimit-limit"))
    for _ in range(budget + 1):
        answer = keyless.request("GET", "/v1/pets")
        if answer.status == 429:
            break
    assert answer.status == 429
    retry_after = int(answer.header("retry-after"))
    petstore.clock.advance(retry_after * 1000)
    assert keyless.request("GET", "/v1/pets").status == 401


def test_snapshots_save_list_restore_delete(petstore):
    petstore.seed([{"name": "Rex", "categoryId": 1}, {"name": "Tom", "categoryId": 2}])
    assert petstore.snapshots.save("two") == {"name": "two", "pets": 2}
    petstore.create_pet("Extra", 3)
    assert [s["name"] for s in petstore.snapshots.list()] == ["two"]
    petstore.snapshots.restore("two")
    assert [p["name"] for p in petstore.list_pets()] == ["Rex", "Tom"]
    assert petstore.create_pet("Next", 4)["id"] == 3
    petstore.snapshots.delete("two")
    assert petstore.snapshots.list() == []
    with pytest.raises(PetstoreError) as caught:
        petstore.snapshots.restore("two")
    assert (caught.value.status, caught.value.code) == (404, "not_found")


def test_a_status_fault_fails_the_next_requests_and_stores_nothing(petstore):
    armed = petstore.faults.arm(operation="createPet", status=503, count=2, retry_after=7)
    assert [f["operation"] for f in armed] == ["createPet"]
    assert petstore.faults.list()[0]["remaining"] == 2
    for _ in range(2):
        with pytest.raises(PetstoreError) as caught:
            petstore.create_pet("Rex", 1)
        assert caught.value.status == 503
        assert caught.value.headers["retry-after"] == "7"
    assert petstore.create_pet("Rex", 1)["id"] == 1
    assert petstore.faults.list() == []


def test_faults_are_cleared(petstore):
    petstore.faults.arm({"operation": "*", "status": 429, "probability": 0.5, "seed": 1})
    assert len(petstore.faults.list()) == 1
    petstore.faults.clear()
    assert petstore.faults.list() == []


def test_a_bad_fault_is_a_400(petstore):
    with pytest.raises(PetstoreError) as caught:
        petstore.faults.arm(operation="createPet", status=503, kind="reset")
    assert caught.value.status == 400
    assert petstore.faults.list() == []


@pytest.mark.parametrize("kind", ["reset", "empty", "truncated"])
def test_a_broken_create_raises_broken_answer_and_its_retry_is_a_replay(petstore, kind):
    petstore.faults.arm(operation="createPet", kind=kind)
    with pytest.raises(BrokenAnswer) as caught:
        petstore.create_pet("Once", 3, idempotency_key="create-once")
    assert caught.value.kind == kind
    if kind == "truncated":
        assert caught.value.status == 201
    again = petstore.request("POST", "/v1/pets", {"name": "Once", "categoryId": 3}, headers={"Idempotency-Key": "create-once"})
    assert again.status == 201 and again.header("idempotent-replayed") == "true"
    assert [p["name"] for p in petstore.list_pets()] == ["Once"]
