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
