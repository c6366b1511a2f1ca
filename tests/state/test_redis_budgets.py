"""Each tenant's budget on Redis, trimmed by the scripts that write (``gateway.state.redis_budgets``)."""

from gateway.state import ChainRecord, HistoryMark, VetoRecord
from gateway.state.claims import key as claim_key
from gateway.state.redis import RedisStore

A, B = "t:aaaaaaaaaaaaaaaaaaaaaaaa:", "t:bbbbbbbbbbbbbbbbbbbbbbbb:"


def store_for(url: str, **options) -> RedisStore:
    return RedisStore(url, **{"key_prefix": "t:", "op_timeout_s": 5.0, "mirror_sessions": 0, **options})


async def test_a_tenants_sessions_beyond_its_cap_lose_their_keys_and_no_other_tenants_do(redis_server):
    store = store_for(redis_server.url, tenant_max_sessions=5)
    await store.session_state(A + "h:run", HistoryMark(1, "a"))
    await store.add_veto(A + "h:run", VetoRecord(1, "x", ({"role": "tool", "content": "refused"},)))
    for n in range(20):
        await store.session_state(f"{B}h:{n}", HistoryMark(1, "b"))
    client = redis_server.client()
    assert (
        client.zcard(f"t:s:{{{B}}}") == 5 and client.exists(f"t:h:{{{B}h:19}}") and not client.exists(f"t:h:{{{B}h:0}}")
    )
    assert len(await store.vetoes(A + "h:run")) == 1 and (await store.session_state(A + "h:run")).mark
    assert store.evictions == 15 and store.budget_evictions["sessions", "tenant_cap"] == 15
    await store.aclose()


async def test_a_tenants_records_and_claims_beyond_its_byte_cap_go_oldest_first(redis_server):
    record = ChainRecord(({"role": "user", "content": "x" * 1000},))
    size = len(record.dumps())
    store = store_for(redis_server.url, tenant_max_chain_bytes=size * 10)
    await store.save_claim(claim_key(A, "response", "mine"))
    await store.save_response_chain(A + "mine", record)
    for n in range(30):
        await store.save_claim(claim_key(B, "response", str(n)))
        await store.save_response_chain(f"{B}{n}", record)
    assert await store.claimed(claim_key(A, "response", "mine")) and await store.response_chain(A + "mine") == record
    assert await store.response_chain(B + "29") == record and await store.response_chain(B + "0") is None
    assert await store.claimed(claim_key(B, "response", "29")) and not await store.claimed(
        claim_key(B, "response", "0")
    )
    sizes = redis_server.client().hgetall(f"t:rs:{{{B}}}")
    assert int(sizes[b""]) <= size * 10 and store.budget_evictions["records", "tenant_cap"] > 0
    await store.aclose()
