"""The claims this process made, answered while the store cannot be asked (``gateway.state.ledger``)."""

import time

from gateway.state.ledger import Ledger


def test_claims_made_are_known_and_unwritten_ones_queue_until_written():
    ledger = Ledger(max_claims=10)
    ledger.made("t:a:own:response:r1")
    ledger.unwritten("t:a:own:response:r1")
    assert ledger.knows("t:a:own:response:r1") and not ledger.knows("t:b:own:response:r1")
    assert ledger.waiting("t:a:own:response:r1") and ledger.pending == 1
    assert ledger.next_unwritten() == "t:a:own:response:r1" and ledger.pending == 1  # until written
    ledger.written("t:a:own:response:r1")
    assert ledger.next_unwritten() is None and not ledger.waiting("t:a:own:response:r1")


def test_a_tenant_queueing_many_claims_does_not_push_out_anothers():
    ledger = Ledger(max_claims=10)
    ledger.made("t:a:own:response:mine")
    ledger.unwritten("t:a:own:response:mine")
    for n in range(1000):
        ledger.made(f"t:b:own:response:{n}")
        ledger.unwritten(f"t:b:own:response:{n}")
    assert ledger.knows("t:a:own:response:mine") and ledger.waiting("t:a:own:response:mine")
    assert ledger.pending == 10 and ledger.knows("t:b:own:response:999") and not ledger.knows("t:b:own:response:0")


def test_claims_past_the_ttl_are_forgotten_and_not_written():
    ledger = Ledger(ttl_s=0.01)
    ledger.made("t:a:own:response:r1")
    ledger.unwritten("t:a:own:response:r1")
    time.sleep(0.03)
    assert not ledger.knows("t:a:own:response:r1")
    assert ledger.next_unwritten() is None and ledger.pending == 0
