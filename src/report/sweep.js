// sweep.html: throughput against users with the fitted USL curve, the linear and Amdahl bounds
// and the peak, the steps left out of the fit marked apart and, beside it, why there is no fit
// when there is none; latency percentiles against users; efficiency; latency against
// throughput; the table of steps with a link to each step's report. Users are whole numbers on
// every axis. Records its points.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("data").textContent);
  const root = document.getElementById("report");
  const { el, tsvTable } = window.MS;
  root.append(el("h1", {}, "mongo-stress sweep: " + D.profile));
  root.append(el("p", {}, D.paragraph));
  root.append(el("p", {}, "Stopped: " + D.stop_text));
  const steps = D.steps.slice().sort((a, b) => a.threads - b.threads);
  let points = 0;
  function chart(name, title, axes, series, data) {
    points += window.MS.xyChart(root, name, title, axes, series, data, 300);
  }
  // The fitted curve's points (to the largest step, or twice it when the peak is determined).
  const curve = new Map(D.fit.curve.map((p) => [p[0], p[1]]));
  const xs = D.fit.curve.map((p) => p[0]);
  steps.forEach((s) => { if (!xs.includes(s.threads)) xs.push(s.threads); });
  xs.sort((a, b) => a - b);
  const one = steps.find((s) => s.threads === 1);
  // Each step's Fit cell (`fitted`, or `left out: ` and why), as the console and sweep.tsv say it.
  const left = (s) => D.fitted[s.threads] !== "fitted";
  const at = (n, keep) => { const s = steps.find((t) => t.threads === n); return s && keep(s) ? s.throughput : null; };
  const measured = xs.map((n) => at(n, (s) => !left(s)));
  const leftOut = xs.map((n) => at(n, left));
  const usl = xs.map((n) => curve.has(n) ? curve.get(n) : null);
  // The linear bound, drawn only up to half again the most measured (it would flatten the rest).
  const most = Math.max.apply(null, steps.map((s) => s.throughput).concat([0]));
  const linear = xs.map((n) => one && one.throughput * n <= 1.5 * most ? one.throughput * n : null);
  const amdahl = xs.map(() => D.fit.amdahl_ceiling);
  // Whole users only: ticks at 1, 2, 5, 10, ... apart, never 0.5.
  const usersAxis = { label: "users per group", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] };
  chart("throughput", "throughput against users per group" + (D.fit.peak_n ? " (peak near " + D.fit.peak_n.toFixed(1) + ")" : ""),
    [usersAxis, { label: "operations/s", size: 80 }],
    [{ label: "users" },
      { label: "measured (fitted)", stroke: "#1f77b4", width: 0, points: { show: true, size: 8 } },
      { label: "left out of the fit", stroke: "#ff7f0e", width: 0, points: { show: true, size: 10, fill: "#fff" } },
      { label: "USL fit", stroke: "#d62728", width: 2, spanGaps: true, points: { show: false } },
      { label: "linear (N x X(1))", stroke: "#999", dash: [4, 4], spanGaps: true, points: { show: false } },
      { label: "Amdahl ceiling", stroke: "#2ca02c", dash: [8, 4], points: { show: false } }],
    [xs, measured, leftOut, usl, linear, amdahl]);
  if (D.fit.notes.length) {
    root.append(el("p", { class: "fit-notes", id: D.fit.parameters ? "fit-notes" : "no-fit" },
      (D.fit.parameters ? "About the fit: " : "No fit: ") + D.fit.notes.join("; ")));
  }
  const ns = steps.map((s) => s.threads);
  chart("latency", "latency against users per group", [usersAxis, { label: "ms", size: 70 }],
    [{ label: "users" }, { label: "median", stroke: "#1f77b4", points: { show: true } },
      { label: "p99", stroke: "#d62728", width: 2, points: { show: true } }],
    [ns, steps.map((s) => s.median_ms), steps.map((s) => s.p99_ms)]);
  chart("efficiency", "efficiency X(N) / (N X(1))", [usersAxis, { label: "efficiency", size: 70 }],
    [{ label: "users" }, { label: "efficiency", stroke: "#9467bd", points: { show: true } }],
    [ns, steps.map((s) => s.efficiency)]);
  const byX = steps.slice().sort((a, b) => a.throughput - b.throughput);
  // Points only: past the peak, throughput falls while latency grows, so a line would zigzag.
  chart("latency-throughput", "latency against throughput (one point per step)", [{ label: "operations/s" }, { label: "ms", size: 70 }],
    [{ label: "ops/s" }, { label: "median", stroke: "#1f77b4", width: 0, points: { show: true, size: 7 } },
      { label: "p99", stroke: "#d62728", width: 0, points: { show: true, size: 7 } }],
    [byX.map((s) => s.throughput), byX.map((s) => s.median_ms), byX.map((s) => s.p99_ms)]);
  const fit = (s) => D.fitted[s.threads] + (s.distorted ? " (" + s.distorted + ")" : "");
  const lines = ["Threads\tThroughput\tMedian\t99% Line\tError %\tLittle's N\tEfficiency\tSLO\tFit"].concat(
    steps.map((s) => [String(s.threads), s.throughput.toFixed(1), s.median_ms.toFixed(2), s.p99_ms.toFixed(2),
      s.error_pct.toFixed(2), s.littles_n.toFixed(1), s.efficiency == null ? "-" : s.efficiency.toFixed(2),
      s.slo == null ? "-" : (s.slo ? "held" : "broken"), fit(s)].join("\t")));
  root.append(tsvTable(lines.join("\n"), "sweep-table"));
  const links = el("ul", { id: "step-reports" });
  steps.forEach((s) => {
    const rel = s.dir.split("/").slice(-2).join("/");
    const li = el("li", {});
    li.append(el("a", { href: rel + "/report.html" }, s.threads + " users per group: " + rel));
    links.append(li);
  });
  root.append(el("h2", {}, "Each step's report"), links);
  document.body.dataset.points = String(points);
  document.body.dataset.charts = "4";
  document.body.dataset.ready = "1";
})();
