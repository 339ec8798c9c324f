"""Faults for any test: by key and header, any error status or body, and per request with Prefer."""
import pytest

from petstore_client import BrokenAnswer, PetstoreError, Service


@pytest.mark.parametrize("status", [400, 418, 500, 502, 599])
def test_any_status_from_400_to_599_with_its_error_body(petstore, status):
    petstore.faults.arm(operation="listPets", status=status)
    with pytest.raises(PetstoreError) as caught:
        petstore.list_pets()
    assert caught.value.status == status
    assert caught.value.body["status"] == status
    assert isinstance(caught.value.code, str) and caught.value.message


def test_a_body_and_headers_of_the_tests_choosing(petstore):
    petstore.faults.arm(operation="getPet", status=502, body={"upstream": "down", "retry": [1, 2]},
                        headers={"X-Fault": "yes", "Retry-After": "3"})
    answer = petstore.request("GET", "/v1/pets/1")
    assert answer.status == 502
    assert answer.body == {"upstream": "down", "retry": [1, 2]}
    assert answer.header("x-fault") == "yes"
    assert answer.header("retry-after") == "3"


def test_a_fault_matches_a_key_by_name(petstore, petstore_service):
    petstore.faults.arm(operation="*", key="pytest", status=503)
    with pytest.raises(PetstoreError):
        petstore.list_pets()
    assert petstore.with_key(None).request("GET", "/v1/openapi.json").status == 200


def test_a_fault_for_keyless_requests(petstore):
    petstore.faults.arm(operation="*", key=None, status=503)
    assert petstore.with_key(None).request("GET", "/v1/openapi.json").status == 503
    assert petstore.list_pets() == []


def test_a_fault_matches_a_header(petstore):
    petstore.faults.arm(operation="listPets", header={"name": "X-Test-Case", "value": "broken"}, status=500, count=5)
    assert petstore.list_pets(headers={"X-Test-Case": "fine"}) == []
    with pytest.raises(PetstoreError) as caught:
        petstore.list_pets(headers={"x-test-case": "broken"})
    assert caught.value.status == 500
    assert petstore.list_pets() == []


@pytest.mark.parametrize("fault, field", [
    ({"operation": "listPets", "status": 399}, "status"),
    ({"operation": "listPets", "status": 600}, "status"),
    ({"operation": "listPets", "status": 500, "header": {"name": "X-A"}}, "header"),
    ({"operation": "listPets", "status": 500, "header": "X-A:b"}, "header"),
    ({"operation": "listPets", "status": 500, "key": 5}, "key"),
    ({"operation": "listPets", "status": 500, "headers": {"X-A": 1}}, "headers"),
    ({"operation": "listPets", "kind": "reset", "body": {}}, "body"),
])
def test_a_bad_fault_is_a_400_naming_the_field(petstore, fault, field):
    with pytest.raises(PetstoreError) as caught:
        petstore.faults.arm(fault)
    assert caught.value.status == 400
    assert field in caught.value.message
    assert petstore.faults.list() == []


def test_prefer_code(petstore):
    answer = petstore.request("GET", "/v1/pets", headers={"Prefer": "code=500"})
    assert answer.status == 500
    assert answer.body["status"] == 500
    assert answer.header("preference-applied") == "code=500"
    assert petstore.request("GET", "/v1/pets").status == 200


def test_prefer_delay(petstore):
    answer = petstore.request("GET", "/v1/pets", headers={"Prefer": "delay=50"})
    assert answer.status == 200
    assert answer.header("preference-applied") == "delay=50"


@pytest.mark.parametrize("kind", ["reset", "empty", "truncated"])
def test_prefer_fault(petstore, kind):
    with pytest.raises(BrokenAnswer) as caught:
        petstore.create_pet("Rex", 1, headers={"Prefer": f"fault={kind}"}, idempotency_key=f"k-{kind}")
    assert caught.value.kind == kind
    if kind == "truncated":
        assert caught.value.headers["preference-applied"] == "fault=truncated"
    # a create is stored before its answer is broken, as with an armed fault
    assert [p["name"] for p in petstore.list_pets()] == ["Rex"]


@pytest.mark.parametrize("prefer", ["respond-async", "code=700", "code=abc", "delay=30001", "fault=explode", "wait=5"])
def test_an_unknown_or_bad_prefer_is_ignored(petstore, prefer):
    answer = petstore.request("GET", "/v1/pets", headers={"Prefer": prefer})
    assert answer.status == 200
    assert answer.header("preference-applied") is None


def test_prefer_is_ignored_when_prefer_faults_is_off():
    with Service.start(admin={"preferFaults": False}) as service:
        answer = service.client().request("GET", "/v1/pets", headers={"Prefer": "code=500"})
        assert answer.status == 200
        assert answer.header("preference-applied") is None


def test_every_operation_declares_a_default_error_response(petstore):
    doc = petstore.openapi()
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "delete", "patch"):
                default = operation["responses"].get("default")
                assert default is not None, f"{method.upper()} {path} has no default response"
                if "$ref" in default:
                    default = doc["components"]["responses"][default["$ref"].rsplit("/", 1)[-1]]
                schema = default["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}, (path, schema)
