// What every page of the tool draws with (report, compare, capacity, sweep): element building, a
// table from TSV text in a box that scrolls, the chart width, a chart against a numeric x axis,
// and the colours of the series.
window.MS = (function () {
  "use strict";
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => {
      if (k === "class") e.className = v; else e.setAttribute(k, v);
    });
    children.forEach((c) => e.append(c));
    return e;
  }

  // The first column and every cell that is not a number are text (left-aligned).
  function tsvTable(text, id) {
    const rows = text.trim().split("\n").map((l) => l.split("\t"));
    const table = el("table", { id: id, class: "tsv" });
    const head = el("tr");
    rows[0].forEach((c) => head.append(el("th", {}, c)));
    table.append(el("thead", {}, head));
    const body = el("tbody");
    rows.slice(1).forEach((r) => {
      const tr = el("tr");
      r.forEach((c, i) => tr.append(el("td", { class: i === 0 || isNaN(parseFloat(c)) ? "text" : "num" }, c)));
      body.append(tr);
    });
    table.append(body);
    // A wide table scrolls inside its box; the page keeps its width.
    return el("div", { class: "scroll" }, table);
  }

  // A uPlot chart of `data` ([xs, ...series]) against a numeric x axis, appended to `root`; its
  // box records the points drawn (`data-points`), and the count is returned.
  function xyChart(root, name, title, axes, series, data, height) {
    const box = el("div", { class: "chart", "data-chart": name });
    root.append(box);
    new uPlot({ title: title, width: width(), height: height, scales: { x: { time: false } }, axes: axes, series: series }, data, box);
    const n = data.slice(1).reduce((sum, s) => sum + s.filter((v) => v != null).length, 0);
    box.dataset.points = String(n);
    return n;
  }

  const width = () => Math.max(600, Math.min(1200, document.documentElement.clientWidth - 48));
  const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
  return { el: el, tsvTable: tsvTable, width: width, xyChart: xyChart, PALETTE: PALETTE };
})();
