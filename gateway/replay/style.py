"""The HTML report's stylesheet, inlined into every report (no external assets)."""

CSS = r"""
:root { --bg: #f7f7f5; --card: #fff; --ink: #1d1d1f; --muted: #6b6b70; --line: #e4e4e0;
        --warn: #b7791f; --warn-bg: #fff5e0; --reject: #c05621; --reject-bg: #ffe8d9;
        --terminate: #c53030; --terminate-bg: #ffe0e0; --ok: #2f855a; }
* { box-sizing: border-box; }
body { margin: 0; padding: 24px 32px 64px; background: var(--bg); color: var(--ink);
       font: 14px/1.45 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { margin: 0 0 4px; font-size: 22px; }
h2 { font-size: 16px; margin: 0 0 6px; display: flex; gap: 8px; align-items: center; }
.sub, .meta, .note { color: var(--muted); margin: 0 0 8px; }
.meta span + span::before { content: " \00b7  "; }
code { font: 12px/1.35 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; word-break: break-all; }
.totals { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 12px; margin: 18px 0 8px; }
.stat { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
.stat .v { display: block; font-size: 24px; font-weight: 650; }
.stat .k { display: block; font-weight: 600; }
.stat .h { display: block; color: var(--muted); font-size: 12px; }
.stat[data-stat=warn] .v { color: var(--warn); } .stat[data-stat=reject] .v { color: var(--reject); }
.stat[data-stat=terminate] .v { color: var(--terminate); } .stat[data-stat="cost saved"] .v { color: var(--ok); }
.notes { margin-bottom: 18px; } .note { font-size: 12px; }
table { border-collapse: collapse; width: 100%; background: var(--card); }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { font-size: 12px; color: var(--muted); font-weight: 600; background: #fafaf8; }
.index { margin-bottom: 24px; border: 1px solid var(--line); border-radius: 10px; overflow: hidden; }
.index tr.healthy td { color: var(--muted); }
.conversation { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; margin: 0 0 18px; }
.badge { font-size: 11px; font-weight: 600; padding: 1px 8px; border-radius: 99px; }
.badge.affected { background: var(--terminate-bg); color: var(--terminate); }
.badge.healthy { background: #e6f4ea; color: var(--ok); }
.detectors { margin: 0 0 8px; padding-left: 18px; color: var(--muted); }
summary { cursor: pointer; color: var(--muted); margin-bottom: 6px; }
.timeline td.step, .timeline td.msg, .timeline td.repeat { width: 1%; white-space: nowrap; text-align: right; color: var(--muted); }
.timeline td.tool { font-weight: 600; white-space: nowrap; }
.timeline td.args, .timeline td.result { max-width: 300px; }
.timeline td.marks { min-width: 260px; }
.timeline td.none { color: var(--muted); }
tr.repeat td.tool::before { content: "\21bb  "; color: var(--reject); }
tr.heat-2 { background: #fffaf0; } tr.heat-3 { background: #fff3de; } tr.heat-4 { background: #ffe9cc; }
tr.heat-5 { background: #ffdfc0; } tr.heat-6 { background: #ffd2b0; }
.times { font-weight: 700; color: var(--reject); }
tr.fires-warn td.step { box-shadow: inset 4px 0 var(--warn); }
tr.fires-reject td.step { box-shadow: inset 4px 0 var(--reject); }
tr.fires-terminate td.step { box-shadow: inset 4px 0 var(--terminate); }
.mark { display: inline-block; margin: 0 4px 2px 0; padding: 1px 7px; border-radius: 6px; font-size: 12px; font-weight: 600; white-space: nowrap; }
.mark small { font-weight: 400; margin-left: 5px; opacity: .75; }
.mark-warn { background: var(--warn-bg); color: var(--warn); }
.mark-reject { background: var(--reject-bg); color: var(--reject); }
.mark-terminate { background: var(--terminate-bg); color: var(--terminate); }
.mark-dropped { background: #eee; color: var(--muted); }
.pill { font-size: 12px; font-weight: 600; padding: 0 6px; border-radius: 6px; }
.pill-warn { background: var(--warn-bg); color: var(--warn); } .pill-reject { background: var(--reject-bg); color: var(--reject); }
.pill-terminate { background: var(--terminate-bg); color: var(--terminate); }
tr.stop-line td { background: var(--terminate-bg); color: var(--terminate); font-weight: 600; text-align: center; border-top: 2px dashed var(--terminate); }
tr.after-stop td { opacity: .45; }
"""
