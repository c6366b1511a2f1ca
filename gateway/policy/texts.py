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
}
# Wording follows seed 001's own alert ("请停止当前操作模式，换用不同方法或直接报告当前结果").
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
}
SHIPPED = MappingProxyType({"en": MappingProxyType(_EN), "zh": MappingProxyType(_ZH)})

# tool_rounds counts round trips, not repeats of one tool: "you called X 15 times" would be false,
# so its shipped texts say what it really means. An operator override of a kind replaces these too.
SPECIAL = {
    "en": {("warn", "tool_rounds"): "[LoopGuard] This run has taken {count} model-tool round trips "
           "without finishing. Stop exploring: report what you have and give your final answer.",
           ("reject", "tool_rounds"): REJECT_MARKER + " This `{tool}` call was rejected and not "
           "executed: the run has reached {count} model-tool rounds. Do not call more tools: "
           "report what you have and finish.",
           ("terminate", "tool_rounds"): "[LoopGuard] This run was stopped after {count} "
           "model-tool rounds without finishing. Done so far: {progress}. Narrow or split the "
           "task before trying again."},
    "zh": {("warn", "tool_rounds"): "[LoopGuard 循环告警] 本轮任务已进行 {count} 次模型-工具往返仍未完成。"
           "请停止继续探索，直接报告当前结果并给出最终答复。",
           ("reject", "tool_rounds"): REJECT_MARKER + " 工具调用被拒绝，未执行：本轮任务已达到 {count} "
           "次模型-工具往返。请不要再调用工具，直接报告当前结果并结束。",
           ("terminate", "tool_rounds"): "[LoopGuard] 任务因模型-工具往返达到 {count} 次仍未完成而终止。"
           "已完成：{progress}。请缩小或拆分任务后再试。"},
}

PATTERN_NAMES = MappingProxyType({
    "en": {"exact_repeat": "exact repeat", "similar_repeat": "near-identical repeat",
           "no_progress": "no progress", "error_repeat": "repeated error", "cycle": "cycle",
           "unknown_tool": "unknown tool", "tool_rounds": "too many tool rounds"},
    "zh": {"exact_repeat": "精确重复", "similar_repeat": "近似重复", "no_progress": "无进展",
           "error_repeat": "重复报错", "cycle": "振荡循环", "unknown_tool": "未知工具",
           "tool_rounds": "工具轮次过多"},
})
