"""The journal keeps the whole exchange, filters on it, and waits for requests."""
import http.client
import threading
import time

import pytest

from petstore_client import PetstoreError


def test_an_entry_has_the_operation_the_request_headers_and_the_response(petstore):
    created = petstore.create_pet("Rex", 1, headers={"X-Trace-Id": "trace-1", "User-Agent": "my-client/2.0"})
    [entry] = petstore.journal.requests()
    assert entry["operation"] == "createPet"
    headers = entry["headers"]
    assert headers["x-trace-id"] == "trace-1"
    assert headers["user-agent"] == "my-client/2.0"
    assert headers["authorization"] == "Bearer pytest"
    assert headers["content-type"] == "application/json"
    assert all(name == name.lower() for name in headers)
    response = entry["response"]
    assert response["status"] == 201
    assert response["body"] == created
    assert response["headers"]["content-type"].startswith("application/json")
    assert response["headers"]["location"].endswith("/pets/1")
    assert "x-ratelimit-remaining" in response["headers"]


def test_the_api_key_is_never_in_the_journal(petstore):
    petstore.list_pets()
    petstore.with_key("a-key-this-service-does-not-know").request("GET", "/v1/pets")
    known, unknown = petstore.journal.requests()
    assert known["headers"]["authorization"] == "Bearer pytest"
    assert unknown["headers"]["authorization"] == "Bearer <unknown>"
    assert unknown["response"]["status"] == 401
    text = str(petstore.journal.query())
    assert petstore.key not in text and "a-key-this-service-does-not-know" not in text


def test_operations_and_null_for_no_operation(petstore):
    petstore.list_pets()
    with pytest.raises(PetstoreError):
        petstore.get_pet(7)
    petstore.request("GET", "/v1/nothing-here")
    assert [e["operation"] for e in petstore.journal.requests()] == ["listPets", "getPet", None]


def test_a_repeated_header_is_joined(petstore):
    conn = http.client.HTTPConnection(petstore._host, petstore._port, timeout=30)
    conn.putrequest("GET", petstore.prefix + "/v1/pets")
    conn.putheader("Authorization", f"Bearer {petstore.key}")
    conn.putheader("X-Tag", "a")
    conn.putheader("X-Tag", "b")
    conn.endheaders()
    assert conn.getresponse().status == 200
    conn.close()
    assert petstore.journal.requests()[0]["headers"]["x-tag"] == "a, b"


def test_a_response_body_over_64_kib_is_null(petstore):
    petstore.seed([{"name": "猫" * 256, "categoryId": 1}] * 100)  # 100 pets of 768-byte names: about 80 KB
    assert len(petstore.request("GET", "/v1/pets", query={"limit": 100}).text.encode()) > 64 * 1024
    [entry] = petstore.journal.requests()
    assert entry["response"]["status"] == 200
    assert entry["response"]["body"] is None


def test_filters_operation_path_prefix_and_headers(petstore):
    petstore.create_pet("Rex", 1, headers={"X-Case": "one", "X-Run": "r1"})
    petstore.create_pet("Tom", 2, headers={"X-Case": "two", "X-Run": "r1"})
    petstore.get_pet(1)
    petstore.list_pets()
    assert petstore.journal.count(operation="createPet") == 2
    assert petstore.journal.count(operation="getPet") == 1
    assert petstore.journal.count(path_prefix="/v1/pets/") == 1
    assert petstore.journal.count(path_prefix="/v1/pets") == 4
    assert petstore.journal.count(header="x-case:one") == 1
    assert petstore.journal.count(header=["X-Case:two", "x-run:r1"]) == 1
    assert petstore.journal.count(header={"x-case": "one", "x-run": "r2"}) == 0
    assert petstore.journal.count(header="x-run:r1", operation="createPet") == 2
    [tom] = petstore.journal.requests(header="x-case:two")
    assert tom["body"]["name"] == "Tom"


@pytest.mark.parametrize("query, field", [
    ({"header": "no-colon"}, "header"),
    ({"header": ":value"}, "header"),
    ({"operation": "notAnOperation"}, "operation"),
    ({"pathPrefix": "v1/pets"}, "pathPrefix"),
    ({"atLeast": "-1"}, "atLeast"),
    ({"atLeast": "many"}, "atLeast"),
    ({"atLeast": "1", "timeoutMs": "60001"}, "timeoutMs"),
    ({"atLeast": "1", "timeoutMs": "-5"}, "timeoutMs"),
    ({"atLeast": "1", "timeoutMs": "1.5"}, "timeoutMs"),
])
def test_a_bad_filter_is_a_400_naming_the_field(petstore, query, field):
    answer = petstore.request("GET", "/__admin/requests/count", query=query)
    assert answer.status == 400, answer.body
    assert answer.body["code"] == "invalid_request"
    assert field in answer.body["message"]


def test_wait_returns_when_the_request_comes(petstore):
    def later():
        time.sleep(0.3)
        petstore.create_pet("Late", 1)

    thread = threading.Thread(target=later)
    thread.start()
    result = petstore.journal.wait(at_least=1, timeout_ms=30_000, operation="createPet")
    thread.join()
    assert result["met"] is True
    assert result["count"] == 1
    assert isinstance(result["waitedMs"], (int, float)) and result["waitedMs"] >= 0


def test_wait_already_met_and_timed_out(petstore):
    petstore.list_pets()
    met = petstore.journal.wait(at_least=1, timeout_ms=30_000)
    assert (met["count"], met["met"]) == (1, True)
    missed = petstore.journal.wait(at_least=2, timeout_ms=200)
    assert (missed["count"], missed["met"]) == (1, False)
    assert missed["waitedMs"] >= 200
    nothing = petstore.journal.wait(at_least=1, timeout_ms=0, operation="getPet")
    assert (nothing["count"], nothing["met"]) == (0, False)


def test_many_waiters_are_all_woken(petstore):
    results = []

    def wait():
        results.append(petstore.journal.wait(at_least=3, timeout_ms=30_000, operation="listPets"))

    waiters = [threading.Thread(target=wait) for _ in range(5)]
    for w in waiters:
        w.start()
    time.sleep(0.2)
    for _ in range(3):
        petstore.list_pets()
    for w in waiters:
        w.join()
    assert [r["met"] for r in results] == [True] * 5
