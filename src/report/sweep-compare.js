// compare of two sweeps: both sweeps' measured throughput and fitted USL curves against users on
// one chart, both p99s against users, and the comparison's table. Records its points.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("data").textContent);
  const root = document.getElementById("report");
  const { el, tsvTable } = window.MS;
  root.append(el("h1", {}, "mongo-stress sweeps compared: " + D.new.profile));
  root.append(el("p", {}, "base: " + D.base_name), el("p", {}, "new: " + D.new_name));
  let points = 0;
  function chart(name, title, axes, series, data) {
    points += window.MS.xyChart(root, name, title, axes, series, data, 320);
  }
  const sides = [D.base, D.new];
  const xs = [];
  sides.forEach((s) => {
    s.fit.curve.forEach((p) => xs.push(p[0]));
    s.steps.forEach((t) => xs.push(t.threads));
  });
  const ns = Array.from(new Set(xs)).sort((a, b) => a - b);
  const at = (side, n, f) => { const t = side.steps.find((s) => s.threads === n); return t ? f(t) : null; };
  const curve = (side) => { const m = new Map(side.fit.curve.map((p) => [p[0], p[1]])); return ns.map((n) => m.has(n) ? m.get(n) : null); };
  const peak = (side) => side.fit.peak_n ? " peak near " + side.fit.peak_n.toFixed(1) : " no peak";
  chart("throughput", "throughput against users per group (base:" + peak(D.base) + "; new:" + peak(D.new) + ")",
    [{ label: "users per group" }, { label: "operations/s", size: 80 }],
    [{ label: "users" },
      { label: "base measured", stroke: "#1f77b4", width: 0, points: { show: true, size: 8 } },
      { label: "base USL fit", stroke: "#1f77b4", width: 2, spanGaps: true, points: { show: false } },
      { label: "new measured", stroke: "#d62728", width: 0, points: { show: true, size: 8 } },
      { label: "new USL fit", stroke: "#d62728", width: 2, spanGaps: true, points: { show: false } }],
    [ns, ns.map((n) => at(D.base, n, (s) => s.throughput)), curve(D.base), ns.map((n) => at(D.new, n, (s) => s.throughput)), curve(D.new)]);
  const users = Array.from(new Set(sides.flatMap((s) => s.steps.map((t) => t.threads)))).sort((a, b) => a - b);
  chart("latency", "p99 against users per group", [{ label: "users per group" }, { label: "ms", size: 70 }],
    [{ label: "users" },
      { label: "base p99", stroke: "#1f77b4", spanGaps: true, points: { show: true } },
      { label: "new p99", stroke: "#d62728", spanGaps: true, points: { show: true } }],
    [users, users.map((n) => at(D.base, n, (s) => s.p99_ms)), users.map((n) => at(D.new, n, (s) => s.p99_ms))]);
  root.append(el("h2", {}, "Parameters and steps"), tsvTable(D.table_tsv, "compare-table"));
  if (D.notes.length) {
    const ul = el("ul", { id: "notes" });
    D.notes.forEach((n) => ul.append(el("li", {}, n)));
    root.append(ul);
  }
  document.body.dataset.points = String(points);
  document.body.dataset.charts = "2";
  document.body.dataset.ready = "1";
})();
