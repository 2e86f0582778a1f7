// The report's drawing: window.MS.report(D, root, view) builds the whole report into `root` from
// D (the JSON object html.rs data() writes into report.html's #data), with uPlot. Every chart
// records the points it drew in data-points (the browser test reads them). report.html calls it
// once below and then says data-ready="1" on the body; the live page (live.js) calls it again
// as each interval closes, into a fresh element that replaces the old one.
(function () {
  "use strict";
  const { el, tsvTable, width, PALETTE } = window.MS;
  // The charts of the report last drawn (one report at a time on a page): a resize redraws them,
  // and the next report lets their plots go.
  let current = [];
  window.addEventListener("resize", () => current.forEach((c) => c.make()));

  // `view`: what the reader chose, kept by the caller between redraws: view.log (the logarithmic
  // latency axis) and view.zoom (each chart's x range zoomed into, by its data-chart name).
  // Returns { charts: how many charts were drawn }.
  function report(D, root, view) {
    view = view || {};
    view.zoom = view.zoom || {};
    const colour = {};
    D.groups.forEach((g, i) => { colour[g.tag] = PALETTE[i % PALETTE.length]; });
    colour.TOTAL = "#000000";
    const labelOf = {};
    D.groups.forEach((g) => { labelOf[g.tag] = g.name; });
    labelOf.TOTAL = "TOTAL";

    // Vertical lines at stage boundaries and warm-up ends, on every time chart.
    const marks = [];
    // A run of one stage: its mark is where the load began (its label would be TOTAL).
    D.runs.forEach((r) => r.stages.forEach((s) => {
      const name = r.stages.length > 1 ? s.label : "load begins";
      if (s.began != null) marks.push({ x: s.began, label: (D.runs.length > 1 ? "run " + r.run + " " : "") + name, dash: [] });
      if (s.start != null && s.began != null && s.start > s.began + 0.001) marks.push({ x: s.start, label: "warm-up ends", dash: [4, 4] });
      if (s.end != null) marks.push({ x: s.end, label: "", dash: [2, 2] });
    }));
    // Rate steps: where each step's counted operations began.
    D.runs.forEach((r) => (r.steps || []).forEach((s) => {
      if (s.at != null) marks.push({ x: s.at, label: s.label, dash: [1, 3] });
    }));
    // Changes made during the run (a group's rate or users, from the live page or the terminal).
    D.runs.forEach((r) => (r.changes || []).forEach((c) => {
      if (c.at != null) marks.push({ x: c.at, label: c.label, dash: [6, 2] });
    }));
    // The topology's events (runs[].topology; none on the live page): a primary change a solid
    // red line and a chunk migration a solid purple one, both thick with bold labels; a member's
    // state change, added or removed a thin dashed red line, in the faults' red.
    const TOPOLOGY = {
      primary_change: { dash: [], colour: "#b22222", width: 2, bold: true },
      migration: { dash: [], colour: "#6a3d9a", width: 2, bold: true },
    };
    D.runs.forEach((r) => (r.topology || []).forEach((e) => {
      if (e.at == null) return;
      const style = TOPOLOGY[e.kind] || { dash: [3, 3], colour: "#b22222", width: 1, bold: false };
      marks.push(Object.assign({ x: e.at, label: (D.runs.length > 1 ? "run " + r.run + " " : "") + e.label, topology: e.kind }, style));
    }));
    // Faults: a shaded band from when each was done to when it was over.
    const bands = [];
    D.runs.forEach((r) => (r.faults || []).forEach((f) => {
      bands.push({ from: f.from, to: f.to, label: (D.runs.length > 1 ? "run " + r.run + " " : "") + f.label });
    }));
    function markPlugin() {
      return {
        hooks: {
          draw: [(u) => {
            const ctx = u.ctx;
            ctx.save();
            // Labels start at their line (uPlot leaves the context aligned as its last axis was).
            ctx.textAlign = "left";
            ctx.textBaseline = "alphabetic";
            let drawnBands = 0;
            bands.forEach((b) => {
              const x0 = Math.max(u.valToPos(b.from, "x", true), u.bbox.left);
              const x1 = Math.min(u.valToPos(Math.max(b.to, b.from + 0.05), "x", true), u.bbox.left + u.bbox.width);
              if (x1 <= x0) return;
              drawnBands += 1;
              ctx.fillStyle = "rgba(214, 39, 40, 0.15)";
              ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
              ctx.fillStyle = "#b22222";
              ctx.font = Math.round(10 * devicePixelRatio) + "px sans-serif";
              ctx.fillText(b.label, x0 + 3 * devicePixelRatio, u.bbox.top + u.bbox.height - 6 * devicePixelRatio);
            });
            // The browser test reads how many fault bands each chart drew.
            if (u.root.parentElement) u.root.parentElement.dataset.bands = String(drawnBands);
            // A mark of no width of its own is drawn as wide as uPlot left the context.
            const lineWidth = ctx.lineWidth;
            const font = (bold) => (bold ? "bold " : "") + Math.round(10 * devicePixelRatio) + "px sans-serif";
            // A label that would run into the one before it goes a line lower (up to 4 lines).
            const ends = [];
            let drawnTopology = 0;
            marks.slice().sort((a, b) => a.x - b.x).forEach((m) => {
              const x = u.valToPos(m.x, "x", true);
              if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
              if (m.topology) drawnTopology += 1;
              // Grey unless the mark has a colour of its own (the topology's events).
              ctx.strokeStyle = m.colour || "#888";
              ctx.fillStyle = m.colour || "#555";
              ctx.lineWidth = m.width ? m.width * devicePixelRatio : lineWidth;
              ctx.font = font(m.bold);
              ctx.setLineDash(m.dash.map((d) => d * devicePixelRatio));
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
              if (!m.label) return;
              const at = x + 3 * devicePixelRatio;
              let line = ends.findIndex((end) => end < at);
              if (line < 0) line = ends.length < 4 ? ends.length : ends.indexOf(Math.min(...ends));
              ends[line] = at + ctx.measureText(m.label).width + 6 * devicePixelRatio;
              ctx.fillText(m.label, at, u.bbox.top + (12 + 12 * line) * devicePixelRatio);
            });
            // The browser test reads how many topology markers each chart drew.
            if (u.root.parentElement) u.root.parentElement.dataset.topology = String(drawnTopology);
            ctx.restore();
          }],
        },
      };
    }

    // Every time chart of the page shares one x range: from the run's start (0 s, the interval
    // log's base) to the last time anything was measured, so charts read one above another line up.
    let tEnd = 0;
    const later = (t) => { if (t != null && t > tEnd) tEnd = t; };
    [D.intervals, D.activity].forEach((src) => Object.values(src).forEach((c) => c.t.forEach(later)));
    if (D.resources) D.resources.t.forEach(later);
    (D.members || []).forEach((m) => m.t.forEach(later));
    D.runs.forEach((r) => (r.topology || []).forEach((e) => later(e.at)));
    D.runs.forEach((r) => r.stages.forEach((s) => later(s.end)));
    bands.forEach((b) => later(b.to));
    D.runs.forEach((r) => (r.changes || []).forEach((c) => later(c.at)));
    // A legend value: blank until a point is hovered, "-" where the hovered series has none.
    const shown = (fmt) => (u, v, si, idx) => (idx == null ? "" : v == null ? "-" : fmt(v));
    const num = (v) => {
      const a = Math.abs(v);
      return Number.isInteger(+v) ? String(+v) : (+v).toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2);
    };

    // A value per interval holds over its interval: from the point before it to its own.
    const stepped = uPlot.paths.stepped({ align: -1 });

    const charts = [];
    // One chart: `tables` are [x[], y[]] per series, aligned here on the union of their x.
    function chart(section, title, series, tables, opts) {
      opts = opts || {};
      const box = el("div", { class: "chart", "data-chart": opts.id || "" });
      section.append(box);
      if (!tables.length) {
        box.append(el("p", { class: "none" }, title + ": nothing to draw"));
        box.dataset.points = "0";
        return;
      }
      const time = opts.time !== false;
      let data = uPlot.join(tables);
      // The values drawn (the browser test counts them against the interval log's lines).
      let points = 0;
      tables.forEach((table) => { points += table.valueCount != null ? table.valueCount : table[1].filter((y) => y != null).length; });
      if (time) {
        // The shared range, as x values without a point (nothing is drawn there).
        const xs = data[0];
        const before = xs[0] > 0, after = xs[xs.length - 1] < tEnd;
        data = data.map((col, i) => (before ? [i ? null : 0] : []).concat(Array.from(col), after ? [i ? null : tEnd] : []));
      }
      const unit = opts.unit || "";
      const id = opts.id || title;
      let plot = null;
      // The x range the reader zoomed into is kept in `view` (a double click zooms out again).
      let ready = false;
      const keepZoom = {
        hooks: {
          setScale: [(u, key) => {
            if (key !== "x" || !ready) return;
            const xs = u.data[0], sc = u.scales.x;
            const whole = !xs.length || (sc.min <= xs[0] + 1e-9 && sc.max >= xs[xs.length - 1] - 1e-9);
            if (whole) delete view.zoom[id]; else view.zoom[id] = { min: sc.min, max: sc.max };
          }],
        },
      };
      const make = () => {
        if (plot) plot.destroy();
        box.innerHTML = "";
        ready = false;
        plot = new uPlot({
          title: title,
          width: width(),
          height: opts.height || 240,
          plugins: (time ? [markPlugin()] : []).concat([keepZoom]),
          scales: {
            x: time ? { time: false } : { time: false, distr: 3, log: 10 },
            y: { distr: opts.log && opts.log() ? 3 : 1 },
          },
          axes: [
            Object.assign({ label: opts.xLabel || "seconds since the run's start", values: opts.xValues, splits: opts.xSplits },
              // Every split labelled (a log axis otherwise drops those between powers of ten).
              opts.xSplits ? { filter: (u, splits) => splits } : {}),
            { label: opts.yLabel || "", size: 70 },
          ],
          cursor: { drag: { x: true, y: false } },
          legend: {
            // Each swatch in its line's colour, dashed for a dashed line.
            markers: {
              dash: (u, i) => (u.series[i].dash && u.series[i].dash.length ? "dashed" : "solid"),
              fill: (u, i) => { const c = u.series[i].stroke(u, i); return /^#[0-9a-f]{6}$/i.test(c) ? c + "55" : "transparent"; },
            },
          },
          series: [{
            label: opts.xName || "time",
            value: opts.xLegend || shown((v) => (+v).toFixed(1) + " s"),
          }].concat(series.map((s) => Object.assign({
            label: s.label,
            stroke: s.colour,
            width: s.width || 1.5,
            dash: s.dash,
            spanGaps: false,
            value: shown((v) => num(v) + unit),
          }, s.step ? { paths: stepped } : {}))),
        }, data, box);
        const zoom = view.zoom[id];
        if (zoom) plot.setScale("x", { min: zoom.min, max: zoom.max });
        ready = true;
        box.dataset.points = String(points);
      };
      charts.push({ make: make, log: !!opts.log, destroy: () => { if (plot) plot.destroy(); plot = null; } });
      make();
    }

    function section(title, id) {
      const s = el("section", { id: id });
      s.append(el("h2", {}, title));
      root.append(s);
      return s;
    }

    // Header.
    const h = D.header;
    root.append(el("h1", {}, "mongo-stress: " + h.profile));
    if (h.description) root.append(el("p", { class: "description" }, h.description));
    const facts = el("dl", { class: "facts" });
    [["tags", h.tags || "-"], ["seed", h.seed], ["server", h.server], ["host", h.host], ["command line", h.command_line],
      ["started", h.started_at], ["finished", h.finished_at || "(not finished)"],
      ["duration", h.duration || "-"], ["exit status", h.exit],
      ["tool", h.tool]].forEach(([k, v]) => { facts.append(el("dt", {}, k), el("dd", {}, String(v == null ? "" : v))); });
    root.append(facts);
    if (D.thresholds && D.thresholds.length) {
      const several = D.runs.length > 1;
      // As the console shows them: the limit as written (in the threshold), the value in its unit.
      const lines = [(several ? "Run\t" : "") + "Threshold\tValue\tResult"].concat(D.thresholds.map((t) =>
        (several ? t.run + "\t" : "") + [t.threshold, (+t.value).toFixed(2) + (t.unit === "% change" ? " %" : t.unit), t.verdict].join("\t")));
      const th = el("section", { id: "thresholds" });
      th.append(el("h2", {}, "Thresholds"));
      th.append(tsvTable(lines.join("\n"), "thresholds-table"));
      root.append(th);
    }
    if (h.warnings && h.warnings.length) {
      const ul = el("ul", { class: "warnings" });
      h.warnings.forEach((w) => ul.append(el("li", { class: w.code },
        (w.run != null && D.runs.length > 1 ? "run " + w.run + " " : "") + (w.label ? w.label + ": " : "") + w.message)));
      root.append(ul);
    }

    // Tables, exactly as the TSV files.
    const tables = section("Summary", "summary");
    tables.append(el("p", {}, "As summary.tsv: times in ms, Throughput in samples/s."));
    // (The live page has none until its first interval closed.)
    if (D.summary_tsv && D.summary_tsv.trim()) tables.append(tsvTable(D.summary_tsv, "summary-table"));
    else tables.append(el("p", { class: "none" }, "No summary yet."));
    if (D.checks && D.checks.length) {
      // Transactions (committed, aborted, retries) and the collections' invariants.
      tables.append(el("h3", {}, "Transactions and invariants"));
      const ul = el("ul", { id: "checks" });
      D.checks.forEach((line) => ul.append(el("li", {}, line)));
      tables.append(ul);
    }
    if (D.outage && D.outage.length) {
      // Faults done, windows without a success, and the write audit.
      tables.append(el("h3", {}, "Faults, unavailability and the write audit"));
      const pre = el("pre", { id: "outage" });
      pre.textContent = D.outage.join("\n");
      tables.append(pre);
    }
    if (D.plans && D.plans.length) {
      // The server's explain of each of the profile's own operations, after the setup.
      tables.append(el("h3", {}, "Query plans (the server's explain after the setup)"));
      const ul = el("ul", { id: "plans" });
      D.plans.forEach((p) => ul.append(el("li", p.collscan ? { class: "collscan" } : {}, p.line)));
      tables.append(ul);
    }
    if (D.resources_summary_tsv && D.resources_summary_tsv.trim().split("\n").length > 1) {
      tables.append(el("h3", {}, "Server resources per stage (as resources-summary.tsv)"));
      tables.append(tsvTable(D.resources_summary_tsv, "resources-table"));
    }
    if (D.members_tsv) {
      // Each member of a replica set or cluster over the run (runs[].members of summary.json).
      tables.append(el("h3", {}, "Members"));
      tables.append(el("p", {}, "Each sampled every second on its own connection: average / peak over the run; "
        + "Seconds = answered / sampled; Ops/s = serverStatus opcounters, every kind; Lag = seconds behind the primary."));
      tables.append(tsvTable(D.members_tsv, "members-table"));
    }
    if (D.parts_tsv) {
      tables.append(el("h3", {}, "Parts of this merged run (as parts.tsv)"));
      tables.append(tsvTable(D.parts_tsv, "parts-table"));
    }
    if (D.spread && D.spread.length) {
      const lines = ["Label\tRuns\tMean\tMin\tMax\tStd. Dev.\tCV %"].concat(D.spread.map((x) =>
        [x.label, x.runs, x.mean.toFixed(2), x.min.toFixed(2), x.max.toFixed(2), x.stddev.toFixed(2), x.cv_pct.toFixed(1)].join("\t")));
      tables.append(el("h3", {}, "Throughput over the runs (samples/s)"));
      tables.append(tsvTable(lines.join("\n"), "spread-table"));
    }

    // With --repeat the runs follow one another in time: each run of a group is its own line.
    const windows = D.runs.map((r) => {
      const b = r.stages.map((x) => x.began).filter((x) => x != null);
      const e = r.stages.map((x) => x.end).filter((x) => x != null);
      return { run: r.run, from: Math.min(...b) - 0.001, to: Math.max(...e) + 1.5 };
    });
    // A run's last interval closes just after its end; the next run's own start bounds it.
    windows.forEach((w, i) => { if (i + 1 < windows.length) w.to = Math.min(w.to, windows[i + 1].from); });
    const several = D.runs.length > 1;
    // Series of `cols` (a table of columns with t) cut per run: [{suffix, cols}].
    function perRun(cols) {
      if (!several) return [{ suffix: "", cols: cols }];
      return windows.map((w) => {
        const keep = cols.t.map((t, i) => (t > w.from && t <= w.to ? i : -1)).filter((i) => i >= 0);
        const cut = {};
        Object.keys(cols).forEach((k) => { cut[k] = keep.map((i) => cols[k][i]); });
        return { suffix: " (run " + w.run + ")", cols: cut };
      }).filter((p) => p.cols.t.length);
    }
    // A value per interval (a rate, a percentile) is drawn as a step over the part of its
    // interval its series ran in (`from` to `to`, as the data gives them), nothing between parts
    // apart; a value of a moment (users) is a point at its time (`t`, the interval's end).
    function over(cols, col, step) {
      if (!step || !cols.from) return [cols.t, cols[col]];
      const xs = [], ys = [];
      cols[col].forEach((y, i) => {
        const from = cols.from[i], to = cols.to[i];
        // None of its own time: what reached the recorder after its series ended.
        if (!(to > from)) return;
        const last = xs.length ? xs[xs.length - 1] : null;
        if (last == null || from > last + 0.005) {
          if (last != null) { xs.push((last + from) / 2); ys.push(null); }
          xs.push(from); ys.push(y);
        }
        xs.push(to); ys.push(y);
      });
      const table = [xs, ys];
      // The interval log's values it draws (the browser test counts them).
      table.valueCount = cols[col].filter((y) => y != null).length;
      return table;
    }
    // For each group tag with data in `source` (and its warm-up, dashed): series and tables of
    // the column `col`.
    function lines(source, col, withWarmup, step) {
      const series = [], tables = [];
      D.groups.forEach((g) => {
        [[g.tag, undefined, ""], [withWarmup ? "warmup:" + g.tag : null, [3, 3], " warm-up"]].forEach(([tag, dash, word]) => {
          if (!tag || !source[tag]) return;
          perRun(source[tag]).forEach((p) => {
            series.push({ label: labelOf[g.tag] + word + p.suffix, colour: colour[g.tag], dash: dash, step: step });
            tables.push(over(p.cols, col, step));
          });
        });
      });
      return { series: series, tables: tables };
    }

    // Throughput and errors.
    const tp = section("Throughput", "throughput");
    const rates = lines(D.intervals, "rate", true, true);
    const warmed = D.groups.some((g) => D.intervals["warmup:" + g.tag]);
    chart(tp, "Operations per second, per interval" + (warmed ? " (warm-up dashed)" : ""), rates.series, rates.tables,
      { yLabel: "ops/s", unit: "/s", id: "throughput" });
    const errs = lines(D.activity, "errors", false, true);
    chart(tp, "Failed operations per second", errs.series, errs.tables, { yLabel: "errors/s", unit: "/s", height: 160, id: "errors" });

    // Latency over time, one chart per group.
    const lat = section("Latency over time", "latency");
    const logBox = el("input", { type: "checkbox", id: "log-scale" });
    lat.append(el("label", { class: "toggle" }, logBox, " logarithmic latency axis"));
    logBox.checked = !!view.log;
    const isLog = () => !!view.log;
    // Each percentile its own colour (the legend's swatch is the line's colour); the warm-up's
    // the same colours, dashed.
    const PCT = [["p50", "#1f77b4", 1.5], ["p90", "#2ca02c", 1.5], ["p99", "#ff7f0e", 2], ["max", "#d62728", 1]];
    D.groups.forEach((g) => {
      if (!D.intervals[g.tag]) return;
      const series = [], t = [];
      [[g.tag, ""], ["warmup:" + g.tag, "warm-up "]].forEach(([tag, word]) => {
        if (!D.intervals[tag]) return;
        perRun(D.intervals[tag]).forEach((p) => {
          PCT.forEach(([col, c, w]) => {
            series.push({ label: word + col + p.suffix, colour: c, width: w, dash: word ? [3, 3] : undefined, step: true });
            t.push(over(p.cols, col, true));
          });
        });
      });
      const svc = D.intervals["svc:" + g.tag];
      if (g.open_loop && svc) {
        perRun(svc).forEach((p) => {
          series.push({ label: "service p99" + p.suffix, colour: "#888", width: 1.5, dash: [6, 3], step: true });
          t.push(over(p.cols, "p99", true));
        });
      }
      chart(lat, g.name + (g.open_loop ? " (latency from the intended start; service time's p99 grey)" : ""),
        series, t, { yLabel: "ms", unit: " ms", log: isLog, id: "latency:" + g.tag });
    });
    logBox.addEventListener("change", () => {
      view.log = logBox.checked;
      charts.filter((c) => c.log).forEach((c) => c.make());
    });

    // The percentile spectrum of the whole run.
    const sp = section("Latency distribution", "spectrum");
    // x = 1/(1-p): a percentile with as many decimals as it needs (90%, 99%, 99.9%, 99.99%), and
    // `more` decimals besides for a point hovered.
    const pctText = (v, more) => {
      const p = 100 * (1 - 1 / v);
      const d = Math.max(0, Math.ceil(Math.log10(v) - 1e-9) - 2) + more;
      let text = p.toFixed(d);
      if (text.includes(".")) text = text.replace(/\.?0+$/, "");
      return text + "%";
    };
    chart(sp, "Latency by percentile (HdrHistogram's spectrum)", D.spectrum.map((s) => ({
      label: (D.runs.length > 1 ? "run " + s.run + " " : "") + s.label,
      colour: colour[D.groups.find((g) => g.name === s.label)?.tag] || colour.TOTAL,
      width: s.label === "TOTAL" ? 1 : 1.5,
      dash: s.label === "TOTAL" ? [4, 3] : undefined,
    })), D.spectrum.map((s) => [s.x, s.y]), {
      time: false, xLabel: "percentile", xName: "percentile", yLabel: "ms", unit: " ms", log: isLog, height: 300, id: "spectrum",
      xValues: (u, vals) => vals.map((v) => (v >= 1 ? pctText(v, 0) : "")),
      xLegend: shown((v) => pctText(v, 2)),
      // 0 %, 50 %, 90 %, 99 %, 99.9 %, ...: where 1/(1-p) is 1, 2, 10, 100, 1000, ...
      xSplits: (u, i, min, max) => [1, 2, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7].filter((v) => v >= min * 0.999 && v <= max * 1.001),
    });

    // Users.
    const us = section("Active users", "users");
    const users = lines(D.activity, "users", false);
    chart(us, "Virtual users running, per group", users.series, users.tables, { yLabel: "users", height: 180, id: "users" });

    // The server's side, and the client's CPU.
    const res = section("Server and client resources", "resources");
    if (D.resources) {
      const byChart = {};
      D.resources.series.forEach((s) => { (byChart[s.chart] = byChart[s.chart] || []).push(s); });
      const titles = { cpu: "CPU % (of one core)", iops: "IOPS of the data device (or the server host's disks)", disk: "Server disk KB/s",
        server_ops: "Server operations per second (serverStatus)", server_latency: "The server's own average latency, us (serverStatus opLatencies)",
        queues: "Queued and active readers and writers (mongostat qrw, arw)", connections: "Connections", cache: "WiredTiger cache MB",
        network: "Server host network KB/s (--server-metrics)", health: "The load generator's threads waiting to run, and throttled, ms per second",
        lag: "How late the load generator's 100 ms heartbeat woke, ms (operations started and timed that late too)" };
      const greys = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
      Object.keys(titles).forEach((k) => {
        const list = byChart[k];
        if (!list) return;
        chart(res, titles[k], list.map((s, i) => ({ label: s.label, colour: greys[i % greys.length] })),
          list.map((s) => [D.resources.t, s.values]), { height: 180, id: "resources:" + k });
      });
      if (!D.resources.series.length) res.append(el("p", { class: "none" }, "No resource readings" + (D.live ? " yet." : ".")));
    } else {
      res.append(el("p", { class: "none" }, "No resources.tsv in this run (--no-resources)."));
    }
    // Each member of a replica set or cluster (members.tsv; none on the live page): its
    // operations per second (replicated ones dashed, where known), and each secondary's lag.
    const members = D.members || [];
    const known = (ys) => ys.some((y) => y != null);
    const memberColour = (i) => PALETTE[i % PALETTE.length];
    const ops = { series: [], tables: [] };
    members.forEach((m, i) => {
      if (known(m.ops)) {
        ops.series.push({ label: m.name, colour: memberColour(i) });
        ops.tables.push([m.t, m.ops]);
      }
      if (known(m.repl)) {
        ops.series.push({ label: m.name + " replicated", colour: memberColour(i), dash: [4, 3] });
        ops.tables.push([m.t, m.repl]);
      }
    });
    if (ops.tables.length) {
      chart(res, "Operations per member (ops/s)", ops.series, ops.tables, { yLabel: "ops/s", unit: "/s", height: 200, id: "members:ops" });
    }
    const lag = { series: [], tables: [] };
    members.forEach((m, i) => {
      if (!m.secondary || !known(m.lag)) return;
      lag.series.push({ label: m.name, colour: memberColour(i) });
      lag.tables.push([m.t, m.lag]);
    });
    if (lag.tables.length) {
      chart(res, "Lag behind the primary (s)", lag.series, lag.tables, { yLabel: "s", unit: " s", height: 180, id: "members:lag" });
    }

    const previous = current;
    current = charts;
    previous.forEach((c) => c.destroy());
    return { charts: charts.length };
  }
  window.MS.report = report;

  // report.html: its data is in the page (the live page's #data only says it is live).
  const data = document.getElementById("data");
  const D = data && JSON.parse(data.textContent);
  if (!D || D.live) return;
  const drawn = report(D, document.getElementById("report"));
  document.body.dataset.exit = String(D.header.exit_code);
  document.body.dataset.charts = String(drawn.charts);
  // Milliseconds from navigation to every chart drawn (scripts/bench-report.sh reads it).
  document.body.dataset.renderMs = String(Math.round(performance.now()));
  document.body.dataset.ready = "1";
})();
