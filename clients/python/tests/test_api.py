"""The /v1 calls: answers as data, every error status as a PetstoreError with its Error body."""
import pytest

from petstore_client import Client, PetstoreError


def test_create_get_and_list(petstore):
    rex = petstore.create_pet("Rex", 1)
    tom = petstore.create_pet("Tom", 2, "sold")
    assert rex == {"id": 1, "name": "Rex", "categoryId": 1}
    assert tom == {"id": 2, "name": "Tom", "categoryId": 2, "status": "sold"}
    assert petstore.get_pet(2) == tom
    assert petstore.list_pets() == [rex, tom]
    assert petstore.list_pets(status="sold") == [tom]


def test_pages_follow_the_link_header(petstore):
    petstore.seed([{"name": f"p{i}", "categoryId": 1} for i in range(7)])
    first = petstore.request("GET", "/v1/pets", query={"limit": 3})
    assert [p["id"] for p in first.body] == [1, 2, 3]
    assert first.next_url is not None and first.next_url.startswith(petstore.url + "/pets?")
    assert [p["id"] for p in petstore.iter_pets(limit=3)] == list(range(1, 8))


def test_an_error_status_raises_with_the_error_body(petstore):
    with pytest.raises(PetstoreError) as caught:
        petstore.get_pet(999)
    err = caught.value
    assert (err.status, err.code) == (404, "not_found")
    assert err.body == {"code": "not_found", "message": err.message, "status": 404}
    assert "999" in err.message or "not found" in err.message.lower()
    assert "404" in str(err)


@pytest.mark.parametrize("pet, field", [
    ({"categoryId": 1}, "name"),
    ({"name": "Rex"}, "categoryId"),
    ({"name": "Rex", "categoryId": 1, "status": "lost"}, "status"),
    ({"name": "", "categoryId": 1}, "name"),
])
def test_a_bad_pet_is_a_400_naming_the_field(petstore, pet, field):
    with pytest.raises(PetstoreError) as caught:
        petstore.create_pet(pet=pet)
    assert (caught.value.status, caught.value.code) == (400, "invalid_request")
    assert field in caught.value.message
    assert petstore.list_pets() == []


def test_request_answers_as_is_without_raising(petstore):
    answer = petstore.with_key(None).request("GET", "/v1/pets")
    assert answer.status == 401
    assert answer.body["code"] == "unauthorized"
    assert answer.header("WWW-Authenticate").startswith("Bearer")


def test_a_wrong_key_is_refused(petstore):
    with pytest.raises(PetstoreError) as caught:
        petstore.with_key("not-a-key-of-this-service").list_pets()
    assert caught.value.status == 401


def test_the_idempotency_key_makes_a_retry_a_replay(petstore):
    first = petstore.request("POST", "/v1/pets", {"name": "Once", "categoryId": 3}, headers={"Idempotency-Key": "k-1"})
    again = petstore.request("POST", "/v1/pets", {"name": "Once", "categoryId": 3}, headers={"Idempotency-Key": "k-1"})
    assert first.status == again.status == 201
    assert first.header("idempotent-replayed") is None
    assert again.header("idempotent-replayed") == "true"
    assert again.body == first.body
    assert len(petstore.list_pets()) == 1


def test_openapi_and_health(petstore):
    doc = petstore.openapi()
    assert doc["openapi"].startswith("3.1")
    assert doc["servers"][0]["url"] == petstore.url
    assert petstore.health()


@pytest.mark.parametrize("url, root, namespace", [
    ("http://127.0.0.1:8080", "http://127.0.0.1:8080", None),
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080", None),
    ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080", None),
    ("http://127.0.0.1:8080/ns/a-1", "http://127.0.0.1:8080", "a-1"),
    ("http://127.0.0.1:8080/ns/a-1/v1", "http://127.0.0.1:8080", "a-1"),
])
def test_client_urls(url, root, namespace):
    client = Client(url)
    assert (client.root, client.namespace_name) == (root, namespace)
    assert client.url == root + (f"/ns/{namespace}" if namespace else "") + "/v1"


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "https://example.com", "http://h:1/v2", "http://h:1/ns/a/b"])
def test_client_refuses_what_is_not_a_petstore_url(url):
    with pytest.raises(ValueError):
        Client(url)


@pytest.mark.parametrize("name", ["", "a/b", "a b", "x" * 65, "é"])
def test_names_are_checked_before_sending(name):
    client = Client("http://127.0.0.1:1")
    with pytest.raises(ValueError):
        client.namespace(name)
    with pytest.raises(ValueError):
        client.snapshots.save(name)
