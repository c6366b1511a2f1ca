"""The shipped intervention texts, English and Chinese: data only; messages.py
compiles them when a policy loads.

Each text must name the tool, the pattern and the count and say what to do instead: a bare
"loop detected" does not change what a model does next.
"""

from __future__ import annotations

from types import MappingProxyType

from gateway.policy.actions import REJECT_MARKER

# warn is seed 001's "anchor message". reject must start with REJECT_MARKER (see actions.py).
_EN = {
    "warn": "[LoopGuard] Loop detected ({pattern}): you called `{tool}` {count} times without "
    "making progress (steps {steps}). {description}. Stop repeating it: change the "
    "arguments or the approach, or report what you have and finish.",
    "reject": REJECT_MARKER + " This `{tool}` call was rejected and not executed: it continues a "
    "loop ({pattern}, {count} times). {description}. Do not repeat it: try a different "
    "approach, or report what you have and finish.",
    "reask": "[LoopGuard] Your last `{tool}` call was rejected because it repeats a loop "
    "({pattern}). Choose a different action, or give your final answer now.",
    "terminate": "[LoopGuard] This run was stopped because the agent was stuck in a loop "
    "({pattern}: `{tool}`, {count} times). {description}. Done so far: {progress}. "
    "Review the task or change the approach before trying again.",
    # terminate mode "answer": the note the model reads on its last turn, tools closed. It names
    # the loop and what ran, so the answer can say what was found and what is still missing.
    "answer": "[LoopGuard] You are in a loop ({pattern}: `{tool}`, {count} times). "
    "{description}. Tools are now closed: do not call any tool. Done so "
    "far: {progress}. Answer the user now with what you have found, and say plainly what "
    "is still missing or could not be done.",
}
# Wording follows WeClaw's own alert ("请停止当前操作模式，换用不同方法或直接报告当前结果").
# {description} is left out: detectors write it in English.
_ZH = {
    "warn": "[LoopGuard 循环告警] 检测到{pattern}：`{tool}` 已重复调用 {count} 次且没有进展"
    "（步骤 {steps}）。请停止当前操作模式，换用不同的参数或方法，或直接报告当前结果并结束。",
    "reject": REJECT_MARKER + " 工具调用被拒绝，未执行：`{tool}` 重复了循环模式（{pattern}，"
    "{count} 次）。请不要再重复该调用，换用不同方法，或直接报告当前结果并结束。",
    "reask": "[LoopGuard] 你上一次的 `{tool}` 调用因重复循环（{pattern}）被拒绝。"
    "请选择不同的操作，或直接给出最终答复。",
    "terminate": "[LoopGuard] 任务因检测到持续循环而终止。循环模式：{pattern}（`{tool}`，"
    "重复 {count} 次）。已完成：{progress}。请检查任务或换用不同方法后再试。",
    "answer": "[LoopGuard] 你陷入了循环（{pattern}）：`{tool}` 已被调用 {count} 次且没有进展。"
    "工具现已关闭，请不要再调用任何工具。已完成：{progress}。请立即根据已获得的信息回答用户，"
    "并明确说明还缺少什么、哪些未能完成。",
}
SHIPPED = MappingProxyType({"en": MappingProxyType(_EN), "zh": MappingProxyType(_ZH)})

# tool_rounds counts round trips, not repeats of one tool: "you called X 15 times" would be false,
# so its shipped texts say what it really means. An operator override of a kind replaces these too.
SPECIAL = {
    "en": {
        ("warn", "tool_rounds"): "[LoopGuard] This run has taken {count} model-tool round trips "
        "without finishing. Stop exploring: report what you have and give your final answer.",
        ("reject", "tool_rounds"): REJECT_MARKER + " This `{tool}` call was rejected and not "
        "executed: the run has reached {count} model-tool rounds. Do not call more tools: "
        "report what you have and finish.",
        ("terminate", "tool_rounds"): "[LoopGuard] This run was stopped after {count} "
        "model-tool rounds without finishing. Done so far: {progress}. Narrow or split the "
        "task before trying again.",
        ("answer", "tool_rounds"): "[LoopGuard] This run has taken {count} model-tool round "
        "trips without finishing. Tools are now closed: do not call any tool. Done so far: "
        "{progress}. Answer the user now with what you have found, and say plainly what is "
        "still missing.",
    },
    "zh": {
        ("warn", "tool_rounds"): "[LoopGuard 循环告警] 本轮任务已进行 {count} 次模型-工具往返仍未完成。"
        "请停止继续探索，直接报告当前结果并给出最终答复。",
        ("reject", "tool_rounds"): REJECT_MARKER + " 工具调用被拒绝，未执行：本轮任务已达到 {count} "
        "次模型-工具往返。请不要再调用工具，直接报告当前结果并结束。",
        ("terminate", "tool_rounds"): "[LoopGuard] 任务因模型-工具往返达到 {count} 次仍未完成而终止。"
        "已完成：{progress}。请缩小或拆分任务后再试。",
        ("answer", "tool_rounds"): "[LoopGuard] 本轮任务已进行 {count} 次模型-工具往返仍未完成。"
        "工具现已关闭，请不要再调用任何工具。已完成：{progress}。请立即根据已获得的信息回答用户，"
        "并明确说明还缺少什么。",
    },
}

# The required-tool rule: "reask" is the corrective user message (it starts with the marker so
# the trace never takes it for a genuine user turn); "warn" is prepended to an answer given
# without the call after the retries (and is the anchor if an operator sets warn_at).
# The agentic-RAG retrieval guard: answer from the best iteration, named by its query and confidence.
_EXTRA_SPECIAL = {
    "en": {
        ("warn", "required_tool"): "[LoopGuard] Warning: this request requires calling {call}, "
        "and it was not called, so this answer is not based on the data `{tool}` provides.",
        ("reask", "required_tool"): REJECT_MARKER + " This request needs data from the `{tool}` "
        "tool, but you answered without calling it. Call {call} now, then answer from its "
        "result. Do not answer from memory or only describe a plan.",
        ("reject", "required_tool"): REJECT_MARKER + " This call was rejected and not executed: "
        "this request requires calling {call} first. Call it now.",
        ("warn", "retrieval"): "[LoopGuard] Stop retrieving: {reason}. Answer now from the best "
        'retrieval so far: query "{query}" (confidence {confidence}). Do not call `{tool}` again.',
        ("reject", "retrieval"): REJECT_MARKER + " This `{tool}` call was rejected and not "
        "executed: retrieval already stopped ({reason}). Answer from the best retrieval so far: "
        'query "{query}" (confidence {confidence}).',
        ("terminate", "retrieval"): "[LoopGuard] This run was stopped: the agent kept retrieving "
        "after retrieval had stopped ({reason}; {count} calls). Best retrieval: query "
        '"{query}" (confidence {confidence}). Done so far: {progress}.',
    },
    "zh": {
        ("warn", "required_tool"): "[LoopGuard 提醒] 本次请求需要调用 {call}，但该工具未被调用，"
        "因此回答并非基于 `{tool}` 提供的实际数据。",
        ("reask", "required_tool"): REJECT_MARKER + " 本次请求需要 `{tool}` 工具的数据，但你没有调用"
        "它就给出了回答。请立即调用 {call}，再根据其结果回答；不要凭记忆回答或只描述计划。",
        ("reject", "required_tool"): REJECT_MARKER + " 工具调用被拒绝，未执行：本次请求需要先调用 "
        "{call}。请立即调用它。",
        ("warn", "retrieval"): "[LoopGuard 检索告警] 请停止检索：{reason}。请根据目前最佳的检索结果"
        "直接回答：查询“{query}”（置信度 {confidence}）。不要再调用 `{tool}`。",
        ("reject", "retrieval"): REJECT_MARKER + " 工具调用被拒绝，未执行：检索已停止（{reason}）。"
        "请根据目前最佳的检索结果回答：查询“{query}”（置信度 {confidence}）。",
        ("terminate", "retrieval"): "[LoopGuard] 任务因检索停止后仍持续检索而终止（{reason}，"
        "{count} 次）。最佳检索：查询“{query}”（置信度 {confidence}）。已完成：{progress}。",
    },
}
for _language, _texts in _EXTRA_SPECIAL.items():
    SPECIAL[_language].update(_texts)

# The model judge's verdict names no repeated call: its texts give the judge's reason instead of
# a count of calls.
_JUDGE_SPECIAL = {
    "en": {
        ("warn", "llm_judge"): "[LoopGuard] A reviewing model judged that this run is stuck in a "
        "loop (confidence {confidence}): {reason}. Step back: try a different approach, or report "
        "what you have and finish.",
        ("reject", "llm_judge"): REJECT_MARKER + " This `{tool}` call was rejected and not executed: "
        "a reviewing model judged this run stuck in a loop ({reason}). Try a different approach, or "
        "report what you have and finish.",
        ("terminate", "llm_judge"): "[LoopGuard] This run was stopped: a reviewing model judged it "
        "stuck in a loop {count} times in a row ({reason}). Done so far: {progress}.",
    },
    "zh": {
        ("warn", "llm_judge"): "[LoopGuard 循环告警] 审查模型判定本轮任务陷入循环（置信度 {confidence}）："
        "{reason}。请停止当前操作模式，换用不同方法，或直接报告当前结果并结束。",
        ("reject", "llm_judge"): REJECT_MARKER + " 工具调用被拒绝，未执行：审查模型判定本轮任务陷入循环"
        "（{reason}）。请换用不同方法，或直接报告当前结果并结束。",
        ("terminate", "llm_judge"): "[LoopGuard] 任务已终止：审查模型连续 {count} 次判定其陷入循环"
        "（{reason}）。已完成：{progress}。",
    },
}
for _language, _texts in _JUDGE_SPECIAL.items():
    SPECIAL[_language].update(_texts)

# The post-compaction guard ends the run with the error compaction_loop_persisted, naming
# the tool and the count of identical calls; the reason code stays untranslated so it is greppable.
_COMPACTION_SPECIAL = {
    "en": {
        ("terminate", "post_compaction"): "[LoopGuard] This run was stopped "
        "(compaction_loop_persisted): after the context was compacted, `{tool}` was called "
        "{count} times with the same arguments and got the same result each time, so the "
        "compaction did not break the loop. Done so far: {progress}. Review the task or change "
        "the approach before trying again."
    },
    "zh": {
        ("terminate", "post_compaction"): "[LoopGuard] 任务已终止（compaction_loop_persisted）："
        "上下文压缩之后，`{tool}` 以相同参数被调用了 {count} 次且每次结果相同，压缩未能打破循环。"
        "已完成：{progress}。请检查任务或换用不同方法后再试。"
    },
}
for _language, _texts in _COMPACTION_SPECIAL.items():
    SPECIAL[_language].update(_texts)

# The fleet view (gateway/fleet): a remote tool down for the whole tenant, named with how many
# other sessions saw it fail and the error, so the model stops retrying a tool that cannot work
# and takes another way; and a loop an earlier run of the same agent was stopped for.
_FLEET_SPECIAL = {
    "en": {
        ("warn", "tool_down"): "[LoopGuard] `{tool}`{server} is down for every agent, not only for you: "
        "{sessions} other sessions saw it fail with the same error in the last {minutes} minutes "
        "({error}). Do not retry it: take another way to finish the task, or report that `{tool}` "
        "is unavailable.",
        ("reject", "tool_down"): REJECT_MARKER + " This `{tool}` call was rejected and not executed: "
        "`{tool}`{server} is down ({sessions} other sessions saw it fail in the last {minutes} "
        "minutes: {error}). Do not retry it: take another way, or report that it is unavailable.",
        ("reask", "tool_down"): "[LoopGuard] Your `{tool}` call was rejected: the tool is down for "
        "every agent right now. Do not call it again: take another way, or report that `{tool}` is "
        "unavailable and finish.",
        ("warn", "recalled_loop"): "[LoopGuard] An earlier run of this agent was stopped {minutes} "
        "minutes ago for this same loop ({stopped}: `{tool}`). You are starting it again: do not "
        "repeat it. Change the approach now, or report what you have and finish.",
    },
    "zh": {
        ("warn", "tool_down"): "[LoopGuard 工具故障] `{tool}`{server} 对所有智能体都不可用，并非只有你："
        "最近 {minutes} 分钟内另有 {sessions} 个会话遇到相同错误（{error}）。请不要重试，"
        "换用其他方法完成任务，或直接报告 `{tool}` 不可用。",
        ("reject", "tool_down"): REJECT_MARKER + " 工具调用被拒绝，未执行：`{tool}`{server} 已故障"
        "（最近 {minutes} 分钟内另有 {sessions} 个会话失败：{error}）。请不要重试，换用其他方法，"
        "或报告该工具不可用。",
        ("reask", "tool_down"): "[LoopGuard] 你的 `{tool}` 调用被拒绝：该工具目前对所有智能体都不可用。"
        "请不要再调用它，换用其他方法，或报告 `{tool}` 不可用并结束。",
        ("warn", "recalled_loop"): "[LoopGuard 循环告警] 该智能体的上一次运行在 {minutes} 分钟前因同样的循环"
        "被停止（{stopped}：`{tool}`）。你正在重复它：请不要再走这条路，立即换用不同方法，或直接报告当前结果并结束。",
    },
}
for _language, _texts in _FLEET_SPECIAL.items():
    SPECIAL[_language].update(_texts)

# Detail values (Finding.details) that name a term, in each language.
TERMS = MappingProxyType(
    {
        "en": {
            "stop_max_iter": "the maximum number of retrieval iterations was reached",
            "stop_no_progress": "confidence is not improving",
            "stop_duplicate": "the query repeats an earlier one",
            "stop_sufficient": "the results are already sufficient",
        },
        "zh": {
            "stop_max_iter": "已达到最大检索次数",
            "stop_no_progress": "置信度没有提升",
            "stop_duplicate": "查询与之前的查询重复",
            "stop_sufficient": "检索结果已足够",
        },
    }
)

PATTERN_NAMES = MappingProxyType(
    {
        "en": {
            "exact_repeat": "exact repeat",
            "similar_repeat": "near-identical repeat",
            "no_progress": "no progress",
            "error_repeat": "repeated error",
            "cycle": "cycle",
            "unknown_tool": "unknown tool",
            "tool_rounds": "too many tool rounds",
            "required_tool": "required tool not called",
            "retrieval": "retrieval loop",
            "post_compaction": "loop persisted after compaction",
            "cross_turn": "the same error across user turns",
            "stagnation": "stagnation",
            "target_failure": "repeated failure on one target",
            "vetoed_call": "a refused call repeated",
            "ignored_warning": "a warning ignored",
            "llm_judge": "judged stuck by a reviewing model",
            "tool_down": "a tool down for the fleet",
            "recalled_loop": "a loop an earlier run was stopped for",
        },
        "zh": {
            "exact_repeat": "精确重复",
            "similar_repeat": "近似重复",
            "no_progress": "无进展",
            "error_repeat": "重复报错",
            "cycle": "振荡循环",
            "unknown_tool": "未知工具",
            "tool_rounds": "工具轮次过多",
            "required_tool": "未调用必需工具",
            "retrieval": "检索循环",
            "post_compaction": "压缩后循环持续",
            "cross_turn": "跨轮次重复报错",
            "stagnation": "停滞不前",
            "target_failure": "同一目标反复失败",
            "vetoed_call": "重复已被拒绝的调用",
            "ignored_warning": "无视循环告警",
            "llm_judge": "审查模型判定陷入循环",
            "tool_down": "工具对整个集群故障",
            "recalled_loop": "重复上一次运行被停止的循环",
        },
    }
)
