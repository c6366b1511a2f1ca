"""The pricer shared by ``loopguard replay`` and the live savings sink."""

from __future__ import annotations

import pytest
from support.fresh import modules_loaded

from gateway.config import ModelPrice
from gateway.pricing import configured
from gateway.savings import Method, Pricer, estimate, one_round

CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
    ],
}
HISTORY = [
    {"role": "user", "content": "summarise a.txt " * 20},
    CALL,
    {"role": "tool", "tool_call_id": "c1", "content": "the same text " * 50},
]


@pytest.fixture(scope="module")
def pricer() -> Pricer:
    return Pricer(
        configured=configured(
            {
                "my-llama": ModelPrice(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0),
                "gpt-4o-mini": ModelPrice(input_usd_per_mtok=100.0, output_usd_per_mtok=100.0),
                "my-gpt": ModelPrice(input_usd_per_mtok=1.0, output_usd_per_mtok=1.0, tokenizer="cl100k_base"),
            }
        )
    )


def test_one_round_is_the_history_again_and_the_repeated_call():
    assert one_round(HISTORY) == [*HISTORY, CALL]
    assert one_round(HISTORY[:1]) == HISTORY[:1]  # nothing to repeat yet: the history alone


def test_estimate_counts_characters_and_prices_nothing():
    saved = estimate(HISTORY)
    assert saved.estimated and saved.cost is None
    assert (
        saved.tokens
        == (len("summarise a.txt " * 20) + len("read_file") + len('{"path": "a.txt"}') + len("the same text " * 50))
        // 4
    )


def test_an_openai_model_is_counted_by_tiktoken_and_priced_from_litellms_table(pricer):
    saved = pricer.savings(one_round(HISTORY), "gpt-4o")
    assert not saved.estimated and saved.tokens > 0
    # gpt-4o's list price in litellm's table: $2.50 / $10 per million tokens in / out
    assert 2.5e-6 * saved.tokens < saved.cost < 10e-6 * saved.tokens
    assert pricer.methods["gpt-4o"] == Method("o200k_base", "table")
    # a provider prefix is priced as the model itself
    assert pricer.savings(one_round(HISTORY), "openai/gpt-4o").cost == saved.cost


def test_an_unknown_model_is_estimated_and_unpriced_and_reported(pricer):
    saved = pricer.savings(one_round(HISTORY), "no-such-model-xyz")
    assert saved.estimated and saved.cost is None and saved.tokens == estimate(one_round(HISTORY)).tokens
    assert "no-such-model-xyz" in pricer.estimated and "no-such-model-xyz" in pricer.unpriced


def test_the_configs_prices_come_first(pricer):
    listed = Pricer().savings(one_round(HISTORY), "gpt-4o-mini")
    overridden = pricer.savings(one_round(HISTORY), "gpt-4o-mini")
    assert overridden.tokens == listed.tokens and overridden.cost == pytest.approx(listed.tokens * 100e-6)
    assert pricer.methods["gpt-4o-mini"] == Method("o200k_base", "config")


def test_a_self_hosted_model_is_priced_from_the_config_with_estimated_tokens(pricer):
    saved = pricer.savings(one_round(HISTORY), "my-llama")
    sent = estimate([HISTORY[0], HISTORY[2]]).tokens  # input; the call twice is output
    assert saved.estimated and saved.cost == pytest.approx(sent * 1e-6 + 2 * estimate([CALL]).tokens * 2e-6)
    assert pricer.methods["my-llama"] == Method("estimated", "config")
    named = pricer.savings(one_round(HISTORY), "my-gpt")  # the config names its tokenizer
    assert not named.estimated and pricer.methods["my-gpt"] == Method("cl100k_base", "config")


def test_pricing_never_imports_litellm():
    code = (
        "from gateway.savings import Pricer; "
        "s = Pricer().savings([{'role': 'user', 'content': 'hi'}], 'gpt-4o'); "
        "assert s.cost and not s.estimated, s"
    )
    assert modules_loaded(code, "litellm") == []


# The same loop in each protocol's own shape: the estimate counts its text through the adapter
# (a reader of chat keys would see ~1 token per item of these).
ANTHROPIC_HISTORY = [
    {"role": "user", "content": [{"type": "text", "text": "summarise a.txt " * 20}]},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.txt"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "the same text " * 50}]},
]
GEMINI_HISTORY = [
    {"role": "user", "parts": [{"text": "summarise a.txt " * 20}]},
    {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}}]},
    {
        "role": "user",
        "parts": [{"functionResponse": {"name": "read_file", "response": {"result": "the same text " * 50}}}],
    },
]


@pytest.mark.parametrize("protocol, history", [("anthropic", ANTHROPIC_HISTORY), ("gemini", GEMINI_HISTORY)])
def test_other_protocols_count_their_text_and_repeat_the_models_call(protocol, history):
    from gateway.protocols.registry import BY_NAME

    adapter = BY_NAME[protocol]
    assert one_round(history, adapter) == [*history, history[1]]
    chat = estimate(one_round(HISTORY)).tokens
    mine = estimate(one_round(history, adapter), adapter).tokens
    assert mine > 200 and abs(mine - chat) < chat * 0.1, (mine, chat)
    priced = Pricer(configured=configured({"my-llama": ModelPrice(input_usd_per_mtok=1.0, output_usd_per_mtok=2.0)}))
    saved = priced.savings(one_round(history, adapter), "my-llama", adapter)
    assert saved.tokens == mine and saved.cost and saved.cost > mine * 1e-6  # the repeated call at the output rate
