"""The required-tool rule (which tool a turn must call): every rule of the shipped portfolio example,
positive and negative, memory stripping, the 4-message window, and when the run satisfies it."""

from __future__ import annotations

import json

import pytest
from loop_traces import propose

from gateway.detectors import REGISTRY
from gateway.detectors.required_tool import RequiredToolSettings, resolve, satisfied
from gateway.policy import Action, load_policy
from gateway.policy.loader import SHIPPED_DIRS
from gateway.trace.builder import build_trace
from gateway.trace.model import VETO_MARKER, Conversation, ToolCall, Turn
from gateway.trace.settings import TraceSettings

EXAMPLE = SHIPPED_DIRS[1] / "examples" / "portfolio.yaml"
SETTINGS: RequiredToolSettings = load_policy(EXAMPLE).resolve().detectors["required_tool"]
VIEW, DIAGNOSE = ("portfolio", (("mode", "view"),)), ("portfolio", (("mode", "diagnose"),))
TABLE = "你的持仓如下：\n| 代码 | 名称 | 持股 | 成本价 |\n| 600519 | 贵州茅台 | 100 | 1500 |"
OFFER = TABLE + "\n需要我帮你做个持仓体检吗？"


def turns(*messages: tuple[str, str]) -> tuple[Turn, ...]:
    return tuple(Turn(i, role, text) for i, (role, text) in enumerate(messages))


def expected(*messages: tuple[str, str]):
    found = resolve(turns(*messages), SETTINGS)
    return (found.tool, found.args) if found else None


def kind(*messages: tuple[str, str]) -> str | None:
    found = resolve(turns(*messages), SETTINGS)
    return found.rule if found else None


# --- keyword groups ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["我有什么持仓？", "  帮我看看我买了啥  ", "我的持仓情况", "What did I buy last week?", "Please SHOW MY HOLDINGS"],
)
def test_view_keywords(text):
    assert expected(("user", text)) == VIEW


@pytest.mark.parametrize(
    "text",
    ["我持仓怎么样", "持仓健康吗？", "帮我审一下持仓吧", "Is my portfolio healthy?", "review my holdings please"],
)
def test_diagnose_keywords(text):
    assert expected(("user", text)) == DIAGNOSE


@pytest.mark.parametrize(
    "text", ["今天天气怎么样", "贵州茅台是做什么的", "write a poem about stocks", "", "健康吗", "体检", "好的"]
)
def test_no_rule_without_keywords_or_context(text):
    assert expected(("system", "你是一个助手"), ("user", text)) is None


# --- memory stripping ----------------------------------------------------------------------------


def test_recalled_memories_never_trigger():
    memory = "<relevant-memories>用户常问：我有什么持仓？持仓健康吗？</relevant-memories>"
    assert expected(("user", memory + "今天天气怎么样")) is None
    assert expected(("user", memory.upper().replace("持仓", "x") + "今天天气怎么样")) is None  # tag case
    assert expected(("user", "<relevant-memories>我买了啥 (unclosed, truncated")) is None
    assert expected(("user", "今天天气怎么样 我有什么持仓")) == VIEW  # the same words, typed


def test_only_the_current_user_message_block_is_matched():
    wrapped = (
        "<relevant-memories>持仓情况: 600519</relevant-memories>\n"
        "<current-user-message>{}</current-user-message>\n(回复时参考持仓情况)"
    )
    assert expected(("user", wrapped.format("我买了啥"))) == VIEW
    assert expected(("user", wrapped.format("讲个笑话"))) is None


def test_memories_in_earlier_messages_are_no_context_marker():
    recalled = "<relevant-memories>持仓: 600519 成本价 1500</relevant-memories>讲个笑话"
    assert expected(("user", recalled), ("assistant", "好的，这是一个笑话。"), ("user", "体检")) is None


# --- contextual follow-up --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "体检",
        "体检一下？",
        "健康吗",
        "帮我分析这些",
        "这几只怎么样，要不要卖掉一些换成别的股票呢",
        "health check",
        "Can you analyze these for me?",
    ],
)
def test_followup_after_the_holdings_table(text):
    assert expected(("user", "我有什么持仓"), ("assistant", TABLE), ("user", text)) == DIAGNOSE
    assert kind(("user", "x"), ("assistant", TABLE), ("user", text)) == "followup"


@pytest.mark.parametrize("marker", ["持仓", "成本价", "代码 | 名称 | 持股", "my holdings are AAPL and MSFT"])
def test_each_context_marker_counts(marker):
    assert expected(("assistant", marker), ("user", "体检")) == DIAGNOSE


def test_followup_needs_a_marker():
    assert expected(("user", "讲讲茅台"), ("assistant", "茅台是白酒企业。"), ("user", "健康吗")) is None


def test_a_long_input_is_no_short_followup():
    long = "我昨天去医院做了体检，医生说我的血压有点高需要注意"
    assert expected(("assistant", TABLE), ("user", long)) is None


def test_context_is_any_role_including_tool_results():
    history = (("user", "查一下"), ("assistant", ""), ("tool", '{"持仓": ["600519"]}'), ("user", "这几只"))
    assert expected(*history) == DIAGNOSE


def test_the_window_is_the_4_messages_before_the_input():
    filler = [("user", "a"), ("assistant", "b"), ("user", "c")]
    four_back = [("assistant", TABLE), *filler, ("user", "体检")]
    five_back = [("assistant", TABLE), ("assistant", "z"), *filler, ("user", "体检")]
    assert expected(*four_back) == DIAGNOSE
    assert expected(*five_back) is None


def test_the_window_is_configurable():
    wide = SETTINGS.model_validate({**SETTINGS.model_dump(), "context_messages": 5})
    history = turns(
        ("assistant", TABLE), ("assistant", "z"), ("user", "a"), ("assistant", "b"), ("user", "c"), ("user", "体检")
    )
    assert resolve(history, wide) is not None


# --- affirmative follow-up ---------------------------------------------------------------------------


@pytest.mark.parametrize("yes", ["要", "好的", "可以", "行", "好的。", " 可以！", "OK", "Sure.", "go ahead"])
def test_affirmative_after_an_offer_to_analyse(yes):
    assert expected(("user", "我有什么持仓"), ("assistant", OFFER), ("user", yes)) == DIAGNOSE
    assert kind(("assistant", OFFER), ("user", yes)) == "affirmative"


def test_affirmative_needs_a_hint_and_a_marker():
    assert expected(("assistant", TABLE), ("user", "好的")) is None  # holdings, no offer
    assert expected(("assistant", "需要我帮你分析一下这篇文章吗？"), ("user", "好的")) is None  # offer, no holdings


@pytest.mark.parametrize("text", ["好的，谢谢", "行业分析", "银行", "要不要卖"])
def test_affirmative_is_the_whole_input(text):
    assert expected(("assistant", OFFER), ("user", text)) is None


# --- which input, and whether the run made the call ------------------------------------------------


def conversation(*calls: tuple[str, dict], user: str = "持仓健康吗", before: tuple[Turn, ...] = ()) -> Conversation:
    history = list(before) + [Turn(len(before), "user", user)]
    for n, (tool, args) in enumerate(calls, start=1):
        call = ToolCall(f"c{n}", tool, json.dumps(args))
        history.append(Turn(len(history), "assistant", "", (call,)))
        history.append(Turn(len(history), "tool", "ok", tool_call_id=call.id))
    return Conversation(tuple(history))


def test_the_input_is_the_last_genuine_user_turn():
    history = turns(("user", "我买了啥"), ("assistant", ""), ("user", VETO_MARKER + " call portfolio now"))
    assert resolve(history, SETTINGS).tool == "portfolio"  # our own note is not the input


@pytest.mark.parametrize(
    ("calls", "done"),
    [
        ((), False),
        ((("search", {"q": "x"}),), False),
        ((("portfolio", {"mode": "view"}),), False),  # the wrong mode
        ((("portfolio", {"mode": "diagnose", "extra": 1}),), True),
        ((("search", {"q": "x"}), ("portfolio", {"mode": "diagnose"})), True),
    ],
)
def test_satisfied_by_a_call_with_the_required_args(calls, done):
    trace = build_trace(conversation(*calls), TraceSettings())
    assert satisfied(resolve(trace.turns, SETTINGS), trace.events) is done


def test_satisfied_by_a_proposed_call_but_not_a_vetoed_or_earlier_one():
    trace = build_trace(conversation(), TraceSettings())
    assert satisfied(resolve(trace.turns, SETTINGS), propose(trace, "portfolio", {"mode": "diagnose"}).events)
    vetoed = Conversation(
        conversation(("portfolio", {"mode": "diagnose"})).turns[:2]
        + (Turn(2, "tool", VETO_MARKER + " rejected", tool_call_id="c1"),)
    )
    trace = build_trace(vetoed, TraceSettings())
    assert not satisfied(resolve(trace.turns, SETTINGS), trace.events)
    earlier = conversation(("portfolio", {"mode": "diagnose"}), user="持仓健康吗")
    whole = build_trace(conversation(before=earlier.turns), TraceSettings(scope="conversation"))
    assert not satisfied(resolve(whole.turns, SETTINGS), whole.events)  # a previous turn's call


def test_detector_is_off_by_default_and_counts_calls_without_it_when_thresholds_are_set():
    assert REGISTRY["required_tool"].settings().enabled is False
    trace = build_trace(conversation(("search", {"q": "a"}), ("search", {"q": "b"})), TraceSettings())
    assert REGISTRY["required_tool"].detect(trace, SETTINGS) is None  # thresholds off
    strict = SETTINGS.model_copy(update={"warn_at": 2})
    finding = REGISTRY["required_tool"].detect(trace, strict)
    assert finding.count == 2 and finding.tools == ("portfolio",)
    assert dict(finding.details)["call"] == 'portfolio(mode="diagnose")'
    done = build_trace(conversation(("search", {"q": "a"}), ("portfolio", {"mode": "diagnose"})), TraceSettings())
    assert REGISTRY["required_tool"].detect(done, strict) is None


def test_default_settings_resolve_nothing():
    assert resolve(turns(("user", "我有什么持仓")), RequiredToolSettings()) is None


def test_the_example_loads_and_its_texts_name_the_call():
    policy = load_policy(EXAMPLE).resolve()
    assert policy.detectors["required_tool"].max_retries == 2
    trace = build_trace(conversation(("search", {"q": "a"})), policy.trace_settings)
    finding = REGISTRY["required_tool"].detect(trace, SETTINGS.model_copy(update={"warn_at": 1}))
    assert 'portfolio(mode="diagnose")' in policy.render("reask", finding)
    assert policy.render("reask", finding).startswith(VETO_MARKER)  # never a genuine user turn
    assert "未被调用" in policy.render("warn", finding)
    assert policy.judge(trace).action == Action.PASS  # thresholds off: no request-path action


def test_each_message_is_read_up_to_scan_chars():
    late_marker = ("tool", "x" * 70_000 + " 持仓")
    assert expected(late_marker, ("user", "体检")) is None
    assert expected(("tool", "x" * 1_000 + " 持仓"), ("user", "体检")) == DIAGNOSE
