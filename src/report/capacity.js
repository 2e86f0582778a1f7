// capacity.html: latency against achieved throughput, one point per step of the search (sorted
// by the rate offered), the SLO's steps marked, and the table of steps. Records its points.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("data").textContent);
  const root = document.getElementById("report");
  const { el, tsvTable } = window.MS;
  root.append(el("h1", {}, "mongo-stress capacity: " + D.profile));
  root.append(el("p", {}, "SLO: " + D.slo.join(", ") + "; " + (D.knee == null
    ? "no rate held it"
    : "the knee: " + D.knee.toFixed(1) + " operations/s offered, the highest rate that held")));
  const steps = D.steps.slice().sort((a, b) => a.offered - b.offered);
  const box = el("div", { class: "chart", "data-chart": "capacity" });
  root.append(box);
  const width = window.MS.width();
  new uPlot({
    title: "latency against achieved throughput (one point per step)",
    width: width,
    height: 320,
    scales: { x: { time: false } },
    axes: [{ label: "achieved operations per second" }, { label: "ms", size: 70 }],
    series: [
      { label: "ops/s" },
      { label: "p50", stroke: "#1f77b4", points: { show: true, size: 7 } },
      { label: "p99", stroke: "#d62728", width: 2, points: { show: true, size: 7 } },
    ],
  }, (() => {
    // uPlot wants ascending x: the points by achieved throughput (past the knee it can fall).
    const byX = steps.slice().sort((a, b) => a.achieved - b.achieved);
    return [byX.map((s) => s.achieved), byX.map((s) => s.p50_ms), byX.map((s) => s.p99_ms)];
  })(), box);
  box.dataset.points = String(steps.length * 2);
  const lines = ["Offered/s\tAchieved/s\tp50 ms\tp99 ms\tError %\tServer CPU %\tLate\tHeld\tWhy not"].concat(
    steps.map((s) => [s.offered.toFixed(1), s.achieved.toFixed(1), s.p50_ms.toFixed(2), s.p99_ms.toFixed(2),
      s.error_pct.toFixed(2), s.server_cpu_pct == null ? "-" : s.server_cpu_pct.toFixed(0), String(s.late),
      s.held ? "yes" : "no", s.why.join("; ")].join("\t")));
  root.append(tsvTable(lines.join("\n"), "capacity-table"));
  document.body.dataset.charts = "1";
  document.body.dataset.ready = "1";
})();
