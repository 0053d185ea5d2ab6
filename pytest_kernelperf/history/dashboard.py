# ruff: noqa: E501  (the page template below: CSS and JS lines are kept whole)
"""`history report --html`: one self-contained page, no network: inline CSS and JS.

A header naming the repository, the branch and the dates of the runs shown; an overview table of
every series (sortable by any column, the change included; filters by device, test and status),
each with one status (`series_status`: the latest change point's direction, or the newest run's
verdict where that says slower or faster and the latest change point does not); and, per series,
a trend chart drawn by Vega-Lite (its scripts inline, from vl-convert-python: `vega.py`) in one
time unit chosen from its data: each run's rounds as dots, its mean as a line, the runs judged
slower or faster against their baselines marked, the segment levels between change points dashed,
and each change point a vertical marker whose hover text is its attribution; a linear or log time
axis. The legend lists only the marks some chart draws. Charts are drawn when scrolled into view,
so a page of hundreds of series opens quickly. Profile artefacts of the newest run are linked where
the files exist. Without vl-convert-python the page has its table and says how to get the charts.
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
from .changepoints import SeriesReport
from .status import JUDGED, series_status, where


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


def _day_time(created: str) -> str:
    """ "2026-12-04 09:30" (UTC) of a run's timestamp; the text itself when it is not one."""
    try:
        moment = datetime.fromisoformat(created)
    except ValueError:
        return created[:40]
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M")


def header_facts(
    reports: Sequence[SeriesReport], *, repository: str | None = None, branch: str | None = None
) -> dict[str, str]:
    """What the page header names: the repository (when the caller knows it; "" is the unnamed
    one), the branch (the one chosen, else those of the runs shown), the runs' count and dates."""
    points = [p for r in reports for p in r.points]
    facts: dict[str, str] = {}
    if repository is not None:
        facts["repository"] = repository or "(unnamed)"
    if branch is not None:
        facts["branch"] = branch
    else:
        named = sorted({p.branch for p in points if p.branch})
        shown = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
        if any(p.branch is None for p in points) and named:
            shown += " (some runs without one)"
        facts["branch"] = shown or "not recorded"
    runs = {p.run_id: p.created for p in points}
    facts["runs"] = str(len(runs))
    if runs:
        first, last = min(runs.values()), max(runs.values())
        facts["dates"] = f"{_day_time(first)} to {_day_time(last)} UTC"
    return facts


def series_data(report: SeriesReport, base: Path | None = None) -> dict[str, Any]:
    key = report.key
    points = report.points
    last = report.last_change
    status = series_status(report)
    return {
        "id": report.series_id,
        "test": key.test,
        "name": key.name,
        "device": key.device,
        "cache": key.cache,
        "metric": key.metric,
        "status": status.word,
        "dir": status.direction,
        "why": status.why,
        "total": round(report.total_change_pct, 3),
        "last": None if last is None else round(last.change_pct, 3),
        "lastAt": None if last is None else where(last.commit, last.run_id),
        "latest": significant(report.latest.level_ms),
        "verdict": report.latest.verdict or "",
        "v": [significant(p.value) for p in points],
        "r": [[significant(x, 5) for x in p.rounds()] for p in points],
        "c": [where(p.commit, p.run_id) for p in points],
        "t": [p.created for p in points],
        # the runs judged slower or faster against their baselines (marked on the chart)
        "jv": [[i, p.verdict] for i, p in enumerate(points) if p.verdict in JUDGED],
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


def _facts_html(facts: dict[str, str]) -> str:
    """The header's line: repository, branch, dates and the number of runs, each in its own span."""
    texts = {
        "repository": ("repository", facts.get("repository")),
        "branch": ("branch", facts.get("branch")),
        "dates": ("dates", facts.get("dates")),
        "runs": ("", f"{facts['runs']} runs"),
    }
    parts = []
    for key, (label, text) in texts.items():
        if text is None:
            continue
        name = f'<span class="fk">{label}</span> ' if label else ""
        parts.append(f'<span class="fact" id="h-{key}">{name}{html.escape(text)}</span>')
    return "\n".join(parts)


def render(
    reports: Sequence[SeriesReport],
    *,
    title: str = "kernelperf history",
    base: Path | None = None,
    repository: str | None = None,
    branch: str | None = None,
) -> str:
    """The page of `reports`. Its header names `repository` (the store's: None leaves it out),
    `branch` (the one the runs were chosen by, else those of the runs) and the runs' dates."""
    data = [series_data(r, base) for r in reports]
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    # Inside <script>, markup in test ids must stay text: < > & are only ever inside JSON strings.
    payload = (
        json.dumps(data, separators=(",", ":"), allow_nan=False)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
    )
    facts = header_facts(reports, repository=repository, branch=branch)
    summary = f"{len(reports)} series, generated {generated}"
    # The library first: nothing in it is a placeholder, and nothing from the data reaches it.
    charts = vega.bundle() or f"window.VEGA_MISSING = {json.dumps(vega.INSTALL_HINT)};"
    return (
        _TEMPLATE.replace("__VEGA_SCRIPT__", charts)
        .replace("__TITLE__", html.escape(title))
        .replace("__FACTS__", _facts_html(facts))
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
.facts { font-size: 13px; margin: 2px 0; display: flex; flex-wrap: wrap; gap: 4px 18px; }
.facts .fk { color: var(--muted); }
.key { color: var(--muted); font-size: 12px; margin: 6px 0 0; max-width: 1000px; }
main { padding: 14px 28px 40px; max-width: 1240px; }
.filters { display: flex; gap: 14px; align-items: center; flex-wrap: wrap; margin: 6px 0 12px; }
.filters label { color: var(--muted); font-size: 13px; }
.filters input, .filters select { font: inherit; padding: 4px 8px; border: 1px solid var(--line); border-radius: 6px; }
.filters input[type=search] { width: 240px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: var(--bg); cursor: pointer; user-select: none; position: sticky; top: 0; white-space: normal; vertical-align: bottom; }
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
.badge.judged { border-style: dashed; background: #fff; }
.pos { color: var(--slow); } .neg { color: var(--fast); } .muted { color: var(--muted); }
h2 { font-size: 16px; margin: 26px 0 8px; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px 8px; margin: 12px 0; }
.card h3 { font-size: 14px; margin: 0; font-weight: 600; word-break: break-all; }
.card .meta { color: var(--muted); font-size: 12px; margin: 2px 0 4px; }
.card .why { font-size: 12px; margin: 0 0 4px; }
.card .why .badge { margin-right: 6px; }
.chart { width: 100%; height: 190px; display: block; }
.chart .missing { color: var(--muted); font-size: 12px; padding: 8px 0; }
.cps { margin: 4px 0 0; padding-left: 18px; font-size: 12px; color: var(--fg); }
.cps li { margin: 1px 0; }
.arts { font-size: 12px; margin-top: 4px; }
#tip { position: fixed; pointer-events: none; background: #fff; border: 1px solid var(--line); border-radius: 6px;
       padding: 6px 8px; font-size: 12px; box-shadow: 0 3px 12px rgba(0,0,0,.12); display: none; max-width: 420px; }
.legend { font-size: 12px; color: var(--fg); display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 0 0 6px; }
.legend .hint { color: var(--muted); }
.legend .k { display: inline-block; width: 18px; height: 0; margin: 0 5px 3px 0; vertical-align: middle; border-top: 2px solid var(--blue); }
.legend .dot { width: 6px; height: 6px; border: 0; border-radius: 3px; background: #8c959f; }
.legend .dash { border-top: 1px dashed var(--fg); }
.legend .cp-slower, .legend .cp-faster { width: 0; height: 12px; border-top: 0; border-left: 2px solid var(--slow); margin: 0 8px 0 8px; }
.legend .cp-faster { border-left-color: var(--fast); }
.legend .drift-slower, .legend .drift-faster { width: 14px; height: 12px; border: 0; background: rgba(207,34,46,.15); }
.legend .drift-faster { background: rgba(26,127,55,.15); }
.legend .judged-slower, .legend .judged-faster { width: 0; height: 0; border-top: 0; margin: 0 9px 3px 5px;
  border-left: 5px solid transparent; border-right: 5px solid transparent; border-bottom: 9px solid var(--slow); }
.legend .judged-faster { border-bottom: 0; border-top: 9px solid var(--fast); }
.empty { color: var(--muted); padding: 10px 0; }
</style>
</head>
<body>
<header><h1>__TITLE__</h1>
<div class="facts" id="facts">__FACTS__</div>
<div class="sub" id="summary">__SUMMARY__</div></header>
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
<th data-k="total" data-num="1" title="the newest run's mean of rounds against the first run's in this history">change since first run</th>
<th data-k="last" data-num="1" title="the level change at the latest change point the history shows">last change point</th>
<th data-k="status">status</th><th data-k="verdict" title="the newest run's own verdict, against its baseline (committed, or the revision it was paired with)">newest run's verdict</th>
</tr></thead>
<tbody></tbody>
</table>
<p class="key" id="status-key"><strong>status</strong>: the direction of the latest change point in the history (slower, faster, drift slower, drift faster);
<strong>judged slower</strong> or <strong>judged faster</strong> when the newest run was judged so against its baseline and no change point says so (yet: a change point needs runs after it);
<strong>steady</strong> with neither. A change is coloured when its status says the same.</p>
<div class="empty" id="none" hidden>No series match the filters.</div>
<h2>Trends</h2>
<div class="legend" id="legend"></div>
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
// A change is coloured when the series' status has its direction; else it is within what the
// history and the verdict call noise.
function changeClass(s) {
  return s.total > 0 && s.dir === "slower" ? "pos" : s.total < 0 && s.dir === "faster" ? "neg" : "muted";
}
function badge(s) {
  const b = document.createElement("span");
  b.className = "badge b-" + (s.dir || "steady") + (s.status.startsWith("judged") ? " judged" : "");
  b.textContent = s.status; b.title = s.why;
  return b;
}

// overview table
const tbody = document.querySelector("#overview tbody");
for (const s of DATA) {
  const tr = document.createElement("tr");
  tr.dataset.id = s.id;
  // Data only ever reaches the page as text (textContent, attribute values), never as markup.
  const cells = [
    ["test", ""], ["", s.device], ["", s.cache], ["num", String(s.runs)],
    ["num", fmtMs(s.latest)], ["num " + changeClass(s), fmtPct(s.total)],
    ["num " + (s.last === null ? "" : s.last > 0 ? "pos" : "neg"), s.last === null ? "" : fmtPct(s.last) + " at " + s.lastAt],
    ["", ""], ["", s.verdict],
  ];
  for (const [c, t] of cells) { const td = document.createElement("td"); td.className = c; td.textContent = t; tr.appendChild(td); }
  const link = document.createElement("a"); link.href = "#s" + s.id; link.textContent = s.label;
  tr.cells[0].appendChild(link); tr.cells[0].title = s.label;
  tr.cells[7].appendChild(badge(s));
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
  meta.textContent = s.device + " \\u00b7 " + s.cache + " \\u00b7 " + s.runs + " runs \\u00b7 latest " + fmtMs(s.latest);
  card.appendChild(meta);
  const why = document.createElement("div"); why.className = "why";
  why.append(badge(s), s.why);
  card.appendChild(why);
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
// One unit per chart, chosen from its data: every tick of an axis in it (no "0 \\u00b5s" among "ms").
function unitOf(s) {
  let top = 0;
  for (const rs of s.r) for (const x of rs) top = Math.max(top, x);
  for (const v of s.v) top = Math.max(top, v);
  return top < 1 ? [1000, "\\u00b5s"] : top >= 1000 ? [0.001, "s"] : [1, "ms"];
}
const SLOW = "#cf222e", FAST = "#1a7f37";
// What each mark of a chart is, for the legend: only marks some chart of the page draws are listed.
const MARKS = [
  ["rounds", "dot", "a round of a run"],
  ["trend", "line", "a run's level (the figure its verdict judged)"],
  ["levels", "dash", "level between change points"],
  ["cp-slower", "cp-slower", "change point, slower"],
  ["cp-faster", "cp-faster", "change point, faster"],
  ["drift-slower", "drift-slower", "drift, slower (the runs it spans)"],
  ["drift-faster", "drift-faster", "drift, faster (the runs it spans)"],
  ["judged-slower", "judged-slower", "run judged slower against its baseline"],
  ["judged-faster", "judged-faster", "run judged faster against its baseline"],
];
// The chart of a series: its Vega-Lite spec and the legend keys of the marks it draws.
function chartOf(s) {
  const n = s.v.length;
  const [f, unit] = unitOf(s);
  const runs = s.v.map((v, i) => ({ i, v: v * f }));
  const rounds = [];
  s.r.forEach((rs, i) => { for (const x of rs) rounds.push({ i, v: x * f }); });
  // levels between change points (a drift's ramp belongs to neither side)
  const levels = [];
  if (s.cp.length) {
    let start = 0;
    const bounds = [];
    for (const cp of s.cp) { bounds.push([start, cp.from]); start = cp.i; }
    bounds.push([start, n]);
    for (const [a, b] of bounds) {
      const seg = s.v.slice(a, b);
      if (seg.length) levels.push({ a, b: b - 1, v: f * seg.reduce((acc, x) => acc + x, 0) / seg.length });
    }
  }
  const marks = s.cp.map((cp) => ({ x: cp.i - 0.5, from: cp.from - 0.5, drift: cp.kind === "drift" && cp.from < cp.i, slow: cp.slow, color: cp.slow ? SLOW : FAST, text: cp.range + ": " + cp.text }));
  const judged = s.jv.filter(([i]) => i >= 0 && i < n).map(([i, verdict]) => ({
    i, v: s.v[i] * f, slow: verdict === "slower", color: verdict === "slower" ? SLOW : FAST,
    shape: verdict === "slower" ? "triangle-up" : "triangle-down",
    text: s.c[i] + " \\u00b7 " + s.t[i] + ": judged " + verdict + " against its baseline (the run's verdict)" }));
  const keys = new Set();
  if (rounds.length) keys.add("rounds");
  if (runs.length) keys.add("trend");
  if (levels.length) keys.add("levels");
  for (const m of marks) { keys.add("cp-" + (m.slow ? "slower" : "faster")); if (m.drift) keys.add("drift-" + (m.slow ? "slower" : "faster")); }
  for (const j of judged) keys.add("judged-" + (j.slow ? "slower" : "faster"));
  const step = Math.max(1, Math.ceil(n / 6));
  const ticks = [];
  for (let i = 0; i < n; i += step) ticks.push(i);
  const x = { field: "i", type: "quantitative", title: null, scale: { domain: [-0.5, n - 0.5], nice: false, zero: false },
              axis: { values: ticks, labelExpr: "commits[datum.value]", grid: false, labelOverlap: true } };
  const y = { field: "v", type: "quantitative", title: null, scale: { type: LOG ? "log" : "linear", zero: false, nice: !LOG },
              axis: { labelExpr: "format(datum.value, '.4~r') + ' " + unit + "'", tickCount: 4, gridColor: "#eaeef2" } };
  const layer = [
    { name: "spans", data: { values: marks.filter((m) => m.drift) }, mark: { type: "rect", opacity: 0.12 },
      encoding: { x: { field: "from", type: "quantitative" }, x2: { field: "x" }, color: { field: "color", type: "nominal", scale: null } } },
    { name: "levels", data: { values: levels }, mark: { type: "rule", strokeDash: [4, 3], opacity: 0.6, color: "#1f2328" },
      encoding: { x: { field: "a", type: "quantitative" }, x2: { field: "b" }, y } },
    { name: "rounds", data: { values: rounds }, mark: { type: "circle", size: 16, opacity: 0.55, color: "#8c959f" }, encoding: { x, y } },
    { name: "trend", data: { values: runs }, mark: { type: "line", color: "#0969da", strokeWidth: 1.6 }, encoding: { x, y } },
    { name: "judged", data: { values: judged }, mark: { type: "point", filled: true, size: 42, opacity: 0.9 },
      encoding: { x, y, color: { field: "color", type: "nominal", scale: null }, shape: { field: "shape", type: "nominal", scale: null } } },
    { name: "markers", data: { values: marks }, mark: { type: "rule", strokeWidth: 2 },
      encoding: { x: { field: "x", type: "quantitative" }, color: { field: "color", type: "nominal", scale: null } } },
  ];
  const spec = { width: "container", height: 170,
           autosize: { type: "fit", contains: "padding" }, params: [{ name: "commits", value: s.c }],
           config: { view: { stroke: null }, axis: { labelColor: "#656d76", labelFontSize: 11, domainColor: "#d0d7de", tickColor: "#d0d7de" } },
           layer: layer.filter((l) => l.data.values.length) };
  return { spec, keys, unit };
}
// the legend: the marks that some chart of this page draws, each with what it is
const drawnMarks = new Set();
for (const s of DATA) for (const k of chartOf(s).keys) drawnMarks.add(k);
for (const [key, swatch, text] of MARKS) {
  if (!drawnMarks.has(key)) continue;
  const entry = document.createElement("span"); entry.className = "entry"; entry.dataset.mark = key;
  const k = document.createElement("span"); k.className = "k " + swatch;
  entry.append(k, text);
  $("legend").appendChild(entry);
}
if (drawnMarks.size) { const h = document.createElement("span"); h.className = "hint"; h.textContent = "(hover a mark for details)"; $("legend").appendChild(h); }
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
  vegaEmbed(s.chart, chartOf(s).spec, { mode: "vega-lite", actions: false, renderer: "svg", tooltip: false }).then((result) => {
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
