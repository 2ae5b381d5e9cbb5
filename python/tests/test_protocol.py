from fulcrum_client.protocol import client_hash, worker_of


def test_client_hash_is_fnv1a_64() -> None:
    # The FNV-1a-64 reference values: the empty string is the offset basis.
    assert client_hash("") == 0xCBF29CE484222325
    assert client_hash("a") == 0xAF63DC4C8601EC8C
    assert client_hash("foobar") == 0x85944171F73967E8


def test_worker_of_splits_by_hash() -> None:
    assert worker_of("foobar", 1) == 0
    assert worker_of("foobar", 0) == 0
    assert worker_of("foobar", 7) == 0x85944171F73967E8 % 7


def test_balancer_fixture_creates_a_group(balancer) -> None:  # type: ignore[no-untyped-def]
    g = balancer.create_group("g", binding="on-demand")
    assert g["name"] == "g"
    assert g["advertise"].startswith("http://127.0.0.1:")
