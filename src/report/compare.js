// compare.html: both runs on shared axes (seconds since each run's first interval), per group:
// throughput and p99 per interval, the base dashed. Records each chart's points, like report.js.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("data").textContent);
  const root = document.getElementById("report");
  const { el, tsvTable, PALETTE } = window.MS;
  root.append(el("h1", {}, "mongo-stress compare"));
  root.append(el("p", {}, "base: " + D.base_name), el("p", {}, "new: " + D.new_name));
  root.append(tsvTable(D.table_tsv, "compare-table"));
  const width = window.MS.width();
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
