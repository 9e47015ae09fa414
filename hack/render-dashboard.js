// Draws deploy/grafana/hivekeeper-dashboard.json as a static page with
// made-up sample data, so docs/dashboard.png shows the layout without a
// Grafana. hack/render-dashboard.sh defines DASHBOARD before this script and
// screenshots the page with headless Chromium.
//
// It knows only what the dashboard uses: rows, stat panels and time series
// (lines or bars) with units, thresholds and colour overrides. The numbers are
// deterministic (seeded per query) and only plausible, not measured.
"use strict";

const UNIT_PX = 30; // Grafana's grid row height
const MARGIN = 8; // gap between panels
const COLS = 24;
const PALETTE = ["#73BF69", "#F2CC0C", "#8AB8FF", "#FF780A", "#F2495C", "#5794F2", "#B877D9", "#705DA0", "#37872D", "#FADE2A"];
const NAMED = { green: "#73BF69", red: "#F2495C", orange: "#FF9830", yellow: "#FADE2A", blue: "#5794F2" };
const POINTS = 61; // one per minute over the last hour
const START_MIN = 12 * 60; // the x axis reads 12:00 .. 13:00

// Sample label values, used to expand a legend such as "{{controller}} {{result}}".
const SAMPLES = {
  controller: ["mcpserver", "mcpremoteproxy", "virtualmcpserver", "mcpoidcconfig", "mcpgroup"],
  result: ["success", "requeue", "error"],
  resource: ["deployments", "configmaps", "services"],
  field: ["spec.template.metadata.annotations", "spec.replicas", "metadata.labels"],
  verb: ["patch", "create", "update", "delete"],
  outcome: ["success", "conflict", "error"],
  name: ["mcpserver", "mcpremoteproxy", "virtualmcpserver", "mcpoidcconfig"],
  pod: ["hivekeeper-7c9d5-x2lzq", "hivekeeper-7c9d5-m8k4p"],
  method: ["GET", "PATCH", "POST"],
  code: ["200", "201", "409"],
};
const REST_VERBS = ["GET", "PATCH", "POST", "DELETE"];

// Deterministic PRNG (mulberry32) seeded from a string.
function rng(seedText) {
  let a = 2166136261;
  for (const ch of seedText) a = Math.imul(a ^ ch.charCodeAt(0), 16777619);
  return () => {
    a |= 0; a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Label values a matcher in the query allows, e.g. result=~"error|requeue".
function allowedValues(expr, label) {
  const m = expr.match(new RegExp("[{,]\\s*" + label + "\\s*(=~|=)\\s*\"([^\"$]*)\""));
  return m ? m[2].split("|") : null;
}

// Expands a legend format into series label sets (at most `max`).
function labelSets(expr, legend, max) {
  const labels = [...legend.matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]);
  let sets = [{}];
  for (const l of labels) {
    let values = (/rest_client/.test(expr) && l === "verb") ? REST_VERBS : (SAMPLES[l] || [l]);
    values = allowedValues(expr, l) || values;
    const next = [];
    for (const s of sets) for (const v of values) next.push({ ...s, [l]: v });
    sets = next;
  }
  // Keep combinations that make sense for the sample story.
  if (labels.join() === "method,code") {
    sets = [["GET", "200"], ["PATCH", "200"], ["POST", "201"], ["PATCH", "409"]].map(([method, code]) => ({ method, code }));
  }
  sets = sets.filter((s) => !(s.outcome && s.outcome !== "success" && s.verb !== "patch"));
  return sets.slice(0, max);
}

function legendText(legend, set) {
  return legend.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l) => set[l] ?? "");
}

// A plausible level for a query and label set: [base, noise, spike chance, spike size].
function model(expr, set, refId) {
  const ctrlIdx = Math.max(0, SAMPLES.controller.indexOf(set.controller || set.name || "mcpserver"));
  const weight = [1, 0.5, 0.35, 0.25, 0.15][ctrlIdx] || 0.2;
  const p99 = /histogram_quantile\(0\.99/.test(expr);
  if (/churn/.test(expr)) return [0, 0, 0, 0];
  if (/drift_detections/.test(expr)) return [0, 0, 0.06 * weight, 3];
  if (/leader_election_master_status/.test(expr)) return [set.pod === SAMPLES.pod[1] ? 0 : 1, 0, 0, 0];
  if (/reconcile_duration/.test(expr)) return [p99 ? 0.06 * (1 + weight) : 0.003 * (1 + weight), 0.25, 0.03, 2];
  if (/queue_duration/.test(expr)) return [p99 ? 0.04 : 0.0008, 0.3, 0.03, 3];
  if (/rest_client_request_duration/.test(expr)) return [{ GET: 0.03, PATCH: 0.06, POST: 0.05, DELETE: 0.04 }[set.verb] || 0.04, 0.25, 0.02, 2];
  if (/workqueue_depth/.test(expr)) return [1.5 * weight, 0.8, 0.05, 12];
  if (/retries_total/.test(expr)) return [0.02 * weight, 0.8, 0.04, 6];
  if (/adds_total/.test(expr)) return [3 * weight, 0.2, 0.03, 3];
  if (/writes_skipped/.test(expr)) return [1.2 * weight * (set.resource === "deployments" ? 1 : 0.6), 0.25, 0.02, 2];
  if (/writes_total/.test(expr)) {
    const v = { patch: 0.12, create: 0.05, update: 0.02, delete: 0.01 }[set.verb] || 0.05;
    const o = { success: 1, conflict: 0.08, error: 0.03 }[set.outcome] || 1;
    return [v * o, 0.6, 0.05, 5];
  }
  if (/reconcile_total/.test(expr)) {
    const r = { success: 3, requeue: 0.15, error: 0.03 }[set.result] || 3;
    return [r * weight, 0.25, 0.04, 4];
  }
  if (/rest_client_requests_total/.test(expr)) {
    return [{ GET: 0.6, PATCH: 0.25, POST: 0.08 }[set.method] * (set.code === "409" ? 0.05 : 1) || 0.1, 0.3, 0.03, 3];
  }
  if (/process_resident_memory_bytes/.test(expr)) return [(set.pod === SAMPLES.pod[1] ? 41 : 78) * 2 ** 20, 0.03, 0, 0];
  if (/heap_alloc/.test(expr)) return [(set.pod === SAMPLES.pod[1] ? 14 : 31) * 2 ** 20, 0.12, 0, 0];
  return [1, 0.2, 0, 0];
}

function series(expr, set, refId, title) {
  const [base, noise, spikeP, spike] = model(expr, set, refId);
  const r = rng(title + expr + JSON.stringify(set));
  const out = [];
  let level = base;
  for (let i = 0; i < POINTS; i++) {
    level = base * (1 + noise * (r() - 0.5)) * 0.4 + level * 0.6;
    let v = level;
    if (r() < spikeP) v = base > 0 ? base * (1 + spike * r()) : Math.ceil(spike * r());
    out.push(Math.max(0, v));
  }
  return out;
}

// Stat panels: the last value of the same sample story.
function statValue(panel) {
  const e = panel.targets[0].expr;
  if (/leader_election/.test(e)) return 1;
  if (/churn/.test(e)) return 0;
  if (/result="error"/.test(e)) return 0.0031;
  if (/reconcile_total/.test(e)) return 6.7;
  if (/workqueue_depth/.test(e)) return 2;
  if (/resident_memory/.test(e)) return 78 * 2 ** 20;
  return 0;
}

function formatValue(v, unit, decimals) {
  const fix = (x, d) => (decimals !== undefined ? x.toFixed(decimals) : x.toFixed(d)).replace(/\.0+$/, "");
  switch (unit) {
    case "s":
      if (v === 0) return "0 s";
      if (v < 0.001) return fix(v * 1e6, 0) + " µs";
      if (v < 1) return fix(v * 1000, v < 0.01 ? 1 : 0) + " ms";
      return fix(v, 2) + " s";
    case "bytes": {
      const u = ["B", "KiB", "MiB", "GiB"];
      let i = 0;
      while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
      return fix(v, v < 10 ? 1 : 0) + " " + u[i];
    }
    case "percentunit": return fix(v * 100, 2) + "%";
    case "ops": return fix(v, v < 1 ? 2 : 1) + " ops/s";
    case "reqps": return fix(v, v < 1 ? 2 : 1) + " req/s";
    default: return fix(v, v < 1 && v > 0 ? 2 : v < 10 ? 1 : 0);
  }
}

function thresholdColor(steps, v) {
  let c = steps[0].color;
  for (const s of steps) if (s.value === null || v >= s.value) c = s.color;
  return NAMED[c] || c;
}

// A round tick step so that four steps cover v.
function niceStep(v) {
  if (v <= 0) return 0.25;
  const raw = v / 4;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 2.5, 5, 10]) if (raw <= m * p) return m * p;
  return 10 * p;
}

const svgNS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent, text) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  parent.appendChild(e);
  return e;
}

function drawTimeseries(panel, body) {
  const defaults = panel.fieldConfig.defaults;
  const unit = defaults.unit;
  const bars = defaults.custom && defaults.custom.drawStyle === "bars";
  const thrStyle = defaults.custom && defaults.custom.thresholdsStyle && defaults.custom.thresholdsStyle.mode;
  const lines = [];
  let colorIdx = 0;
  for (const t of panel.targets) {
    for (const set of labelSets(t.expr, t.legendFormat, 5)) {
      const name = legendText(t.legendFormat, set);
      let color = PALETTE[colorIdx++ % PALETTE.length];
      for (const o of panel.fieldConfig.overrides || []) {
        if (o.matcher.id === "byRegexp" && new RegExp("^" + o.matcher.options + "$").test(name)) {
          const c = o.properties.find((p) => p.id === "color");
          if (c) color = NAMED[c.value.fixedColor] || c.value.fixedColor;
        }
      }
      lines.push({ name, color, data: series(t.expr, set, t.refId, panel.title) });
    }
  }
  const legend = document.createElement("div");
  legend.className = "legend";
  for (const l of lines) {
    const item = document.createElement("span");
    item.innerHTML = `<i style="background:${l.color}"></i>`;
    item.appendChild(document.createTextNode(l.name));
    legend.appendChild(item);
  }
  const W = body.clientWidth, H0 = body.clientHeight;
  body.appendChild(legend);
  const H = H0 - legend.offsetHeight - 4;
  const svg = el("svg", { width: W, height: H }, body);
  body.insertBefore(svg, legend);

  const steps = (defaults.thresholds && defaults.thresholds.steps) || [];
  const thr = thrStyle && thrStyle !== "off" ? steps.filter((s) => s.value !== null) : [];
  let max = Math.max(...lines.flatMap((l) => l.data));
  if (thr.length) max = Math.max(max, thr[0].value * 2);
  const scale = unit === "bytes" ? 2 ** 20 : 1; // round MiB steps for bytes
  max = defaults.max !== undefined ? defaults.max : 4 * scale * niceStep((max * 1.05) / scale);
  const left = 64, right = 18, top = 6, bottom = 18;
  const pw = W - left - right, ph = H - top - bottom;
  const x = (i) => left + (i / (POINTS - 1)) * pw;
  const y = (v) => top + ph - (v / max) * ph;
  for (let k = 0; k <= 4; k++) {
    const v = (max * k) / 4;
    el("line", { x1: left, x2: W - right, y1: y(v), y2: y(v), class: "grid" }, svg);
    el("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" }, svg, formatValue(v, unit));
  }
  for (let i = 0; i < POINTS; i += 10) {
    const m = START_MIN + i;
    el("line", { x1: x(i), x2: x(i), y1: top, y2: top + ph, class: "grid" }, svg);
    el("text", { x: x(i), y: H - 4, "text-anchor": "middle", class: "axis" }, svg,
      `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`);
  }
  for (const s of thr) {
    const c = NAMED[s.color] || s.color;
    if (thrStyle.includes("area")) el("rect", { x: left, y: top, width: pw, height: Math.max(0, y(s.value) - top), fill: c, opacity: 0.15 }, svg);
    el("line", { x1: left, x2: W - right, y1: y(s.value), y2: y(s.value), stroke: c, "stroke-dasharray": "6 4", "stroke-width": 1.5 }, svg);
  }
  if (bars) {
    const bw = Math.max(1, pw / POINTS / Math.max(1, lines.length) - 1);
    lines.forEach((l, j) => l.data.forEach((v, i) => {
      if (v > 0) el("rect", { x: x(i) - (lines.length * bw) / 2 + j * bw, y: y(v), width: bw, height: y(0) - y(v), fill: l.color, opacity: 0.8 }, svg);
    }));
  } else {
    for (const l of lines) {
      const d = l.data.map((v, i) => `${i ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join("");
      el("path", { d: d + `L${x(POINTS - 1)},${y(0)}L${x(0)},${y(0)}Z`, fill: l.color, opacity: 0.08 }, svg);
      el("path", { d, fill: "none", stroke: l.color, "stroke-width": 1.5 }, svg);
    }
  }
}

function drawStat(panel, body) {
  const d = panel.fieldConfig.defaults;
  const v = statValue(panel);
  body.classList.add("stat");
  body.style.background = thresholdColor(d.thresholds.steps, v);
  body.textContent = formatValue(v, d.unit, d.decimals);
}

function render() {
  document.getElementById("title").textContent = DASHBOARD.title;
  const vars = document.getElementById("vars");
  for (const v of DASHBOARD.templating.list) {
    const s = document.createElement("span");
    s.innerHTML = `<b>${v.label || v.name}</b><em>${v.type === "datasource" ? "Prometheus" : "All"}</em>`;
    vars.appendChild(s);
  }
  const grid = document.getElementById("grid");
  const colW = (grid.clientWidth - (COLS - 1) * MARGIN) / COLS;
  let bottom = 0;
  for (const p of DASHBOARD.panels) {
    const g = p.gridPos;
    const div = document.createElement("div");
    div.className = p.type === "row" ? "row" : "panel";
    div.style.left = g.x * (colW + MARGIN) + "px";
    div.style.top = g.y * (UNIT_PX + MARGIN) + "px";
    div.style.width = g.w * colW + (g.w - 1) * MARGIN + "px";
    div.style.height = g.h * UNIT_PX + (g.h - 1) * MARGIN + "px";
    bottom = Math.max(bottom, (g.y + g.h) * (UNIT_PX + MARGIN));
    grid.appendChild(div);
    if (p.type === "row") {
      div.textContent = "⌄ " + p.title;
      continue;
    }
    const title = document.createElement("div");
    title.className = "ptitle";
    title.textContent = p.title;
    div.appendChild(title);
    const body = document.createElement("div");
    body.className = "pbody";
    div.appendChild(body);
    if (p.type === "stat") drawStat(p, body);
    else drawTimeseries(p, body);
  }
  grid.style.height = bottom + "px";
}

window.addEventListener("load", render);
