// pykai's dashboard: polls /api/dashboard and draws the page named by the URL's #fragment.
// Read-only; no outside assets. Text goes in with textContent only.
"use strict";

const REFRESH_MS = 2000;
const PALETTE = ["#4f46e5", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#06b6d4", "#84cc16",
  "#ec4899", "#f97316", "#14b8a6", "#a855f7", "#eab308"];
const PAGES = ["queues", "gpus", "pending", "evictions", "history"];
let model = null;

// The palette first; past it, hues a golden angle apart (lightness varied), so that a
// hundred queues still get distinct colours. Pods in no queue are grey.
function colour(index, names) {
  if (names[index] === "") return "#9ca3af";
  if (index < PALETTE.length) return PALETTE[index];
  return `hsl(${(index * 137.508) % 360}, 70%, ${[42, 58, 50][index % 3]}%)`;
}

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  return node;
}

function row(cells) {
  const tr = el("tr");
  for (const cell of cells) {
    const td = el("td");
    if (cell instanceof Node) td.appendChild(cell); else td.textContent = cell === null ? "" : String(cell);
    tr.appendChild(td);
  }
  return tr;
}

function fill(id, rows) {
  const body = document.getElementById(id);
  body.replaceChildren(...rows);
}

function num(value) {
  if (value === null || value === undefined) return "∞";
  return Number.isInteger(value) ? String(value) : value.toFixed(2).replace(/\.?0+$/, "");
}

function stamp(seconds) {
  return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function currentPage() {
  const name = location.hash.replace("#", "");
  return PAGES.includes(name) ? name : "queues";
}

// ---- queues -------------------------------------------------------------------------------

function bar(f) {
  const finite = [f.quota, f.fairShare, f.allocated, f.requested, f.limit].filter((v) => v !== null);
  const scale = Math.max(...finite, 0) || 1;
  const pct = (v) => `${Math.min(100, (100 * v) / scale)}%`;
  const box = el("div", null, { class: "bar" });
  const requested = el("div", null, { class: "requested" });
  requested.style.width = pct(f.requested);
  const allocated = el("div", null, { class: "allocated" });
  allocated.style.width = pct(f.allocated);
  box.append(requested, allocated);
  for (const [cls, value] of [["fair", f.fairShare], ["quota", f.quota]]) {
    if (value === null) continue;
    const mark = el("div", null, { class: cls });
    mark.style.left = pct(value);
    box.appendChild(mark);
  }
  const cell = el("div");
  cell.append(box, el("div", `allocated ${num(f.allocated)} · requested ${num(f.requested)} · fair share ${num(f.fairShare)} · quota ${num(f.quota)} · limit ${num(f.limit)}`, { class: "figures" }));
  return cell;
}

function drawQueues() {
  fill("queue-rows", model.queues.map((q) => {
    const name = el("span", q.name, { class: "queue-name" });
    name.style.paddingLeft = `${q.depth * 1.5}em`;
    if (q.orphan) {
      return row([name, "", `its parent queue "${q.parent}" does not exist`, "", ""]);
    }
    const tr = row([name, q.priority, ...model.resources.map((r) => bar(q.figures[r]))]);
    tr.dataset.queue = q.name;
    return tr;
  }));
}

// ---- GPU map (one canvas: 1,000 nodes of 8 devices are 8,000 cells, no DOM node each) ------

// A small cluster is drawn one node a row with its name; a large one packs nodes in a grid.
const FEW_NODES = 64;
const GAP = 4;
const LABEL = 150;
let layout = [];
let cellSize = 10;

function drawGpus() {
  const gpus = model.gpus;
  const names = gpus.queues;
  const canvas = document.getElementById("gpu-canvas");
  const width = canvas.width;
  const few = gpus.nodes.length <= FEW_NODES;
  cellSize = few ? 18 : 10;
  let x = few ? LABEL : GAP, y = GAP;
  layout = [];
  for (const [name, devices] of gpus.nodes) {
    const w = Math.max(devices.length, 1) * cellSize;
    if (few && layout.length) { y += cellSize + GAP; } else if (x + w > width) { x = GAP; y += cellSize + GAP; }
    layout.push({ name, devices, x, y, w });
    if (!few) x += w + GAP;
  }
  canvas.height = y + cellSize + GAP;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.font = "12px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  const held = new Array(names.length).fill(0);
  let total = 0, busy = 0;
  for (const node of layout) {
    if (few) {
      ctx.fillStyle = "#222";
      ctx.fillText(node.name, GAP, node.y + cellSize / 2);
    }
    node.devices.forEach((segments, d) => {
      const dx = node.x + d * cellSize;
      ctx.fillStyle = "#e5e7eb";
      ctx.fillRect(dx, node.y, cellSize - 1, cellSize);
      let top = node.y + cellSize;
      total += 1;
      for (const [q, portion] of segments) {
        const h = cellSize * Math.min(1, portion);
        ctx.fillStyle = colour(q, names);
        ctx.fillRect(dx, top - h, cellSize - 1, h);
        top -= h;
        held[q] += portion;
        busy += portion;
      }
    });
  }
  document.getElementById("gpu-summary").textContent =
    `${gpus.nodes.length} nodes, ${total} GPUs, ${num(busy)} in use. Each square is a device; a shared device is split by the portion each queue holds.`;
  document.getElementById("gpu-legend").replaceChildren(...names.map((n, i) => {
    const item = el("span", null, { "data-queue": n });
    const swatch = el("i");
    swatch.style.background = colour(i, names);
    item.append(swatch, `${n || "(no queue)"}: ${num(held[i])} GPUs`);
    return item;
  }).filter((_, i) => held[i] > 0));
  const shared = gpus.shared.map((s) => row([s.node, `GPU ${s.device}`,
    s.queues.map((h) => `${h.queue || "(no queue)"} ${num(h.portion)}`).join(", ")]));
  if (gpus.sharedTotal > gpus.shared.length) shared.push(row([`… and ${gpus.sharedTotal - gpus.shared.length} more`, "", ""]));
  fill("shared-rows", shared);
}

function gpuTip(event) {
  const tip = document.getElementById("gpu-tip");
  const canvas = event.target;
  const box = canvas.getBoundingClientRect();
  const x = event.clientX - box.left, y = event.clientY - box.top;
  const node = layout.find((n) => x >= n.x && x < n.x + n.w && y >= n.y && y < n.y + cellSize);
  if (!node || !model) { tip.hidden = true; return; }
  const names = model.gpus.queues;
  const lines = node.devices.map((segments, d) => `GPU ${d}: ` + (segments.length
    ? segments.map(([q, p]) => `${names[q] || "(no queue)"} ${num(p)}`).join(", ") : "idle"));
  tip.textContent = [node.name, ...lines].join("\n");
  tip.style.left = `${event.clientX + 12}px`;
  tip.style.top = `${event.clientY + 12}px`;
  tip.hidden = false;
}

// ---- pending jobs, evictions ----------------------------------------------------------------

function drawPending() {
  const pending = model.pending;
  document.getElementById("pending-summary").textContent =
    `${pending.total} pending jobs, in the order the scheduler will try them` +
    (pending.total > pending.jobs.length ? ` (the first ${pending.jobs.length} shown)` : "");
  fill("pending-rows", pending.jobs.map((j) => {
    const tr = row([j.position, j.queuePosition, j.job, j.queue, j.pending, num(j.gpu), j.reason]);
    tr.dataset.job = j.job;
    return tr;
  }));
}

function drawEvictions() {
  const rows = model.evictions.map((e) => {
    const tr = row([stamp(e.time), `${e.namespace}/${e.pod}`, e.action, e.preemptor || "—", e.message]);
    tr.dataset.pod = `${e.namespace}/${e.pod}`;
    return tr;
  });
  if (!rows.length) rows.push(row(["no evictions seen since the dashboard started", "", "", "", ""]));
  fill("eviction-rows", rows);
}

// ---- history --------------------------------------------------------------------------------

function drawHistory() {
  const svg = document.getElementById("history-chart");
  const ns = "http://www.w3.org/2000/svg";
  const { queues, samples } = model.history;
  const W = Number(svg.getAttribute("width")), H = Number(svg.getAttribute("height")), P = 40;
  const parts = [];
  const t0 = samples.length ? samples[0][0] : 0;
  const t1 = samples.length ? samples[samples.length - 1][0] : 1;
  const top = Math.max(1, ...samples.flatMap(([, values]) => values));
  const sx = (t) => P + ((W - 2 * P) * (t - t0)) / Math.max(t1 - t0, 1);
  const sy = (v) => H - P - ((H - 2 * P) * v) / top;
  const axis = document.createElementNS(ns, "path");
  axis.setAttribute("d", `M${P},${P} V${H - P} H${W - P}`);
  axis.setAttribute("stroke", "#999");
  axis.setAttribute("fill", "none");
  parts.push(axis);
  for (const [text, x, y] of [[num(top), 4, P + 4], ["0", 4, H - P], [stamp(t0), P, H - 10], [stamp(t1), W - P - 170, H - 10]]) {
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", x); label.setAttribute("y", y); label.setAttribute("font-size", "11");
    label.textContent = text;
    parts.push(label);
  }
  const legendNames = model.gpus.queues;
  queues.forEach((name, i) => {
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", samples.map(([t, values]) => `${sx(t)},${sy(values[i])}`).join(" "));
    line.setAttribute("fill", "none");
    line.setAttribute("stroke-width", "2");
    line.setAttribute("stroke", colour(Math.max(0, legendNames.indexOf(name)), legendNames));
    line.dataset.queue = name;
    parts.push(line);
    if (samples.length) {
      const [t, values] = samples[samples.length - 1];
      const dot = document.createElementNS(ns, "circle");
      dot.setAttribute("cx", sx(t)); dot.setAttribute("cy", sy(values[i])); dot.setAttribute("r", "3");
      dot.setAttribute("fill", line.getAttribute("stroke"));
      parts.push(dot);
    }
  });
  svg.replaceChildren(...parts);
  document.getElementById("history-legend").replaceChildren(...queues.map((name, i) => {
    const last = samples.length ? samples[samples.length - 1][1][i] : 0;
    const item = el("span", null, { "data-queue": name });
    const swatch = el("i");
    swatch.style.background = colour(Math.max(0, legendNames.indexOf(name)), legendNames);
    item.append(swatch, `${name}: ${num(last)} GPUs now`);
    return item;
  }));
}

// ---- the loop -------------------------------------------------------------------------------

const DRAW = { queues: drawQueues, gpus: drawGpus, pending: drawPending, evictions: drawEvictions, history: drawHistory };

function show() {
  const page = currentPage();
  for (const name of PAGES) document.getElementById(name).hidden = name !== page;
  for (const link of document.querySelectorAll("nav a")) link.classList.toggle("current", link.dataset.page === page);
  const started = performance.now();
  if (model && !model.waiting) DRAW[page]();
  document.body.dataset.page = page;
  if (location.search.includes("timing")) console.log(`pykai-draw ${page} ${(performance.now() - started).toFixed(1)} ms`);  // pykai bench dashboard
}

async function refresh() {
  try {
    const answer = await fetch("/api/dashboard", { cache: "no-store" });
    model = await answer.json();
    document.getElementById("clock").textContent = model.waiting || `as of ${stamp(model.time)}`;
    show();
    document.body.dataset.loaded = "true";
  } catch (error) {
    document.getElementById("clock").textContent = `refresh failed: ${error}`;
  }
  setTimeout(refresh, REFRESH_MS);
}

window.addEventListener("hashchange", show);
document.getElementById("gpu-canvas").addEventListener("mousemove", gpuTip);
document.getElementById("gpu-canvas").addEventListener("mouseleave", () => { document.getElementById("gpu-tip").hidden = true; });
refresh();
