# ruff: noqa: E501  (the page template below: CSS and JS lines are kept whole)
"""`history report --html`: one self-contained page, no network: inline CSS, JS and SVG.

An overview table of every series (sortable by any column, the change included; filters by device,
test and status) and, per series, a trend chart: each run's rounds as dots, its mean as a line,
the segment levels between change points dashed, and each change point a vertical marker whose
hover text is its attribution. Charts are drawn when scrolled into view, so a page of hundreds of
series opens quickly. Profile artefacts of the newest run are linked where the files exist.
"""

from __future__ import annotations

import html
import json
import os
import urllib.parse
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_kernelperf.formatting import significant

from .changepoints import SeriesReport, short, status_text


def _artifacts(report: SeriesReport, base: Path | None) -> list[list[str]]:
    """[label, href] of the newest run's artefacts that exist on disk. A run file is untrusted
    input: each href is a path relative to the page, percent-encoded and starting with "./", so
    that no artefact path (`javascript:...`, `https://...`) is ever read as a URL of its own."""
    out = []
    folder = base if base is not None else Path.cwd()
    for path in report.latest.artifacts:
        target = Path(path)
        if not target.is_absolute() and base is not None and not target.exists():
            target = base / target
        if target.exists():
            out.append([Path(path).name, _relative_href(target, folder)])
    return out


def _relative_href(target: Path, folder: Path) -> str:
    relative = Path(os.path.relpath(target.resolve(), folder)).as_posix()
    return "./" + urllib.parse.quote(relative, safe="/")


def series_data(report: SeriesReport, base: Path | None = None) -> dict[str, Any]:
    key = report.key
    points = report.points
    last = report.last_change
    return {
        "id": report.series_id,
        "test": key.test,
        "name": key.name,
        "device": key.device,
        "cache": key.cache,
        "metric": key.metric,
        "status": status_text(report, since=False),
        "total": round(report.total_change_pct, 3),
        "last": None if last is None else round(last.change_pct, 3),
        "lastAt": None if last is None else (short(last.commit) if last.commit else f"run {last.run_id}"),
        "latest": significant(report.latest.median_ms),
        "verdict": report.latest.verdict or "",
        "v": [significant(p.value) for p in points],
        "r": [[significant(x, 5) for x in p.rounds()] for p in points],
        "c": [short(p.commit) if p.commit else f"run {p.run_id}" for p in points],
        "t": [p.created for p in points],
        "cp": [
            {
                "i": cp.index,
                "from": cp.drift_from if cp.drift_from is not None else cp.index,
                "kind": cp.kind,
                "pct": round(cp.change_pct, 3),
                "slow": cp.slowdown,
                "range": cp.commit_range(),
                "text": cp.describe(),
            }
            for cp in report.change_points
        ],
        "art": _artifacts(report, base),
        "mem": [{"grew": step.grew, "text": step.describe()} for step in report.memory_steps],
    }


def render(
    reports: Sequence[SeriesReport], *, title: str = "kernelperf history", base: Path | None = None
) -> str:
    data = [series_data(r, base) for r in reports]
    runs = {p.run_id for r in reports for p in r.points}
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    # Inside <script>, markup in test ids must stay text: < > & are only ever inside JSON strings.
    payload = (
        json.dumps(data, separators=(",", ":"), allow_nan=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
    summary = f"{len(reports)} series, {len(runs)} runs, generated {generated}"
    return (
        _TEMPLATE.replace("__TITLE__", html.escape(title))
        .replace("__SUMMARY__", html.escape(summary))
        .replace("__DATA__", payload)
    )


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #f6f8fa; --blue: #0969da;
        --slow: #cf222e; --fast: #1a7f37; --drift: #9a6700; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg); }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--bg); }
h1 { font-size: 20px; margin: 0 0 2px; }
.sub { color: var(--muted); font-size: 13px; }
main { padding: 14px 28px 40px; max-width: 1240px; }
.filters { display: flex; gap: 14px; align-items: center; flex-wrap: wrap; margin: 6px 0 12px; }
.filters label { color: var(--muted); font-size: 13px; }
.filters input, .filters select { font: inherit; padding: 4px 8px; border: 1px solid var(--line); border-radius: 6px; }
.filters input { width: 240px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: var(--bg); cursor: pointer; user-select: none; position: sticky; top: 0; }
th.sorted::after { content: " \\25BE"; color: var(--muted); }
th.sorted.asc::after { content: " \\25B4"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.test { max-width: 460px; overflow: hidden; text-overflow: ellipsis; }
tbody tr:hover { background: #f3f6fa; }
a { color: var(--blue); text-decoration: none; }
a:hover { text-decoration: underline; }
.badge { display: inline-block; padding: 0 7px; border-radius: 10px; font-size: 12px; border: 1px solid var(--line); }
.b-slower, .b-drift-slower { color: var(--slow); border-color: #ffcecb; background: #ffebe9; }
.b-faster, .b-drift-faster { color: var(--fast); border-color: #aceebb; background: #dafbe1; }
.b-steady { color: var(--muted); }
.pos { color: var(--slow); } .neg { color: var(--fast); }
h2 { font-size: 16px; margin: 26px 0 8px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px 8px; margin: 12px 0; }
.card h3 { font-size: 14px; margin: 0; font-weight: 600; word-break: break-all; }
.card .meta { color: var(--muted); font-size: 12px; margin: 2px 0 4px; }
.chart { width: 100%; height: 190px; display: block; }
.chart .grid { stroke: #eaeef2; }
.chart .axis { fill: var(--muted); font-size: 11px; }
.chart .rounds { stroke: #8c959f; stroke-width: 3.2; stroke-linecap: round; opacity: .55; }
.chart .trend { fill: none; stroke: var(--blue); stroke-width: 1.6; }
.chart .level { stroke: var(--fg); stroke-width: 1; stroke-dasharray: 4 3; opacity: .6; }
.chart .cp { stroke-width: 2; }
.chart .cp.slow { stroke: var(--slow); } .chart .cp.fast { stroke: var(--fast); }
.chart .span { opacity: .12; }
.chart .hit { stroke: transparent; stroke-width: 12; cursor: help; }
.chart .cursor { stroke: var(--muted); stroke-width: 1; }
.cps { margin: 4px 0 0; padding-left: 18px; font-size: 12px; color: var(--fg); }
.cps li { margin: 1px 0; }
.arts { font-size: 12px; margin-top: 4px; }
#tip { position: fixed; pointer-events: none; background: #fff; border: 1px solid var(--line); border-radius: 6px;
       padding: 6px 8px; font-size: 12px; box-shadow: 0 3px 12px rgba(0,0,0,.12); display: none; max-width: 420px; }
.legend { margin-top: 4px; }
.legend .k { display: inline-block; width: 18px; height: 0; margin: 0 5px 3px 10px; vertical-align: middle; border-top: 2px solid var(--blue); }
.legend .k:first-child { margin-left: 0; }
.legend .dot { width: 6px; height: 6px; border: 0; border-radius: 3px; background: #8c959f; }
.legend .dash { border-top: 1px dashed var(--fg); }
.legend .slow { width: 0; height: 12px; border-top: 0; border-left: 2px solid var(--slow); }
.legend .fast { width: 0; height: 12px; border-top: 0; border-left: 2px solid var(--fast); }
.empty { color: var(--muted); padding: 10px 0; }
</style>
</head>
<body>
<header><h1>__TITLE__</h1><div class="sub">__SUMMARY__</div>
<div class="sub legend"><span class="k dot"></span>rounds of a run <span class="k line"></span>mean of its rounds
<span class="k dash"></span>level between change points <span class="k slow"></span>slower <span class="k fast"></span>faster
(hover a marker or a run for details)</div></header>
<main>
<div class="filters">
  <label>Device <select id="f-device"><option value="">all</option></select></label>
  <label>Test <input id="f-test" type="search" placeholder="part of a test id or name"></label>
  <label>Status <select id="f-status"><option value="">all</option></select></label>
  <span class="sub" id="count"></span>
</div>
<table id="overview">
<thead><tr>
<th data-k="label">series</th><th data-k="device">device</th><th data-k="cache">cache</th>
<th data-k="runs" data-num="1">runs</th><th data-k="latest" data-num="1">latest</th>
<th data-k="total" data-num="1">change</th><th data-k="last" data-num="1">last change point</th>
<th data-k="status">status</th><th data-k="verdict">newest run's verdict</th>
</tr></thead>
<tbody></tbody>
</table>
<div class="empty" id="none" hidden>No series match the filters.</div>
<h2>Trends</h2>
<div id="charts"></div>
</main>
<div id="tip"></div>
<script type="application/json" id="data">__DATA__</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);
const tip = $("tip");
function fmtMs(ms) { return ms < 1 ? (ms * 1000).toPrecision(4) + " \\u00b5s" : ms.toPrecision(4) + " ms"; }
function fmtPct(p) { return p === null ? "" : (p > 0 ? "+" : "") + p.toFixed(1) + "%"; }
function el(tag, attrs, parent) {
  const node = document.createElementNS(NS, tag);
  for (const k in attrs) node.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(node);
  return node;
}
// Links go to a path relative to the page ("./..." as written by the report) or to http(s) only.
function safeHref(h) { return typeof h === "string" && (/^\\.\\.?\\//.test(h) || /^https?:\\/\\//i.test(h)); }
function label(s) { return s.test + (s.name ? " [" + s.name + "]" : "") + (s.metric === "device_time" ? "" : " (" + s.metric + ")"); }
for (const s of DATA) { s.label = label(s); s.runs = s.v.length; }

// overview table
const tbody = document.querySelector("#overview tbody");
for (const s of DATA) {
  const tr = document.createElement("tr");
  tr.dataset.id = s.id;
  const cls = s.status.replace(" ", "-");
  // Data only ever reaches the page as text (textContent, attribute values), never as markup.
  const cells = [
    ["test", ""], ["", s.device], ["", s.cache], ["num", String(s.runs)],
    ["num", fmtMs(s.latest)], ["num " + (s.total > 0 ? "pos" : "neg"), fmtPct(s.total)],
    ["num " + (s.last === null ? "" : s.last > 0 ? "pos" : "neg"), s.last === null ? "" : fmtPct(s.last) + " at " + s.lastAt],
    ["", ""], ["", s.verdict],
  ];
  for (const [c, t] of cells) { const td = document.createElement("td"); td.className = c; td.textContent = t; tr.appendChild(td); }
  const link = document.createElement("a"); link.href = "#s" + s.id; link.textContent = s.label;
  tr.cells[0].appendChild(link); tr.cells[0].title = s.label;
  const badge = document.createElement("span"); badge.className = "badge b-" + cls; badge.textContent = s.status;
  tr.cells[7].appendChild(badge);
  s.row = tr;
  tbody.appendChild(tr);
}
let sortKey = "total", sortAsc = false;
function sortBy(key, num) {
  if (sortKey === key) sortAsc = !sortAsc; else { sortKey = key; sortAsc = !num; }
  render();
}
document.querySelectorAll("#overview th").forEach((th) => th.addEventListener("click", () => sortBy(th.dataset.k, !!th.dataset.num)));

// filters
function options(id, values) {
  const sel = $(id);
  for (const v of [...new Set(values)].sort()) { const o = document.createElement("option"); o.value = o.textContent = v; sel.appendChild(o); }
}
options("f-device", DATA.map((s) => s.device));
options("f-status", DATA.map((s) => s.status));
for (const id of ["f-device", "f-test", "f-status"]) $(id).addEventListener("input", render);

// charts, drawn when scrolled into view
const charts = $("charts");
const observer = "IntersectionObserver" in window ? new IntersectionObserver((entries) => {
  for (const e of entries) if (e.isIntersecting) { draw(e.target); observer.unobserve(e.target); }
}, { rootMargin: "300px" }) : null;
for (const s of DATA) {
  const card = document.createElement("section");
  card.className = "card"; card.id = "s" + s.id; card.dataset.id = s.id;
  const h = document.createElement("h3"); h.textContent = s.label; card.appendChild(h);
  const meta = document.createElement("div"); meta.className = "meta";
  meta.textContent = s.device + " \\u00b7 " + s.cache + " \\u00b7 " + s.runs + " runs \\u00b7 latest " + fmtMs(s.latest) + " \\u00b7 " + s.status;
  card.appendChild(meta);
  const svg = el("svg", { class: "chart", role: "img", "aria-label": "trend of " + s.label });
  card.appendChild(svg);
  if (s.cp.length) {
    const ul = document.createElement("ul"); ul.className = "cps";
    for (const cp of s.cp) { const li = document.createElement("li"); li.textContent = cp.range + ": " + cp.text; li.className = cp.slow ? "pos" : "neg"; ul.appendChild(li); }
    card.appendChild(ul);
  }
  if (s.mem.length) {
    const ul = document.createElement("ul"); ul.className = "cps";
    for (const m of s.mem) { const li = document.createElement("li"); li.textContent = m.text; li.className = m.grew ? "pos" : "neg"; ul.appendChild(li); }
    card.appendChild(ul);
  }
  if (s.art.length) {
    const d = document.createElement("div"); d.className = "arts"; d.textContent = "profile artefacts: ";
    s.art.forEach(([name, href], i) => {
      if (i) d.append(", ");
      if (!safeHref(href)) { d.append(name); return; }  // shown, never followed
      const a = document.createElement("a"); a.href = href; a.textContent = name; d.appendChild(a);
    });
    card.appendChild(d);
  }
  s.card = card; s.svg = svg;
  charts.appendChild(card);
  if (observer) observer.observe(card); else draw(card);
}
const byId = new Map(DATA.map((s) => [String(s.id), s]));

function draw(card) {
  const s = byId.get(card.dataset.id);
  if (s.drawn) return;
  s.drawn = true;
  const svg = s.svg, W = svg.clientWidth || 900, H = 190, L = 64, R = 12, T = 10, B = 24;
  svg.setAttribute("viewBox", "0 0 " + W + " " + H);
  let lo = Infinity, hi = -Infinity;
  for (const rs of s.r) for (const x of rs) { if (x < lo) lo = x; if (x > hi) hi = x; }
  for (const x of s.v) { if (x < lo) lo = x; if (x > hi) hi = x; }
  const pad = (hi - lo) * 0.08 || hi * 0.01 || 1; lo -= pad; hi += pad;
  const n = s.v.length, X = (i) => L + (n > 1 ? i * (W - L - R) / (n - 1) : (W - L - R) / 2), Y = (v) => T + (hi - v) * (H - T - B) / (hi - lo);
  for (let k = 0; k <= 3; k++) {
    const v = lo + (hi - lo) * k / 3;
    el("line", { class: "grid", x1: L, x2: W - R, y1: Y(v), y2: Y(v) }, svg);
    el("text", { class: "axis", x: L - 6, y: Y(v) + 4, "text-anchor": "end" }, svg).textContent = fmtMs(v);
  }
  const ticks = Math.min(n, 6);
  for (let k = 0; k < ticks; k++) {
    const i = Math.round(k * (n - 1) / Math.max(ticks - 1, 1));
    const anchor = k === 0 && ticks > 1 ? "start" : k === ticks - 1 && ticks > 1 ? "end" : "middle";
    el("text", { class: "axis", x: X(i), y: H - 6, "text-anchor": anchor }, svg).textContent = s.c[i];
  }
  // drift spans, segment levels, change point markers
  for (const cp of s.cp) if (cp.kind === "drift" && cp.from < cp.i)
    el("rect", { class: "span", x: X(cp.from - 0.5), width: X(cp.i - 0.5) - X(cp.from - 0.5), y: T, height: H - T - B, fill: cp.slow ? "#cf222e" : "#1a7f37" }, svg);
  // levels between change points (a drift's ramp belongs to neither side)
  const segments = [];
  let start = 0;
  for (const cp of s.cp) { segments.push([start, cp.from]); start = cp.i; }
  segments.push([start, n]);
  for (const [a, b] of s.cp.length ? segments : []) {
    const seg = s.v.slice(a, b);
    if (!seg.length) continue;
    const m = seg.reduce((acc, x) => acc + x, 0) / seg.length;
    el("line", { class: "level", x1: X(a), x2: X(b - 1), y1: Y(m), y2: Y(m) }, svg);
  }
  let d = "";
  s.r.forEach((rs, i) => { for (const x of rs) d += "M" + X(i).toFixed(1) + " " + Y(x).toFixed(1) + "h0"; });
  el("path", { class: "rounds", d }, svg);
  el("polyline", { class: "trend", points: s.v.map((v, i) => X(i).toFixed(1) + "," + Y(v).toFixed(1)).join(" ") }, svg);
  for (const cp of s.cp) {
    const x = (X(cp.i - 1) + X(cp.i)) / 2;
    const g = el("g", { class: "marker" }, svg);
    el("line", { class: "cp " + (cp.slow ? "slow" : "fast"), x1: x, x2: x, y1: T, y2: H - B }, g);
    el("line", { class: "hit", x1: x, x2: x, y1: T, y2: H - B }, g);
    el("title", {}, g).textContent = cp.range + ": " + cp.text;
  }
  const cursor = el("line", { class: "cursor", y1: T, y2: H - B, visibility: "hidden" }, svg);
  svg.addEventListener("mousemove", (ev) => {
    const box = svg.getBoundingClientRect(), x = (ev.clientX - box.left) * W / box.width;
    const at = (x - L) / ((W - L - R) / Math.max(n - 1, 1));
    const i = Math.max(0, Math.min(n - 1, Math.round(at)));
    cursor.setAttribute("x1", X(i)); cursor.setAttribute("x2", X(i)); cursor.setAttribute("visibility", "visible");
    const cp = s.cp.find((c) => Math.abs(at - (c.i - 0.5)) <= 0.6);
    tip.replaceChildren();
    const lines = [s.c[i] + " \\u00b7 " + s.t[i], "mean of rounds " + fmtMs(s.v[i]) + " (" + s.r[i].length + " rounds)"];
    if (cp) lines.push(cp.text);
    for (const t of lines) { const div = document.createElement("div"); div.textContent = t; tip.appendChild(div); }
    tip.style.display = "block"; tip.style.left = (ev.clientX + 14) + "px"; tip.style.top = (ev.clientY + 12) + "px";
  });
  svg.addEventListener("mouseleave", () => { tip.style.display = "none"; cursor.setAttribute("visibility", "hidden"); });
}

function render() {
  const dev = $("f-device").value, text = $("f-test").value.toLowerCase(), st = $("f-status").value;
  const shown = DATA.filter((s) => (!dev || s.device === dev) && (!st || s.status === st) && (!text || s.label.toLowerCase().includes(text)));
  const key = sortKey, sign = sortAsc ? 1 : -1;
  shown.sort((a, b) => {
    let x = a[key], y = b[key];
    if (key === "total" || key === "last") { x = x === null ? -Infinity : Math.abs(x); y = y === null ? -Infinity : Math.abs(y); }
    return (x < y ? -1 : x > y ? 1 : 0) * sign || a.label.localeCompare(b.label);
  });
  const visible = new Set(shown);
  for (const s of DATA) { s.row.hidden = !visible.has(s); s.card.hidden = !visible.has(s); }
  for (const s of shown) { tbody.appendChild(s.row); charts.appendChild(s.card); }
  document.querySelectorAll("#overview th").forEach((th) => { th.classList.toggle("sorted", th.dataset.k === key); th.classList.toggle("asc", th.dataset.k === key && sortAsc); });
  $("count").textContent = shown.length + " of " + DATA.length + " series";
  $("none").hidden = shown.length > 0;
  document.body.dataset.ready = "1";
}
render();
</script>
</body>
</html>
"""
