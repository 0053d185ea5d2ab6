# ruff: noqa: E501  (the page template below: CSS and JS lines are kept whole)
"""`history report --html`: one self-contained page, no network: inline CSS and JS.

An overview table of every series (sortable by any column, the change included; filters by device,
test and status) and, per series, a trend chart drawn by Vega-Lite (its scripts inline, from
vl-convert-python: `vega.py`): each run's rounds as dots, its mean as a line, the segment levels
between change points dashed, and each change point a vertical marker whose hover text is its
attribution; a linear or log time axis. Charts are drawn when scrolled into view, so a page of
hundreds of series opens quickly. Profile artefacts of the newest run are linked where the files
exist. Without vl-convert-python the page has its table and says how to get the charts.
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

from . import vega
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
    # The library first: nothing in it is a placeholder, and nothing from the data reaches it.
    charts = vega.bundle() or f"window.VEGA_MISSING = {json.dumps(vega.INSTALL_HINT)};"
    return (
        _TEMPLATE.replace("__VEGA_SCRIPT__", charts)
        .replace("__TITLE__", html.escape(title))
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
.filters input[type=search] { width: 240px; }
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
.chart .missing { color: var(--muted); font-size: 12px; padding: 8px 0; }
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
  <label><input id="f-log" type="checkbox"> log time axis</label>
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
<script>__VEGA_SCRIPT__</script>
<script>
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const $ = (id) => document.getElementById(id);
const tip = $("tip");
function fmtMs(ms) { return ms < 1 ? (ms * 1000).toPrecision(4) + " \\u00b5s" : ms.toPrecision(4) + " ms"; }
function fmtPct(p) { return p === null ? "" : (p > 0 ? "+" : "") + p.toFixed(1) + "%"; }
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
  const chart = document.createElement("div");
  chart.className = "chart"; chart.setAttribute("role", "img"); chart.setAttribute("aria-label", "trend of " + s.label);
  card.appendChild(chart);
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
  s.card = card; s.chart = chart;
  charts.appendChild(card);
  if (observer) observer.observe(card); else draw(card);
}
const byId = new Map(DATA.map((s) => [String(s.id), s]));

// Each chart is a Vega-Lite spec of its series; the data reach it as values, never as markup.
let LOG = false;
const Y_LABEL = "datum.value < 1 ? format(datum.value * 1000, '.4~r') + ' \\u00b5s' : format(datum.value, '.4~r') + ' ms'";
function spec(s) {
  const n = s.v.length;
  const runs = s.v.map((v, i) => ({ i, v }));
  const rounds = [];
  s.r.forEach((rs, i) => { for (const x of rs) rounds.push({ i, v: x }); });
  // levels between change points (a drift's ramp belongs to neither side)
  const levels = [];
  if (s.cp.length) {
    let start = 0;
    const bounds = [];
    for (const cp of s.cp) { bounds.push([start, cp.from]); start = cp.i; }
    bounds.push([start, n]);
    for (const [a, b] of bounds) {
      const seg = s.v.slice(a, b);
      if (seg.length) levels.push({ a, b: b - 1, v: seg.reduce((acc, x) => acc + x, 0) / seg.length });
    }
  }
  const marks = s.cp.map((cp) => ({ x: cp.i - 0.5, from: cp.from - 0.5, drift: cp.kind === "drift" && cp.from < cp.i, color: cp.slow ? "#cf222e" : "#1a7f37", text: cp.range + ": " + cp.text }));
  const step = Math.max(1, Math.ceil(n / 6));
  const ticks = [];
  for (let i = 0; i < n; i += step) ticks.push(i);
  const x = { field: "i", type: "quantitative", title: null, scale: { domain: [-0.5, n - 0.5], nice: false, zero: false },
              axis: { values: ticks, labelExpr: "commits[datum.value]", grid: false, labelOverlap: true } };
  const y = { field: "v", type: "quantitative", title: null, scale: { type: LOG ? "log" : "linear", zero: false, nice: !LOG },
              axis: { labelExpr: Y_LABEL, tickCount: 4, gridColor: "#eaeef2" } };
  const layer = [
    { name: "spans", data: { values: marks.filter((m) => m.drift) }, mark: { type: "rect", opacity: 0.12 },
      encoding: { x: { field: "from", type: "quantitative" }, x2: { field: "x" }, color: { field: "color", type: "nominal", scale: null } } },
    { name: "levels", data: { values: levels }, mark: { type: "rule", strokeDash: [4, 3], opacity: 0.6, color: "#1f2328" },
      encoding: { x: { field: "a", type: "quantitative" }, x2: { field: "b" }, y } },
    { name: "rounds", data: { values: rounds }, mark: { type: "circle", size: 16, opacity: 0.55, color: "#8c959f" }, encoding: { x, y } },
    { name: "trend", data: { values: runs }, mark: { type: "line", color: "#0969da", strokeWidth: 1.6 }, encoding: { x, y } },
    { name: "markers", data: { values: marks }, mark: { type: "rule", strokeWidth: 2 },
      encoding: { x: { field: "x", type: "quantitative" }, color: { field: "color", type: "nominal", scale: null } } },
  ];
  return { width: "container", height: 170,
           autosize: { type: "fit", contains: "padding" }, params: [{ name: "commits", value: s.c }],
           config: { view: { stroke: null }, axis: { labelColor: "#656d76", labelFontSize: 11, domainColor: "#d0d7de", tickColor: "#d0d7de" } },
           layer: layer.filter((l) => l.data.values.length) };
}
function showTip(ev, lines) {
  tip.replaceChildren();
  for (const t of lines) { const div = document.createElement("div"); div.textContent = t; tip.appendChild(div); }
  tip.style.display = "block"; tip.style.left = (ev.clientX + 14) + "px"; tip.style.top = (ev.clientY + 12) + "px";
}
function draw(card) {
  const s = byId.get(card.dataset.id);
  if (s.drawn) return;
  s.drawn = true;
  if (typeof vegaEmbed !== "function") {
    const note = document.createElement("div"); note.className = "missing"; note.textContent = window.VEGA_MISSING || "no chart library";
    s.chart.replaceChildren(note); s.chart.style.height = "auto";
    return;
  }
  // actions off: no export menu, no link to an online editor; tooltips are this page's own (text only)
  vegaEmbed(s.chart, spec(s), { mode: "vega-lite", actions: false, renderer: "svg", tooltip: false }).then((result) => {
    s.view = result.view;
    result.view.addEventListener("mousemove", (ev, item) => {
      const d = item && item.datum;
      if (!d) { tip.style.display = "none"; return; }
      if (typeof d.text === "string") { showTip(ev, [d.text]); return; }
      if (typeof d.i === "number" && d.i >= 0 && d.i < s.v.length) {
        showTip(ev, [s.c[d.i] + " \u00b7 " + s.t[d.i], "mean of rounds " + fmtMs(s.v[d.i]) + " (" + s.r[d.i].length + " rounds)"]);
      } else tip.style.display = "none";
    });
    result.view.addEventListener("mouseout", () => { tip.style.display = "none"; });
    s.chart.dataset.drawn = "1";
  }).catch((err) => { const note = document.createElement("div"); note.className = "missing"; note.textContent = String(err); s.chart.replaceChildren(note); });
}
$("f-log").addEventListener("change", () => {
  LOG = $("f-log").checked;
  for (const s of DATA) if (s.drawn) { if (s.view) s.view.finalize(); s.view = null; s.drawn = false; delete s.chart.dataset.drawn; draw(s.card); }
});

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
