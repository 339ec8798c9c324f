"""What a pytest suite of a pet store client looks like with this package.

Each test gets ``petstore``: a client bound to a namespace of its own on one shared service,
so these tests can run side by side (pytest-xdist, or several pytest processes against one
service through PETSTORE_URL) and still see ids from 1, an untouched clock and an empty
journal. Swap ``petstore`` for your own client under test, pointed at ``petstore.url``.
"""
import pytest

from petstore_client import BrokenAnswer


def test_seeded_pets_are_listed(petstore):
    petstore.seed([{"name": "Rex", "categoryId": 1}, {"name": "Tom", "categoryId": 2, "status": "sold"}])
    assert [p["name"] for p in petstore.list_pets(status="sold")] == ["Tom"]


def test_what_the_client_sent_is_in_the_journal(petstore):
    petstore.list_pets(limit=10, headers={"User-Agent": "my-client/1.0"})
    [entry] = petstore.journal.requests(path="/v1/pets")
    assert entry["query"] == {"limit": "10"}
    assert entry["key"] == "pytest"
    assert entry["status"] == 200


def test_an_hour_of_backoff_in_one_call(petstore):
    # Requests without a key have a small budget per address; the first 429 says how long to wait.
    keyless = petstore.with_key(None)
    refused = next(a for a in (keyless.request("GET", "/v1/pets") for _ in range(1000)) if a.status == 429)
    petstore.clock.advance(int(refused.header("retry-after")) * 1000)
    assert keyless.request("GET", "/v1/pets").status != 429


def test_a_cut_create_retried_with_its_idempotency_key_makes_one_pet(petstore):
    petstore.faults.arm(operation="createPet", kind="truncated")
    with pytest.raises(BrokenAnswer):
        petstore.create_pet("Once", 3, idempotency_key="create-once")
    again = petstore.request("POST", "/v1/pets", {"name": "Once", "categoryId": 3},
                             headers={"Idempotency-Key": "create-once"})
    assert again.header("idempotent-replayed") == "true"
    assert [p["name"] for p in petstore.list_pets()] == ["Once"]


def test_restore_a_snapshot_before_each_step(petstore):
    petstore.seed([{"name": "Rex", "categoryId": 1}, {"name": "Tom", "categoryId": 2}])
    petstore.snapshots.save("seeded")
    petstore.create_pet("Extra", 4)
    petstore.snapshots.restore("seeded")
    assert [p["name"] for p in petstore.list_pets()] == ["Rex", "Tom"]


def test_ids_start_at_one_in_every_test(petstore):
    # Run side by side with the others: in a namespace of its own, nobody else's creates count.
    assert [petstore.create_pet(f"pet-{i}", 1)["id"] for i in range(20)] == list(range(1, 21))
