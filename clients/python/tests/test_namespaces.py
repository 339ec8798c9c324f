"""Namespaces: each a whole world of its own on one service, made by its first request."""
import pytest

from petstore_client import Client, PetstoreError, Service
from petstore_client.pytest_plugin import namespace_name


def test_the_fixture_gives_a_namespace_of_its_own(petstore):
    assert petstore.namespace_name is not None
    assert petstore.url.endswith(f"/ns/{petstore.namespace_name}/v1")
    petstore.list_pets()
    names = [ns["name"] for ns in petstore.namespaces.list()]
    assert petstore.namespace_name in names


def test_namespace_names_are_unique_and_valid():
    names = {namespace_name("test_something[with params/and:odd chars]" * 3) for _ in range(1000)}
    assert len(names) == 1000
    for name in names:
        Client("http://127.0.0.1:1").namespace(name)  # raises for an invalid name


def _two(petstore):
    return petstore.namespace(petstore.namespace_name + "-a"), petstore.namespace(petstore.namespace_name + "-b")


@pytest.fixture
def pair(petstore):
    a, b = _two(petstore)
    yield a, b
    for ns in (a, b):
        try:
            petstore.namespaces.drop(ns.namespace_name)
        except PetstoreError as err:
            if err.status != 404:
                raise


def test_pets_and_ids_are_separate(pair):
    a, b = pair
    assert a.create_pet("Rex", 1)["id"] == 1
    assert a.create_pet("Tom", 1)["id"] == 2
    assert b.create_pet("Kit", 2)["id"] == 1
    assert [p["name"] for p in a.list_pets()] == ["Rex", "Tom"]
    assert [p["name"] for p in b.list_pets()] == ["Kit"]
    names = [p["name"] for p in a.root_client().iter_pets(limit=100)]
    assert "Rex" not in names and "Kit" not in names


def test_clock_faults_journal_snapshots_and_limits_are_separate(pair):
    a, b = pair
    a.clock.advance(60_000)
    assert b.clock.get()["offsetMs"] == 0
    a.faults.arm(operation="*", status=503, count=100)
    assert b.list_pets() == []
    assert b.faults.list() == []
    with pytest.raises(PetstoreError):
        a.list_pets()
    a.faults.clear()
    a.snapshots.save("only-in-a")
    assert b.snapshots.list() == []
    with pytest.raises(PetstoreError) as caught:
        b.snapshots.restore("only-in-a")
    assert caught.value.status == 404
    keyless = a.with_key(None)
    statuses = [keyless.request("GET", "/v1/pets").status for _ in range(200)]
    assert 429 in statuses  # the keyless budget of this address, used up in a
    assert b.with_key(None).request("GET", "/v1/pets").status == 401  # and whole in b
    assert b.journal.count() == 2
    assert a.journal.count(status=429) >= 1


def test_a_reset_reaches_its_own_namespace_only(pair):
    a, b = pair
    a.create_pet("Rex", 1)
    b.create_pet("Kit", 2)
    a.reset()
    assert a.list_pets() == []
    assert [p["name"] for p in b.list_pets()] == ["Kit"]


def test_listing_and_dropping(pair):
    a, b = pair
    a.create_pet("Rex", 1)
    b.list_pets()
    listed = {ns["name"]: ns for ns in a.namespaces.list()}
    assert listed[a.namespace_name]["pets"] == 1
    assert listed[a.namespace_name]["requests"] >= 1
    assert listed[b.namespace_name]["pets"] == 0
    a.namespaces.drop(a.namespace_name)
    assert a.namespace_name not in [ns["name"] for ns in a.namespaces.list()]
    with pytest.raises(PetstoreError) as caught:
        a.namespaces.drop(a.namespace_name)
    assert (caught.value.status, caught.value.code) == (404, "not_found")
    assert a.list_pets() == []  # made again, empty


def test_every_url_the_service_writes_keeps_the_prefix(petstore):
    created = petstore.request("POST", "/v1/pets", {"name": "Rex", "categoryId": 1})
    assert created.header("location") == f"{petstore.url}/pets/1"
    petstore.create_pet("Tom", 1)
    page = petstore.request("GET", "/v1/pets", query={"limit": 1})
    assert page.next_url.startswith(f"{petstore.url}/pets?")
    assert [p["id"] for p in petstore.iter_pets(limit=1)] == [1, 2]
    deprecated = petstore.request("GET", "/v1/pets/1")
    assert f"<{petstore.url}/pets>" in deprecated.header("link")
    assert petstore.openapi()["servers"][0]["url"] == petstore.url


@pytest.mark.parametrize("path", ["/ns/bad!name/v1/pets", "/ns/" + "x" * 65 + "/v1/pets", "/ns/a%2Fb/v1/pets"])
def test_a_bad_namespace_name_is_a_400_naming_it(petstore, path):
    answer = petstore.request("GET", path)
    assert answer.status == 400, answer.body
    assert "namespace" in answer.body["message"]


def test_the_bound_is_a_409_and_off_is_a_404():
    with Service.start(admin={"namespaces": 2}) as service:
        root = service.client()
        root.namespace("one").list_pets()
        root.namespace("two").list_pets()
        with pytest.raises(PetstoreError) as caught:
            root.namespace("three").list_pets()
        assert (caught.value.status, caught.value.code) == (409, "conflict")
        assert "2" in caught.value.message
        assert sorted(ns["name"] for ns in root.namespaces.list()) == ["one", "two"]
        root.namespaces.drop("one")
        assert root.namespace("three").list_pets() == []
    with Service.start(admin={"namespaces": 0}) as service:
        answer = service.client().namespace("one").request("GET", "/v1/pets")
        assert answer.status == 404
