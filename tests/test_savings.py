"""The estimator shared by ``loopguard replay`` and the live savings sink."""

from __future__ import annotations

from gateway.savings import Pricer, estimate, one_round

CALL = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}]}
HISTORY = [{"role": "user", "content": "summarise a.txt " * 20}, CALL,
           {"role": "tool", "tool_call_id": "c1", "content": "the same text " * 50}]


def test_one_round_is_the_history_again_and_the_repeated_call():
    assert one_round(HISTORY) == [*HISTORY, CALL]
    assert one_round(HISTORY[:1]) == HISTORY[:1]  # nothing to repeat yet: the history alone


def test_estimate_counts_characters_and_prices_nothing():
    saved = estimate(HISTORY)
    assert saved.estimated and saved.cost is None
    assert saved.tokens == (len("summarise a.txt " * 20) + len("read_file") + len('{"path": "a.txt"}')
                            + len("the same text " * 50)) // 4


def test_a_known_model_is_counted_and_priced_an_unknown_one_estimated():
    pricer = Pricer()
    priced = pricer.savings(one_round(HISTORY), "gpt-4o-mini")
    assert not priced.estimated and priced.tokens > 0 and priced.cost > 0
    unknown = pricer.savings(one_round(HISTORY), "no-such-model-xyz")
    assert unknown.estimated and unknown.cost is None and pricer.unknown == {"no-such-model-xyz"}


def test_a_pricer_that_may_not_import_estimates_until_loaded():
    pricer = Pricer(lazy=False)
    assert pricer.savings(HISTORY, "gpt-4o-mini").cost is None and not pricer.loaded
    assert pricer.load() and pricer.savings(HISTORY, "gpt-4o-mini").cost > 0
