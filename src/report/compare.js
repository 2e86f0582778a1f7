// compare.html: both runs on shared axes (seconds since each run's first interval), per group:
// throughput and p99 per interval, the base dashed. Records each chart's points, like report.js.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("data").textContent);
  const root = document.getElementById("report");
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => e.setAttribute(k, v));
    kids.forEach((k) => e.append(k));
    return e;
  };
  root.append(el("h1", {}, "mongo-stress compare"));
  root.append(el("p", {}, "base: " + D.base_name), el("p", {}, "new: " + D.new_name));
  const rows = D.table_tsv.trim().split("\n").map((l) => l.split("\t"));
  const table = el("table", { class: "tsv", id: "compare-table" });
  const head = el("tr");
  rows[0].forEach((c) => head.append(el("th", {}, c)));
  table.append(el("thead", {}, head));
  const body = el("tbody");
  rows.slice(1).forEach((r) => {
    const tr = el("tr");
    r.forEach((c, i) => tr.append(el("td", { class: i < 2 || i === 5 ? "text" : "num" }, c)));
    body.append(tr);
  });
  table.append(body);
  root.append(el("div", { class: "scroll" }, table));
  const width = Math.max(600, Math.min(1200, document.documentElement.clientWidth - 48));
  let drawn = 0;
  D.groups.forEach((g, gi) => {
    const c = PALETTE[gi % PALETTE.length];
    [["rate", "operations per second"], ["p99", "p99 latency, ms"]].forEach(([col, what]) => {
      const tables = [], series = [];
      [["base", [6, 4]], ["new", undefined]].forEach(([side, dash]) => {
        const s = D[side][g.tag];
        if (!s) return;
        tables.push([s.t, s[col]]);
        series.push({ label: side, stroke: c, dash: dash, width: side === "new" ? 2 : 1.5 });
      });
      const box = el("div", { class: "chart", "data-chart": col + ":" + g.tag });
      root.append(box);
      if (!tables.length) { box.dataset.points = "0"; return; }
      const data = uPlot.join(tables);
      let points = 0;
      data.slice(1).forEach((ys) => ys.forEach((y) => { if (y != null) points += 1; }));
      new uPlot({
        title: g.name + ": " + what,
        width: width,
        height: 220,
        scales: { x: { time: false } },
        axes: [{ label: "seconds since the run's start" }, { size: 70 }],
        series: [{ label: "s" }].concat(series),
      }, data, box);
      box.dataset.points = String(points);
      drawn += 1;
    });
  });
  document.body.dataset.charts = String(drawn);
  document.body.dataset.ready = "1";
})();
