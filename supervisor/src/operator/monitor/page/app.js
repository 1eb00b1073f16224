// The live page of `agent-runner monitor --mode http` (docs/operations.md "The live page").
// Plain browser JavaScript, no build step: one section per project, its state from
// /api/state (refreshed when a new event arrives), its events live from /api/events.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const url = (path, params = {}) => {
  const q = new URLSearchParams(params);
  if (token) q.set("token", token);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
};
const get = async (path, params) => {
  const r = await fetch(url(path, params), { cache: "no-store" });
  if (!r.ok) throw new Error(`${path}: ${r.status}`);
  return r.json();
};
const el = (tag, cls, text) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};
const fmtDuration = (s) => {
  if (s == null) return "–";
  s = Math.max(0, Math.round(s));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return h ? `${h}h${String(m).padStart(2, "0")}m` : m ? `${m}m${String(r).padStart(2, "0")}s` : `${r}s`;
};
const time = (ts) => (ts ? new Date(ts).toLocaleTimeString() : "–");
const outcome = (r) => {
  if (!r.ended_at && r.exit_code == null && !r.exit_cause) return "running";
  if (r.exit_cause === "exited") return r.exit_code === 0 ? "ok" : "failed";
  return r.exit_cause || "failed";
};

const amount = (scope, v) => (scope.endsWith("usd") ? `$${(v ?? 0).toFixed(2)}` : `${Math.round(v ?? 0)} tokens`);
const compact = (v) => (v >= 1e6 ? `${(v / 1e6).toFixed(1)}M` : v >= 1e4 ? `${Math.round(v / 1e3)}k` : String(Math.round(v)));
// A duration on a chart's axis: milliseconds and tenths where whole seconds say 0s.
const seconds = (v) => (v === 0 ? "0s" : v < 1 ? `${Math.round(v * 1000)}ms` : v < 60 ? `${v.toFixed(1)}s` : fmtDuration(v));
const SVG = "http://www.w3.org/2000/svg";
const svg = (tag, attrs = {}, text) => {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};

// One series as an inline SVG line chart: a point per round that has a value (its value
// and round in a tooltip), the newest value in the title, 0 and the highest value on the
// y axis, the first and last round on the x axis, and `cap` as a dashed line when set.
function chart(key, label, points, pick, fmt, cap) {
  const W = 360, H = 130, L = 52, R = 10, T = 10, B = 22;
  const values = points.map(pick);
  const known = values.filter((v) => v != null);
  const max = Math.max(...known, cap || 0, 1e-9);
  const first = points[0].round_num, last = points.at(-1).round_num;
  const x = (n) => L + (last === first ? (W - L - R) / 2 : ((n - first) * (W - L - R)) / (last - first));
  const y = (v) => T + (H - T - B) * (1 - v / max);
  const wrap = el("figure", "chart");
  wrap.dataset.series = key;
  const newest = known.length ? fmt(known.at(-1)) : "–";
  wrap.append(el("figcaption", "", `${label}: ${newest} last`));
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${label} per round` });
  s.append(svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }),
    svg("line", { class: "grid", x1: L, y1: T, x2: W - R, y2: T }),
    svg("text", { class: "tick", x: L - 4, y: T + 4, "text-anchor": "end" }, fmt(max)),
    svg("text", { class: "tick", x: L - 4, y: H - B, "text-anchor": "end" }, fmt(0)),
    svg("text", { class: "tick", x: L, y: H - 6, "text-anchor": "start" }, `R${first}`));
  if (last !== first) s.append(svg("text", { class: "tick", x: W - R, y: H - 6, "text-anchor": "end" }, `R${last}`));
  if (cap) {
    s.append(svg("line", { class: "cap", x1: L, y1: y(cap), x2: W - R, y2: y(cap) }),
      svg("text", { class: "tick cap-label", x: W - R, y: y(cap) - 3, "text-anchor": "end" }, `cap ${fmt(cap)}`));
  }
  const xy = points.map((p, i) => [p.round_num, values[i]]).filter(([, v]) => v != null);
  s.append(svg("polyline", { class: "line", points: xy.map(([n, v]) => `${x(n).toFixed(1)},${y(v).toFixed(1)}`).join(" ") }));
  for (const [n, v] of xy) {
    const c = svg("circle", { class: "pt", cx: x(n).toFixed(1), cy: y(v).toFixed(1), r: xy.length > 30 ? 2 : 3.5 });
    c.append(svg("title", {}, `round ${n}: ${fmt(v)}`));
    s.append(c);
  }
  wrap.append(s);
  return wrap;
}

class ProjectView {
  constructor(index, root) {
    this.index = index;
    this.root = root;
    this.q = (sel) => root.querySelector(sel);
    this.doc = null;
    this.refreshing = null;
  }

  async refresh() {
    try {
      this.doc = await get("/api/state", { project: this.index });
      this.render();
    } catch (e) {
      this.q(".service").textContent = "unreachable";
    }
  }

  // Several events in a burst cost one refresh.
  soon() {
    if (this.refreshing) return;
    this.refreshing = setTimeout(() => { this.refreshing = null; this.refresh(); }, 200);
  }

  render() {
    const d = this.doc;
    this.q(".name").textContent = d.project;
    const service = this.q(".service");
    service.textContent = d.service.state;
    service.className = `service badge ${d.service.active ? d.service.state : "down"}`;
    this.renderCurrent();
    this.renderTimeline();
    this.renderBudget();
    this.renderCharts();
    this.renderHosts();
    if (!this.seeded) {
      this.seeded = true;
      for (const e of d.recent_events || []) this.addEvent(e, false);
    }
  }

  renderCurrent() {
    const d = this.doc, c = d.current_round;
    const budget = d.monitor.round_budget_s;
    const line = this.q(".round-line"), fill = this.q(".fill");
    if (c) {
      const elapsed = (Date.now() - new Date(c.started_at).getTime()) / 1000;
      line.textContent = `Round ${c.round_num}${c.phase ? ` (${c.phase})` : ""}: ${fmtDuration(elapsed)} of ${fmtDuration(budget)}`;
      fill.style.width = `${Math.min(100, (100 * elapsed) / budget)}%`;
      fill.classList.toggle("late", elapsed > budget * 0.8);
    } else {
      line.textContent = d.service.active ? "Between rounds" : "No supervisor running";
      fill.style.width = "0";
    }
    const wait = this.q(".wait");
    wait.textContent = "";
    if (d.service.active && d.service.state === "deferred") {
      const last = [...(d.recent_events || [])].reverse().find((e) => e.event === "round_deferred");
      if (last) {
        const until = new Date(new Date(last.ts).getTime() + 1000 * (last.defer_s || 0));
        wait.textContent = `Deferred by ${last.signal}: ${last.message} — next look at ${until.toLocaleTimeString()}`;
      } else {
        wait.textContent = "Deferred";
      }
    }
    const h = d.monitor.host_health, health = this.q(".health");
    health.className = `health ${h.severity || ""}`;
    const r = h.reading;
    health.textContent = h.severity
      ? `Host health ${h.severity}: ${h.message}`
      : `Host healthy: disk ${r.disk_used_pct != null ? r.disk_used_pct.toFixed(1) : "?"}% used, ${r.mem_available_mb ?? "?"} MiB available, PSI full ${r.psi_full_avg10 ?? "n/a"}`;
  }

  renderTimeline() {
    const ol = this.q(".timeline");
    ol.replaceChildren();
    const rounds = [...(this.doc.recent_rounds || [])];
    if (this.doc.current_round) rounds.push(this.doc.current_round);
    for (const r of rounds) {
      const o = this.doc.current_round === r ? "running" : outcome(r);
      const li = el("li", `o-${o}`, `R${r.round_num}`);
      li.title = `round ${r.round_num}: ${o}, ${fmtDuration(r.duration_s ?? r.duration_so_far_s)}${r.dirty_outcome ? `, ${r.dirty_outcome}` : ""}`;
      ol.append(li);
    }
    if (!rounds.length) ol.append(el("li", "o-stopped", "none yet"));
    // What the agent's sandbox refused in the last round that ended, each with its fix.
    const refused = this.q(".refused");
    refused.replaceChildren();
    const last = (this.doc.recent_rounds || []).at(-1);
    for (const x of (last && last.egress_refused) || []) {
      refused.append(el("li", "", `R${last.round_num}: ${x.message}${x.count > 1 ? ` (×${x.count})` : ""}`));
    }
  }

  // Each [budget] cap against its spend, in peek's words ("total_usd $1.20 of $1.00").
  renderBudget() {
    const b = this.doc.budget, state = this.q(".budget-state"), ul = this.q(".caps");
    ul.replaceChildren();
    if (!b) {
      state.className = "budget-state muted";
      state.textContent = "No [budget] cap set";
      return;
    }
    state.className = `budget-state badge ${b.state === "run" ? "live" : b.state === "paused" ? "deferred" : "stopped"}`;
    state.textContent = b.state === "run" ? "within" : b.state;
    const caps = b.caps.map((c) => [c.scope, c.spent, c.cap]);
    if (b.round_usd != null) caps.push(["round_usd", b.last_round_usd, b.round_usd]);
    for (const [scope, spent, cap] of caps) {
      const li = el("li", "cap");
      li.dataset.scope = scope;
      const text = spent == null ? `${scope} ${amount(scope, cap)}, no round yet`
        : `${scope} ${amount(scope, spent)} of ${amount(scope, cap)}`;
      const bar = el("div", "bar"), fill = el("div", "fill");
      const ratio = spent == null ? 0 : spent / cap;
      fill.style.width = `${Math.min(100, 100 * ratio)}%`;
      fill.classList.toggle("late", ratio >= 0.8 && ratio < 1);
      fill.classList.toggle("over", ratio >= 1);
      bar.append(fill);
      li.append(el("span", "cap-text", text), bar);
      ul.append(li);
    }
    if (b.unpriced_rounds > 0) {
      ul.append(el("li", "muted", `${b.unpriced_rounds} rounds of an unpriced model at the highest price`));
    }
  }

  // Cost, tokens and the agent's time per round: three small charts on one round axis.
  renderCharts() {
    const points = this.doc.monitor.rounds_chart || [];
    const box = this.q(".charts");
    box.replaceChildren();
    this.q(".chart-note").textContent = points.length ? `(rounds ${points[0].round_num}–${points.at(-1).round_num})` : "";
    if (!points.length) {
      box.append(el("div", "muted", "no round yet"));
      return;
    }
    const b = this.doc.budget;
    const series = [
      ["cost", "cost", (p) => p.cost_usd, (v) => `$${v.toFixed(v < 1 ? 3 : 2)}`, b && b.round_usd],
      ["tokens", "tokens", (p) => p.tokens, (v) => compact(v), null],
      ["duration", "agent time", (p) => p.duration_s, seconds, null],
    ];
    for (const [key, label, pick, fmt, cap] of series) {
      box.append(chart(key, label, points, pick, fmt, cap));
    }
  }

  renderHosts() {
    const p = this.doc.plugins, sb = p.sandbox || {};
    this.q(".sandbox").textContent = `Sandbox: ${sb.requested} → ${sb.achieved_tier}${sb.landlock_abi ? ` (Landlock ABI ${sb.landlock_abi})` : ""}`;
    const body = this.q(".hosts tbody");
    body.replaceChildren();
    for (const h of this.doc.hosts || []) {
      const tr = el("tr");
      const pin = p.pins[h.name] || "unpinned";
      tr.append(el("td", "", h.name), el("td", "", h.state), el("td", `pin-${pin}`, pin),
        el("td", "", h.calls ?? "–"), el("td", "", h.call_latency_p50_ms ?? "–"));
      body.append(tr);
    }
    if (!(this.doc.hosts || []).length) {
      const tr = el("tr");
      const td = el("td", "muted", "no hosts configured");
      td.colSpan = 5;
      tr.append(td);
      body.append(tr);
    }
  }

  addEvent(e, fresh) {
    const ol = this.q(".events");
    const li = el("li", fresh ? "new" : "");
    const fields = Object.entries(e).filter(([k]) => k !== "ts" && k !== "event")
      .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
    li.append(el("span", "ts", time(e.ts)), el("span", "kind", e.event), el("span", "", fields));
    li.dataset.kind = e.event;
    ol.prepend(li);
    while (ol.children.length > 200) ol.lastChild.remove();
  }

  listen() {
    const source = new EventSource(url("/api/events", { project: this.index }));
    const badge = document.getElementById("connection");
    source.onopen = () => { badge.textContent = "live"; badge.className = "badge live"; };
    source.onerror = () => { badge.textContent = "reconnecting…"; badge.className = "badge deferred"; };
    source.addEventListener("record", (m) => {
      this.addEvent(JSON.parse(m.data), true);
      this.soon();
    });
  }
}

async function main() {
  const projects = await get("/api/projects");
  const template = document.getElementById("project-template");
  const views = projects.map((p) => {
    const root = template.content.firstElementChild.cloneNode(true);
    document.getElementById("projects").append(root);
    const view = new ProjectView(p.index, root);
    view.refresh();
    view.listen();
    return view;
  });
  // The elapsed time moves every second without asking the server.
  setInterval(() => views.forEach((v) => v.doc && v.renderCurrent()), 1000);
}

main();
