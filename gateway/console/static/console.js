// The feed page: polls /ui/api/feed (every 300 ms: the server reads only the events newer than
// the last it read, whatever the number of tabs, and answers "unchanged" when there are none), /ui/api/status and /ui/api/fleet (every 5 s), and renders with textContent only: event fields come
// from agents' traffic and are never parsed as HTML.
"use strict";
const FEED_MS = 300, STATUS_MS = 5000, FEED_ROWS = 200;
let newest = "", events = [], seen = new Set(), first = true;

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
function $(id) { return document.getElementById(id); }
function money(v) { return v ? "$" + Number(v).toFixed(4) : "$0"; }
function pct(v) { return v === null || v === undefined ? "-" : Math.round(v * 100) + "%"; }

async function get(url) {
  const r = await fetch(url, {credentials: "same-origin", cache: "no-store"});
  if (r.status === 401) { location.href = "/ui/login?next=/ui"; throw new Error("signed out"); }
  if (!r.ok) throw new Error(url + ": " + r.status);
  return r.json();
}

function runLink(e) {
  return "/ui/run?session=" + encodeURIComponent(e.session) + "&run=" + encodeURIComponent(e.run);
}

function options(select, values) {
  const keep = select.value, have = new Set([...select.options].map(o => o.value));
  for (const v of [...values].sort()) {
    if (have.has(v)) continue;
    const option = el("option", v); option.value = v; select.appendChild(option);
  }
  select.value = keep;
}

function renderFeed() {
  const fa = $("f-action").value, fd = $("f-detector").value, fg = $("f-agent").value;
  const body = $("feed").tBodies[0];
  const rows = [];
  for (const e of events) {
    const agent = e.agent || "(default)";
    if ((fa && e.action !== fa) || (fd && e.detector !== fd) || (fg && agent !== fg)) continue;
    const tr = el("tr");
    tr.dataset.action = e.action; tr.dataset.detector = e.detector; tr.dataset.agent = agent;
    tr.dataset.session = e.session; tr.dataset.id = e.id; tr.dataset.tenant = e.tenant || "";
    if (!first && !seen.has(e.id)) tr.classList.add("new");
    tr.appendChild(el("td", e.time.replace("T", " ").replace("Z", "")));
    tr.appendChild(el("td", e.tenant || "-", "tenant"));
    const s = el("td", null, "session"), a = el("a", e.session);
    a.href = runLink(e); a.title = "run " + e.run + " of " + e.session; s.appendChild(a); tr.appendChild(s);
    tr.appendChild(el("td", agent));
    tr.appendChild(el("td", e.protocol || "-"));
    tr.appendChild(el("td", e.model || "-"));
    tr.appendChild(el("td", e.detector));
    const act = el("td"); act.appendChild(el("span", e.action + (e.shadow ? " (would " + e.would + ")" : ""),
                                            "pill pill-" + e.action)); tr.appendChild(act);
    tr.appendChild(el("td", "\u00d7" + e.count));
    tr.appendChild(el("td", e.tokens === null ? "-" : e.tokens.toLocaleString() + " tok" +
                                                 (e.cost_usd ? " \u00b7 " + money(e.cost_usd) : "")));
    rows.push(tr);
  }
  body.replaceChildren(...rows);
  $("empty").hidden = events.length > 0;
  for (const e of events) seen.add(e.id);
  first = false;
}

function renderTally(table, tallies) {
  const rows = Object.entries(tallies).map(([name, t]) => {
    const tr = el("tr");
    for (const v of [name, t.warned, t.stopped, t.warned ? pct(t.recovery_rate) : "-", t.tokens_saved.toLocaleString(),
                     money(t.cost_saved_usd)]) tr.appendChild(el("td", v));
    return tr;
  });
  $(table).tBodies[0].replaceChildren(...rows);
}

function renderTotals(data) {
  const t = data.totals.runs;
  $("t-warned").textContent = t.warned;
  $("t-recovered").textContent = t.warned ? pct(t.recovery_rate) + " recovered after the warning" : "no warnings";
  $("t-vetoed").textContent = t.vetoed;
  $("t-terminated").textContent = t.terminated;
  $("t-tokens").textContent = t.tokens_saved.toLocaleString();
  $("t-cost").textContent = money(t.cost_saved_usd);
  $("kept-note").textContent = "Over the " + data.kept + " most recent events kept (at most " + data.keep + ")" +
    (data.scope === "tenant" ? " of tenant " + (data.tenant || "(your key)") : "") +
    (data.backend === "redis" ? ", shared by every replica (Redis backend)." :
                                ", kept by this process only (memory backend: each replica or worker has its own).");
  renderTally("by-detector", data.totals.by_detector);
  renderTally("by-agent", data.totals.by_agent);
  options($("f-detector"), new Set(events.map(e => e.detector)));
  options($("f-agent"), new Set(events.map(e => e.agent || "(default)")));
}

async function pollFeed() {
  try {
    const data = await get("/ui/api/feed?since=" + encodeURIComponent(newest));
    $("live").classList.remove("stale");
    if (!data.unchanged) {
      newest = data.newest;
      if (data.since) {  // only what changed since our newest: merged into what the page has
        for (const e of events) if (data.priced[e.id]) Object.assign(e, data.priced[e.id]);
        events = data.events.concat(events).slice(0, FEED_ROWS);
      } else events = data.events;
      renderTotals(data); renderFeed();
      document.body.dataset.newest = newest;
    }
  } catch (err) { $("live").classList.add("stale"); }
  setTimeout(pollFeed, FEED_MS);
}

function facts(dl, pairs) {
  const out = [];
  for (const [k, v, cls] of pairs) { out.push(el("dt", k)); out.push(el("dd", v, cls)); }
  $(dl).replaceChildren(...out);
}

function ladders(detectors) {
  return Object.entries(detectors).map(([n, l]) => n + " " + l.map(x => x === null ? "-" : x).join("/")).join(", ");
}

async function pollStatus() {
  try {
    const s = await get("/ui/api/status"), p = s.policy, st = s.state;
    facts("policy-facts", [["name", p.name], ["file", p.file], ["loaded", p.loaded_at || "-"],
      ["reloads", p.reloads + (p.reload_errors ? " (" + p.reload_errors + " rejected edits)" : "")],
      ...(p.last_error ? [["last rejected edit", p.last_error, "healthy-no"]] : []),
      ["global block", p.default.mode + ", max " + p.default.max_action]]);
    const rows = [{agent: "(default)", match: {}, ...p.default}, ...p.overrides].map(o => {
      const tr = el("tr");
      for (const v of [o.agent, Object.entries(o.match).map(([k, v]) => k + "=" + JSON.stringify(v)).join(" ") || "-",
                       o.mode, o.max_action, ladders(o.detectors)]) tr.appendChild(el("td", v));
      return tr;
    });
    $("overrides").tBodies[0].replaceChildren(...rows);
    facts("state-facts", [["backend", st.backend], ["answering", st.healthy ? "yes" : "no", st.healthy ? "healthy-yes" : "healthy-no"],
      ["degraded operations", st.degradations], ["events written here", s.console.written],
      ["events dropped here", s.console.dropped]]);
    $("status-line").textContent = "policy " + p.name + " \u00b7 state " + st.backend + " " +
      (st.healthy ? "healthy" : "NOT answering");
  } catch (err) { /* the feed's indicator shows a lost connection */ }
  setTimeout(pollStatus, STATUS_MS);
}

async function pollFleet() {
  try {
    const f = await get("/ui/api/fleet");
    $("fleet-rule").textContent = f.enabled ? "(" + f.sessions + " sessions failing alike within " + f.minutes + " min)" : "(fleet view off)";
    const rows = f.tools.map(t => {
      const tr = el("tr");
      for (const v of [t.tenant, t.tool, t.endpoint || "-", t.sessions, t.calls, t.first_seen, t.last_seen]) tr.appendChild(el("td", v));
      tr.appendChild(el("td", t.error, "error-sample"));
      return tr;
    });
    $("tools-down").tBodies[0].replaceChildren(...rows);
    $("fleet-empty").hidden = rows.length > 0;
    document.body.dataset.toolsDown = String(rows.length);
  } catch (err) { /* the feed's indicator shows a lost connection */ }
  setTimeout(pollFleet, STATUS_MS);
}

for (const id of ["f-action", "f-detector", "f-agent"]) $(id).addEventListener("change", renderFeed);
pollFeed();
pollStatus();
pollFleet();
