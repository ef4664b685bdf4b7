// The Consort dashboard page. Everything shown is text (textContent, never HTML): artifacts and
// ledger lines are written by agents, and nothing an agent wrote may run here. The token is kept
// in this page's memory only and sent in a header, never in a URL.
"use strict";

const TOKEN_HEADER = "X-Consort-Token";
const RECENT_EVENTS = 30;
const SVG = "http://www.w3.org/2000/svg";
const ROLE_COLOURS = {
  "consort: tests": "#6b6f76",
  "spec-author": "#7a5af8", architect: "#2b59c3", dba: "#0e7490", "test-strategist": "#0f766e",
  "ux-designer": "#be185d", navigator: "#a15c00", driver: "#1d7a46", explorer: "#92400e",
};

const page = { overview: null, token: "", lastSeq: 0, refreshing: null, verifying: null };
// In the VS Code extension's panel the editor holds the token: it adds it to a decision itself,
// after the person confirms there, so the page asks for none.
const EDITOR_HOLDS_TOKEN = Boolean(window.consortEditor && window.consortEditor.holdsToken);

// ---- building blocks --------------------------------------------------------------------------

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function table(columns, rows, kind) {
  if (!rows.length) return el("p", { class: "dim", text: "none" });
  return el("table", { class: kind },
    el("thead", {}, el("tr", {}, columns.map((c) => el("th", { text: c })))),
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((cell) =>
      cell instanceof Node ? el("td", {}, cell) : el("td", { text: cell ?? "" }))))));
}

function short(hash) { return hash ? String(hash).slice(0, 10) : "—"; }
function seconds(value) { return value === null || value === undefined ? "—" : `${Number(value).toFixed(2)} s`; }
function replace(id, ...nodes) {
  document.getElementById(id).replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined));
}
function badge(id, text, kind) {
  const node = document.getElementById(id);
  node.textContent = text;
  node.className = `badge ${kind || ""}`;
}

async function getJSON(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// ---- views ------------------------------------------------------------------------------------

function renderHeader(data) {
  document.getElementById("project").textContent = data.project;
  badge("ledger", data.ledger.ok ? `ledger ok · ${data.ledger.events} events`
    : `ledger does not verify: ${data.ledger.problems[0]}`, data.ledger.ok ? "ok" : "bad");
  const next = data.next;
  const what = [next.kind, next.feature, next.role && `${next.role}/${next.step}`].filter(Boolean).join(" ");
  replace("next", `${what} — ${next.reason}`, next.command ? el("br") : null,
    next.command ? el("code", { text: next.command }) : null);
}

function renderDecisions(data) {
  const allowed = data.decisions_allowed;
  document.getElementById("read-only").textContent = !allowed ? `Read-only: ${data.read_only_reason}.`
    : EDITOR_HOLDS_TOKEN ? "The editor holds this dashboard's token: it asks you to confirm each decision." : "";
  document.getElementById("token-form").hidden = !allowed || EDITOR_HOLDS_TOKEN;
  const pending = data.features.filter((f) => f.pending_gate).map((f) => f.pending_gate);
  if (!pending.length) {
    replace("pending", el("p", { class: "dim", text: "No gate is waiting." }));
    return;
  }
  replace("pending", pending.map((gate) => {
    const note = el("input", { type: "text", placeholder: "note (a rejection needs one)",
      "aria-label": `note for ${gate.gate} ${gate.subject}` });
    const act = (action) => decide(action, gate, note.value);
    const canAct = allowed && (page.token !== "" || EDITOR_HOLDS_TOKEN);
    return el("div", { class: "pending", "data-gate": gate.gate, "data-subject": gate.subject },
      el("strong", { text: `${gate.gate} gate of ${gate.subject}` }),
      el("code", { text: gate.command || "" }), note,
      el("button", { class: "approve", disabled: !canAct, onclick: () => act("approve"),
        text: "Approve" }),
      gate.gate === "design" ? el("button", { class: "reject", disabled: !canAct,
        onclick: () => act("reject"), text: "Reject" }) : null);
  }));
}

async function decide(action, gate, note) {
  const result = document.getElementById("decision-result");
  result.textContent = `${action}…`;
  const response = await fetch(`/api/${action}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", [TOKEN_HEADER]: page.token },
    body: JSON.stringify({ gate: gate.gate, subject: gate.subject, note }),
  });
  const body = await response.json();
  result.textContent = response.ok
    ? `${body.type} ${body.subject} by ${body.actor} (ledger #${body.seq})`
    : `refused: ${body.error}${body.fix ? ` (${body.fix})` : ""}`;
  result.className = response.ok ? "ok" : "bad";
  scheduleRefresh();
}

// Who decided, and how: a person (at the terminal, on this page or in the editor, recorded
// alike), or the proxy policy of [gates] mode = "proxy".
const DECIDERS = { human: "a person", proxy: "the proxy policy", orchestrator: "Consort" };
function decider(actor) { return DECIDERS[actor] || actor; }

function sinceApprovalCell(design, cover) {
  if (!design.last_approval) return "never approved";
  const since = cover.since_approval;
  if (!since) return "—";
  const label = since.change === "unchanged" ? "unchanged" : since.change.toUpperCase();
  return el("div", { class: `since ${since.change === "unchanged" ? "ok" : "bad"}`, "data-change": since.change },
    el("span", { text: label }),
    since.diff.length ? el("details", { class: "since-approval" },
      el("summary", { text: "diff since the approval" }), el("pre", { text: since.diff.join("\n") })) : null);
}

function renderGate(feature) {
  const design = feature.gates.design;
  const last = design.last_approval;
  const decisions = feature.decisions.filter((d) => d.type.startsWith("gate."));
  return el("div", {},
    el("h3", {}, "Design gate: ", el("span", { class: `badge ${design.status === "approved" ? "ok" : "warn"}`,
      text: design.status }), design.actor ? ` by ${decider(design.actor)}` : "",
      design.drifted.length ? el("span", { class: "badge bad", text: `drifted: ${design.drifted.join(", ")}` }) : ""),
    el("p", { class: "last-approval dim", text: last
      ? `Last approved by ${decider(last.actor)} (${last.actor}) at ${last.time}, ledger #${last.seq}.`
      : "Never approved: everything it covers is new." }),
    table(["artifact", "path", "state", "sha256", "since the last approval", "summary"],
      design.covers.map((c) => [
        c.artifact, el("code", { text: c.path }), c.condition, el("code", { text: short(c.hash) }),
        sinceApprovalCell(design, c),
        el("div", {}, c.summary.map((line) => el("div", { text: line })),
          c.diff.length ? el("details", {}, el("summary", { text: "edited since accepted" }),
            el("pre", { text: c.diff.join("\n") })) : null),
      ]), "covers"),
    el("p", {}, `Deploy gate: ${feature.gates.deploy ?? "—"} · promote gate: ${feature.gates.promote ?? "—"}`),
    decisions.length ? table(["#", "decision", "gate", "subject", "by", "how", "note"],
      decisions.map((d) => [d.seq, d.type, d.gate, d.subject, decider(d.actor), d.actor, d.note]), "decisions") : null);
}

function stageCell(stage) {
  if (!stage) return "—";
  const run = stage.run || {};
  const counts = run.counts || {};
  return el("div", {},
    el("code", { text: short(stage.commit) }),
    run.run ? el("div", { class: "dim", text: `run ${run.run}` }) : null,
    run.counts ? el("div", { text: `${counts.passed ?? 0} passed, ${counts.failed ?? 0} failed` }) : null,
    run.parent_database ? el("div", { class: "dim", text: `db ${run.parent_database}` }) : null,
    run.test_seconds !== undefined ? el("div", { class: "dim",
      text: `tests ${seconds(run.test_seconds)}, migrate ${seconds(run.migrate_seconds)}` }) : null);
}

function renderBuild(build) {
  if (!build || !build.stories) return el("p", { class: "dim", text: "Build not started." });
  return el("div", {},
    el("p", {}, `Feature branch ${build.feature_branch} (database ${build.database ?? "—"})`,
      build.deployed ? " · deployed" : "", build.promoted ? " · promoted" : ""),
    build.stories.map((story) => el("div", { class: "card" },
      el("h3", {}, `${story.key} `, el("span", { class: "dim", text: `${story.branch} · db ${story.database ?? "—"}` }),
        " ", el("span", { class: `badge ${story.gate === "approved" ? "ok" : ""}`, text: `gate ${story.gate}${story.gate_actor ? ` by ${decider(story.gate_actor)}` : ""}` }),
        story.merged ? el("span", { class: "badge ok", text: "merged" }) : ""),
      table(["item", "title", "stage", "RED", "GREEN", "REFACTOR", "repairs"],
        story.cycles.map((c) => [c.item, c.title, c.stage, stageCell(c.stages.red),
          stageCell(c.stages.green), stageCell(c.stages.refactor),
          c.repairs.length ? c.repairs.join(", ") : "—"]), "cycles"))));
}

function renderFeatures(data) {
  if (!data.features.length) {
    replace("features", el("p", { class: "dim", text: "No feature yet." }));
    return;
  }
  replace("features", data.features.map((f) => el("div", { class: "card feature", "data-feature": f.id },
    el("h3", {}, `${f.id} — ${f.title} `, el("span", { class: "badge", text: `lane ${f.lane}` })),
    el("p", { class: "mono", text: `next: ${f.next}${f.command ? `   ${f.command}` : ""}` }),
    renderGate(f), renderBuild(f.build))));
}

// An experiment's approaches side by side, as `consort experiment compare` shows them: a person
// selects one at the terminal (the command is shown); the page never selects.
function schemaCell(changes) {
  if (!changes.length) return "none";
  return el("details", {}, el("summary", { text: `${changes.length} change${changes.length === 1 ? "" : "s"}` }),
    el("pre", { text: changes.join("\n") }));
}

function renderExperiments(data) {
  const experiments = data.status.experiments || [];
  if (!experiments.length) {
    replace("experiments", el("p", { class: "dim", text: "No experiment yet." }));
    return;
  }
  replace("experiments", experiments.slice().reverse().map((x) => {
    const advice = x.recommendation;
    const state = x.selected ? `selected: ${x.selected}` : x.condition;
    return el("div", { class: "card experiment", "data-subject": x.subject, "data-condition": x.condition },
      el("h3", {}, `${x.subject} · experiment ${x.experiment} `,
        el("span", { class: `badge ${x.condition === "waiting" ? "warn" : x.selected ? "ok" : ""}`, text: state }),
        el("span", { class: "dim", text: ` ${x.concurrency} at a time${x.concurrency_note ? `: ${x.concurrency_note}` : ""}` })),
      el("table", { class: "approaches" },
        el("thead", {}, el("tr", {}, ["approach", "state", "tests passed", "cycles", "repairs", "violations",
          "findings", "lines +/-", "schema diff", "duration", "cost", "driver"].map((c) => el("th", { text: c })))),
        el("tbody", {}, x.approaches.map((r) => el("tr", {
          "data-approach": r.name, class: advice.winner === r.name ? "recommended" : null },
        [r.name, el("span", { class: r.outcome === "passed" ? "ok" : r.outcome === "running" ? "" : "bad",
          text: r.outcome, title: r.message || null }), `${r.tests_passed}/${r.tests_total}`, r.cycles, r.repairs,
        r.violations, r.findings, `+${r.lines_added}/-${r.lines_removed}`, schemaCell(r.schema_changes),
        seconds(r.seconds), r.cost_usd === null ? "—" : `$${Number(r.cost_usd).toFixed(4)}`,
        [r.adapter, r.model].filter(Boolean).join(" · ")].map((cell) =>
          cell instanceof Node ? el("td", {}, cell) : el("td", { text: cell ?? "" })))))),
      el("p", { class: "recommendation" }, el("strong", { text: `Recommendation: ${advice.kind}` }),
        advice.winner ? ` — ${advice.winner}` : "", `. ${advice.reasons.join("; ")}`),
      x.commands.length ? el("div", { class: "commands" }, el("span", { class: "dim", text: "At the terminal:" }),
        x.commands.map((c) => el("code", { text: c }))) : null);
  }));
}

function renderEscalations(data) {
  replace("escalations", table(["feature", "step", "reason", "resolve with"],
    data.status.escalations.map((e) => [e.feature, e.step, e.reason, el("code", { text: e.command })])));
}

function renderTurns(data) {
  replace("turns", table(["turn", "role", "step", "adapter", "model", "duration", "tokens", "cost", "ok"],
    data.turns.map((t) => [t.turn, t.role, t.step, t.adapter || t.sandbox || "—", t.model || "—",
      seconds(t.duration_s), t.tokens ?? "—", t.cost_usd === null ? "—" : `$${Number(t.cost_usd).toFixed(4)}`,
      t.ok ? "yes" : "no"])));
}

function renderViolations(data) {
  replace("violations",
    table(["#", "turn", "role", "path", "change", "rule"],
      data.violations.map((v) => [v.seq, v.turn, v.role, v.path, v.change, v.rule])),
    el("h3", { text: "Refused calls" }),
    table(["#", "turn", "call"], data.refused.map((r) => [r.seq, r.turn, r.call])));
}

function renderBranches(data) {
  const rows = data.status.branches.map((b) => {
    const out = el("div");
    const button = el("button", { text: "schema diff", disabled: !b.parent, onclick: async () => {
      out.replaceChildren(el("span", { class: "dim", text: "…" }));
      try {
        const diff = await getJSON(`/api/branch-diff?name=${encodeURIComponent(b.name)}`);
        const text = JSON.stringify(diff, null, 2);
        out.replaceChildren(el("pre", { text }));
      } catch (error) { out.replaceChildren(el("span", { class: "bad", text: error.message })); }
    } });
    return [b.name + (b.current ? " (current)" : ""), b.parent ?? "—", b.database ?? "—", b.pairing,
      b.size_bytes ? `${(b.size_bytes / 1e6).toFixed(1)} MB` : "—", el("div", {}, button, out)];
  });
  replace("branches", data.status.branch_problem ? el("p", { class: "bad", text: data.status.branch_problem }) : null,
    table(["branch", "parent", "database", "pairing", "size", "schema against parent"], rows));
}

function renderTimeline(data) {
  const runs = (data.runs || []).map((r) => ({ turn: r.run, role: "consort: tests", started: r.started,
    finished: r.finished, duration_s: r.seconds, ok: r.ok }));
  const turns = data.turns.filter((t) => t.started && t.finished).concat(runs);
  if (!turns.length) { replace("timeline", el("p", { class: "dim", text: "No turns yet." })); return; }
  const times = turns.flatMap((t) => [Date.parse(t.started), Date.parse(t.finished)]);
  const start = Math.min(...times);
  const span = Math.max(Math.max(...times) - start, 1);
  const roles = [...new Set(turns.map((t) => t.role || "?"))];
  const width = 1100, left = 120, row = 22, height = roles.length * row + 30;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": "timeline of agent turns by role" });
  roles.forEach((role, i) => chart.append(svg("text", { x: 4, y: i * row + 15 }, role)));
  for (const t of turns) {
    const x = left + ((Date.parse(t.started) - start) / span) * (width - left - 10);
    const w = Math.max(((Date.parse(t.finished) - Date.parse(t.started)) / span) * (width - left - 10), 2);
    const rect = svg("rect", { x, y: roles.indexOf(t.role || "?") * row + 4, width: w, height: row - 8,
      fill: t.ok ? (ROLE_COLOURS[t.role] || "#555") : "#b42318", rx: 2 });
    rect.append(svg("title", {}, `${t.turn}: ${seconds(t.duration_s)}${t.ok ? "" : " (failed)"}`));
    chart.append(rect);
  }
  chart.append(svg("text", { x: left, y: height - 6 }, new Date(start).toISOString()));
  chart.append(svg("text", { x: width - 10, y: height - 6, "text-anchor": "end" }, `+${(span / 1000).toFixed(1)} s`));
  replace("timeline", chart, el("p", { class: "legend",
    text: "One bar per agent turn, and per test run Consort made itself (RED, GREEN, REFACTOR, deploy); red: it failed or the run did not prove its step." }));
}

function renderPerRole(data) {
  const entries = Object.entries(data.cost_per_role);
  if (!entries.length) { replace("per-role", el("p", { class: "dim", text: "No turns yet." })); return; }
  const byCost = entries.some(([, r]) => r.cost_usd > 0);
  const value = (r) => (byCost ? r.cost_usd : r.seconds);
  const most = Math.max(...entries.map(([, r]) => value(r)), 1e-9);
  const width = 700, left = 120, row = 22, height = entries.length * row + 8;
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": byCost ? "cost per role" : "agent time per role" });
  entries.forEach(([role, r], i) => {
    const w = (value(r) / most) * (width - left - 160);
    chart.append(svg("text", { x: 4, y: i * row + 15 }, role));
    chart.append(svg("rect", { x: left, y: i * row + 4, width: Math.max(w, 1), height: row - 8,
      fill: ROLE_COLOURS[role] || "#555", rx: 2 }));
    const label = byCost ? `$${r.cost_usd.toFixed(4)} · ${r.turns} turns` : `${r.seconds.toFixed(2)} s · ${r.turns} turns`;
    chart.append(svg("text", { x: left + w + 6, y: i * row + 15 }, `${label}${r.tokens ? ` · ${r.tokens} tokens` : ""}`));
  });
  replace("per-role", chart, el("p", { class: "legend",
    text: byCost ? "Cost per role, as the agent CLIs reported it." : "No agent reported a cost: agent time per role." }));
}

function render(data) {
  renderHeader(data);
  renderDecisions(data);
  renderFeatures(data);
  renderExperiments(data);
  renderEscalations(data);
  renderTimeline(data);
  renderPerRole(data);
  renderTurns(data);
  renderViolations(data);
  renderBranches(data);
}

async function refresh() {
  try {
    page.overview = await getJSON("/api/overview");
    render(page.overview);
    document.body.dataset.loaded = String(page.overview.ledger.events);
  } catch (error) {
    badge("ledger", `cannot read the project: ${error.message}`, "bad");
  }
}

async function refreshVerify() {
  badge("verify", "verify …", "");
  try {
    const outcome = await getJSON("/api/verify");
    badge("verify", outcome.ok ? "verify: holds" : `verify: ${outcome.fails.length} fail`, outcome.ok ? "ok" : "bad");
    replace("verify-detail",
      outcome.fails.map((line) => el("div", { class: "bad", text: `✗ ${line}` })),
      outcome.warnings.map((line) => el("div", { class: "warn", text: `! ${line}` })),
      el("details", {}, el("summary", { text: `${outcome.holds.length} checks hold` }),
        outcome.holds.map((line) => el("div", { class: "ok", text: `✓ ${line}` }))));
  } catch (error) {
    badge("verify", `verify: ${error.message}`, "bad");
  }
}

function scheduleRefresh() {
  clearTimeout(page.refreshing);
  page.refreshing = setTimeout(refresh, 150);
  clearTimeout(page.verifying);
  page.verifying = setTimeout(refreshVerify, 1000);
}

function addEvent(event) {
  const list = document.getElementById("events");
  const line = el("li", { value: event.seq, "data-seq": event.seq, "data-type": event.type, class: "fresh",
    text: `${event.time}  ${event.type}  ${event.actor}  ${event.subject}` });
  list.prepend(line);
  setTimeout(() => line.classList.remove("fresh"), 3000);
  while (list.children.length > 200) list.lastChild.remove();
}

function connect(since) {
  const source = new EventSource(`/api/events?since=${since}`);
  source.addEventListener("open", () => badge("live", "live", "ok"));
  source.addEventListener("error", () => badge("live", "reconnecting…", "warn"));
  source.addEventListener("ledger", (message) => {
    const event = JSON.parse(message.data);
    page.lastSeq = Math.max(page.lastSeq, event.seq);
    addEvent(event);
    document.body.dataset.lastSeq = String(page.lastSeq);
    if (event.seq > (page.overview ? page.overview.ledger.events : 0)) scheduleRefresh();
  });
}

function start() {
  document.getElementById("token-form").addEventListener("submit", (e) => e.preventDefault());
  document.getElementById("token").addEventListener("input", (e) => {
    page.token = e.target.value.trim();
    document.getElementById("token-state").textContent = page.token
      ? "kept in this page only; decisions are checked by the server" : "not given: the page is read-only";
    if (page.overview) renderDecisions(page.overview);
  });
  // the overview first: verify re-reads every artifact and commit, and would slow it down
  refresh().then(() => {
    const events = page.overview ? page.overview.ledger.events : 0;
    connect(Math.max(0, events - RECENT_EVENTS));
    refreshVerify();
  });
}

document.addEventListener("DOMContentLoaded", start);
