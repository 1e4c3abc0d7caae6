// MirrorMaker 2 status page: polls /ui/api/status and draws flows with hand-made SVG sparklines.
// No external resources: the page must work on machines without Internet access.
"use strict";

const POLL_MS = 1500;
const SVG_NS = "http://www.w3.org/2000/svg";
const FIGURES = [
  ["heartbeat_age", "Heartbeat age", (v) => seconds(v)],
  ["latency", "End-to-end latency", (v) => seconds(v)],
  ["lag_records", "Lag (records)", (v) => (v === null || v === undefined ? "–" : String(v))],
  ["lag_seconds", "Lag (oldest record)", (v) => seconds(v)],
  ["rpo", "Estimated RPO", (v) => seconds(v)],
];

function seconds(v) {
  if (v === null || v === undefined) return "–";
  return v < 10 ? v.toFixed(2) + " s" : v.toFixed(1) + " s";
}

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function sparkline(values) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 100 30");
  svg.setAttribute("preserveAspectRatio", "none");
  const points = values.map((v, i) => [i, v]).filter(([, v]) => v !== null && v !== undefined);
  if (points.length > 1) {
    const max = Math.max(...points.map(([, v]) => v), 1e-9);
    const n = Math.max(values.length - 1, 1);
    const line = document.createElementNS(SVG_NS, "polyline");
    line.setAttribute("points", points.map(([i, v]) => `${(i / n) * 100},${29 - (v / max) * 27}`).join(" "));
    svg.appendChild(line);
  }
  svg.setAttribute("data-points", String(points.length));
  return svg;
}

function figure(flowName, key, label, format, value, history) {
  const box = el("div", { class: "figure", "data-field": key });
  box.appendChild(el("div", { class: "label" }, label));
  box.appendChild(el("div", { class: "value", "data-value": value === null ? "" : String(value) }, format(value)));
  const series = history.map((h) => (h.flows[flowName] || {})[key] ?? null);
  box.appendChild(sparkline(series));
  const known = series.filter((v) => v !== null);
  if (known.length) {
    const minutes = Math.max(1, Math.round((history[history.length - 1].t - history[0].t) / 60));
    box.appendChild(el("div", { class: "scale" }, `max ${format(Math.max(...known))} · last ${minutes} min`));
  }
  return box;
}

function table(headers, rows) {
  const t = el("table");
  const head = el("tr");
  headers.forEach(([h, num]) => head.appendChild(el("th", num ? { class: "num" } : {}, h)));
  t.appendChild(head);
  rows.forEach((row) => {
    const tr = el("tr");
    row.forEach((cell, i) => tr.appendChild(el("td", headers[i][1] ? { class: "num" } : {}, cell)));
    t.appendChild(tr);
  });
  return t;
}

function renderFlow(flow, history) {
  const card = el("section", { class: `flow ${flow.state}`, "data-flow": flow.flow, "data-state": flow.state });
  const title = el("h2", {}, flow.flow);
  title.appendChild(el("span", { class: `badge ${flow.state}` }, flow.state));
  title.appendChild(el("span", { class: "muted" }, `heartbeats: ${flow.heartbeat_basis}`));
  card.appendChild(title);
  const figures = el("div", { class: "figures" });
  const now = {
    heartbeat_age: flow.heartbeat_age_seconds, latency: flow.latency_seconds, lag_records: flow.lag_records,
    lag_seconds: flow.max_lag_seconds, rpo: flow.rpo_seconds,
  };
  FIGURES.forEach(([key, label, format]) => figures.appendChild(figure(flow.flow, key, label, format, now[key], history)));
  card.appendChild(figures);
  if (flow.reasons.length) {
    const list = el("ul", { class: "reasons" });
    flow.reasons.forEach((r) => list.appendChild(el("li", {}, r)));
    card.appendChild(list);
  }
  if (flow.partitions.length) {
    card.appendChild(table(
      [["Remote topic"], ["Partition", 1], ["Source end", 1], ["Replicated", 1], ["Lag", 1], ["Lag age", 1]],
      flow.partitions.map((p) => [p.remote_topic, String(p.partition), String(p.source_end_offset ?? "–"),
        String(p.replicated_offset ?? "–"), String(p.lag_records ?? "–"), seconds(p.lag_seconds)])));
  }
  if (flow.groups.length) {
    card.appendChild(table(
      [["Consumer group"], ["Translatable"], ["Checkpointed", 1], ["Checkpoint age", 1]],
      flow.groups.map((g) => [g.group, g.translatable ? "yes" : "no",
        `${g.checkpointed_partitions}/${g.committed_partitions}`, seconds(g.checkpoint_age_seconds)])));
  }
  return card;
}

function render(data) {
  const overall = document.getElementById("overall");
  const flows = document.getElementById("flows");
  const report = data.report;
  if (!report) return;
  overall.className = `badge ${report.state}`;
  overall.textContent = report.state;
  overall.setAttribute("data-state", report.state);
  const updated = document.getElementById("updated");
  updated.textContent = "checked " + new Date(report.checked_at * 1000).toLocaleTimeString();
  updated.setAttribute("data-checked-at", String(report.checked_at));
  flows.replaceChildren(...report.flows.map((f) => renderFlow(f, data.history)));
}

async function poll() {
  const error = document.getElementById("error");
  try {
    const response = await fetch("/ui/api/status", { cache: "no-store" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    render(await response.json());
    error.hidden = true;
  } catch (e) {
    error.textContent = "cannot reach the MirrorMaker node: " + e.message;
    error.hidden = false;
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

poll();
