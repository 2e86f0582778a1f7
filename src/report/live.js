// The live page (`run --live`): the report of the run going on, drawn by the same
// window.MS.report as report.html, from the server-sent events of GET /events (the history first,
// then each interval as it closes). Above it, the run's state and, where the run allows it,
// controls that change a group's rate or users or stop the run. Its #data only says
// {"live": true, "token_needed": bool, "control": bool}; the page loads nothing but its own
// origin's /events and /api/*.
//
// The body says data-ready="1" once the history was first drawn, data-intervals (the interval
// events of the run shown), data-totals (the last state's totals, as JSON), and data-ended="1"
// with data-exit when the run ended (the live browser test reads them).
(function () {
  "use strict";
  const cfg = JSON.parse(document.getElementById("data").textContent);
  if (!cfg.live) return;
  const { el } = window.MS;
  const body = document.body;
  const token = new URLSearchParams(location.search).get("token") || "";

  // The resources.tsv columns charted, with their chart and label: html.rs's RESOURCE_SERIES.
  const RESOURCE_SERIES = [
    ["server_cpu_pct", "cpu", "server CPU %"],
    ["status_cpu_pct", "cpu", "server CPU % (serverStatus)"],
    ["client_cpu_pct", "cpu", "client CPU %"],
    ["host_cpu_pct", "cpu", "host CPU %"],
    ["iops", "iops", "IOPS"],
    ["disk_read_kbs", "disk", "disk read KB/s"],
    ["disk_write_kbs", "disk", "disk write KB/s"],
    ["insert_s", "server_ops", "insert/s"],
    ["query_s", "server_ops", "query/s"],
    ["update_s", "server_ops", "update/s"],
    ["delete_s", "server_ops", "delete/s"],
    ["getmore_s", "server_ops", "getmore/s"],
    ["connections", "connections", "connections"],
    ["cache_used_mb", "cache", "cache used MB"],
    ["cache_dirty_mb", "cache", "cache dirty MB"],
    ["reads_us", "server_latency", "server read us"],
    ["writes_us", "server_latency", "server write us"],
    ["commands_us", "server_latency", "server command us"],
    ["qr", "queues", "queued readers"],
    ["qw", "queues", "queued writers"],
    ["ar", "queues", "active readers"],
    ["aw", "queues", "active writers"],
    ["client_wait_ms", "health", "client wait to run ms/s"],
    ["client_throttled_ms", "health", "client throttled ms/s"],
    ["client_lag_max_ms", "lag", "worst ms"],
    ["client_lag_avg_ms", "lag", "average ms"],
  ];
  // A --server-metrics host's columns (`column@host`): html.rs's HOST_SERIES.
  const HOST_SERIES = [
    ["node_cpu_pct", "cpu", "host CPU %"],
    ["mongod_cpu_pct", "cpu", "mongod CPU %"],
    ["node_disk_reads_s", "iops", "reads/s"],
    ["node_disk_writes_s", "iops", "writes/s"],
    ["node_disk_write_kbs", "disk", "write KB/s"],
    ["node_net_in_kbs", "network", "in KB/s"],
    ["node_net_out_kbs", "network", "out KB/s"],
  ];

  // What the events told, as report.js's D; null until the first `run` event.
  let D = null;
  // The run's groups as the `run` event gave them (with setting and value).
  let groups = [];
  let intervals = 0;
  // resources: the times, and each column's values at them.
  let resT = [], resCols = {};
  let state = null;
  let ended = null;
  let gone = false;
  // The reader's choices kept between redraws (the log axis, zooms).
  const view = {};
  // For a test or a console: the last state's totals, the intervals drawn from, the view.
  window.MS_LIVE = { totals: null, intervals: 0, view: view };

  // The page: the state bar, the controls, then the report.
  const bar = el("div", { id: "live-state" });
  const now = el("p", { class: "now" }, "live: connecting to the run");
  const notes = el("div", { class: "notes" });
  bar.append(now, notes);
  let root = document.getElementById("report");
  root.before(bar);

  const num = (v) => (Number.isInteger(+v) ? String(+v) : (+v).toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2));
  const setting = (kind, v) => (v == null ? "-" : kind === "rate" ? num(v) + "/s" : num(v) + " users");
  const secs = (v) => Math.round(v) + " s";

  // Controls: a group's rate or users, and stopping the run.
  let control = null, rows = null, reply = null, stop = null;
  if (cfg.control) {
    control = el("section", { id: "live-control" });
    control.append(el("h2", {}, "Control"));
    rows = el("table", { class: "control" });
    stop = el("button", { type: "button", id: "stop-run", class: "stop" }, "Stop the run");
    stop.addEventListener("click", () => post("/api/stop", {}));
    reply = el("p", { id: "control-reply" });
    control.append(rows, el("p", {}, stop), reply);
    root.before(control);
  }
  function post(path, payload) {
    const headers = { "Content-Type": "application/json", "X-Mongo-Stress-From": "page" };
    if (token) headers.Authorization = "Bearer " + token;
    reply.textContent = "sent...";
    reply.className = "";
    const show = (status, text) => {
      let said = text;
      try {
        const j = JSON.parse(text);
        said = j.message || j.error || text;
      } catch (e) { /* not JSON: the text as it is */ }
      reply.textContent = said || "(HTTP " + status + ")";
      reply.className = status >= 200 && status < 300 ? "ok" : "fail";
      reply.dataset.status = String(status);
    };
    fetch(path, { method: "POST", headers: headers, body: JSON.stringify(payload) })
      .then((r) => r.text().then((t) => show(r.status, t)))
      .catch(() => show(0, "the run's page server is gone (the run ended or was stopped)"));
  }
  function controlRows() {
    if (!rows) return;
    rows.innerHTML = "";
    groups.filter((g) => g.setting != null).forEach((g) => {
      const input = el("input", { type: "number", id: "set-" + g.name, min: "0", step: g.setting === "rate" ? "any" : "1" });
      if (g.value != null) input.value = String(g.value);
      const button = el("button", { type: "button", "data-group": g.name }, "set");
      button.addEventListener("click", () => {
        const v = g.setting === "rate" ? parseFloat(input.value) : parseInt(input.value, 10);
        if (!Number.isFinite(v)) {
          reply.textContent = g.name + ": enter a number";
          reply.className = "fail";
          return;
        }
        post("/api/groups/" + encodeURIComponent(g.name), g.setting === "rate" ? { rate: v } : { users: v });
      });
      const tr = el("tr", { "data-group": g.name });
      tr.append(el("td", {}, g.name), el("td", { class: "value" }, setting(g.setting, g.value)),
        el("td", {}, input, g.setting === "rate" ? " /s" : " users"), el("td", {}, button));
      rows.append(tr);
    });
    if (!rows.children.length) rows.append(el("tr", {}, el("td", { class: "none" }, "No group of this run can be changed while it runs.")));
  }
  function controlsOff() {
    if (control) control.querySelectorAll("input, button").forEach((e) => { e.disabled = true; });
  }

  // The state bar, at once on every event that changes it.
  function showState() {
    const a = anchor();
    stateBar();
    keep(a);
  }
  function stateBar() {
    notes.innerHTML = "";
    if (ended) {
      now.textContent = "The run has ended: " + ended.exit + " (exit " + ended.exit_code + "). Its report: ";
      if (ended.report) {
        now.append(el("a", { id: "report-link", href: "file://" + encodeURI(ended.report) }, ended.report));
        now.append(el("span", { class: "hint" }, " (a browser may not open a file link from a served page: open the path yourself)"));
      } else {
        now.append("none was written");
      }
    } else if (cfg.token_needed && !token) {
      now.textContent = "This page needs the run's token: open the address the run printed (it ends in ?token=...).";
    } else if (!D) {
      now.textContent = "live: connecting to the run";
    } else {
      const words = [];
      if (D.runs[0].run > 1) words.push("run " + D.runs[0].run);
      if (D.title) words.push(D.title);
      if (!state) {
        words.push("waiting for the first interval");
      } else {
        if (state.stage) words.push("stage " + state.stage);
        words.push(secs(state.elapsed) + " in");
        words.push(state.time_left != null ? secs(state.time_left) + " left" : "running");
      }
      now.textContent = "live: " + words.join(", ");
    }
    if (gone && !ended) notes.append(el("p", { class: "gone" }, "the run's page server is gone (the run ended or was stopped)"));
    if (!state) return;
    const list = (cls, items) => {
      if (!items.length) return;
      const ul = el("ul", { class: cls });
      items.forEach((i) => ul.append(i));
      notes.append(ul);
    };
    list("warnings", (state.warnings || []).map((w) => el("li", { class: w.code || "" }, (w.label ? w.label + ": " : "") + w.message)));
    list("failing", (state.thresholds || []).filter((t) => /^FAIL/.test(t.verdict)).map((t) => el("li", {},
      "threshold " + t.threshold + ": " + (+t.value).toFixed(2) + (t.unit === "% change" ? " %" : t.unit) + " (" + t.verdict + ")")));
    list("faults", (state.faults || []).map((f) => el("li", {},
      "fault " + f.label + " at " + (+f.from).toFixed(1) + " s" + (f.to != null ? ", over at " + (+f.to).toFixed(1) + " s" : ", not over yet"))));
  }

  function resources() {
    const hosts = [...new Set(Object.keys(resCols).filter((c) => c.includes("@")).map((c) => c.split("@")[1]))].sort();
    const wanted = RESOURCE_SERIES.concat(...hosts.map((h) => HOST_SERIES.map(([c, chart, label]) => [c + "@" + h, chart, label + " @" + h])));
    const series = wanted.filter(([c]) => resCols[c] && resCols[c].some((v) => v != null))
      .map(([c, chart, label]) => ({ chart: chart, label: label, values: resCols[c] }));
    return { t: resT, series: series };
  }

  // What the reader looks at stays where it is when the page changes above it (the state bar
  // grows, a table gains a row) or the report is drawn anew: the first element at the top of the
  // view (a chart, a heading, a table, or the state bar or controls) is found again after the
  // change (by its chart's name, id, or place) and the page scrolled by how far it moved. The
  // browser's own scroll anchoring cannot follow an element that is replaced.
  document.scrollingElement.style.overflowAnchor = "none";
  const visible = (list) => [...list].find((e) => e.getBoundingClientRect().bottom > 0);
  function anchor() {
    if (window.scrollY <= 0) return null;
    let e = visible([bar, control, root].filter(Boolean));
    if (e === root) {
      e = visible(root.children) || root;
      if (e.tagName === "SECTION") e = visible(e.children) || e;
    }
    if (!e) return null;
    // Its place in the report: ids where there are, else the child's index.
    const path = [];
    for (let n = e; root.contains(n) && n !== root; n = n.parentElement) {
      path.unshift(n.id ? "#" + n.id : [...n.parentElement.children].indexOf(n));
    }
    return { e: e, top: e.getBoundingClientRect().top, path: root.contains(e) ? path : null, chart: e.dataset.chart };
  }
  function keep(a) {
    if (!a) return;
    let e = a.e;
    if (a.path && !root.contains(e)) {
      e = a.chart ? root.querySelector("[data-chart=\"" + CSS.escape(a.chart) + "\"]") : null;
      if (!e) {
        e = a.path.reduce((n, step) => n && (typeof step === "string"
          ? [...n.children].find((c) => "#" + c.id === step) : n.children[step]), root);
      }
    }
    if (e) window.scrollBy(0, e.getBoundingClientRect().top - a.top);
  }

  // Drawing: the report into a fresh element that then takes the old one's place, at most once
  // a second.
  let drawn = false, lastDraw = 0, timer = null, held = false;
  window.addEventListener("pointerdown", () => { held = true; }, true);
  window.addEventListener("pointerup", () => { held = false; }, true);
  window.addEventListener("blur", () => { held = false; });
  function draw() {
    lastDraw = Date.now();
    if (!D) return;
    D.resources = resources();
    const a = anchor();
    const fresh = el("main");
    root.after(fresh);
    let done;
    try {
      done = window.MS.report(D, fresh, view);
    } catch (e) {
      fresh.remove();
      throw e;
    }
    root.remove();
    fresh.id = "report";
    root = fresh;
    // After uPlot's own first drawing (a microtask), which sizes the charts.
    queueMicrotask(() => keep(a));
    body.dataset.charts = String(done.charts);
    body.dataset.intervals = String(intervals);
    drawn = true;
    // Ready once the history this page was sent on connecting is drawn.
    if (replayed && !body.dataset.ready) body.dataset.ready = "1";
  }
  function schedule(soon) {
    if (timer) {
      if (!soon) return;
      clearTimeout(timer);
    }
    // The first time at once (after the events that came together), then once a second; not
    // while a mouse button is down (a zoom being dragged).
    const wait = soon || !drawn ? 0 : Math.max(0, lastDraw + 1000 - Date.now());
    timer = setTimeout(function fire() {
      if (held && !soon) {
        timer = setTimeout(fire, 200);
        return;
      }
      timer = null;
      draw();
    }, wait);
  }

  // The events.
  const on = {
    run(ev) {
      const h = Object.assign({}, ev.header);
      h.warnings = h.warnings || [];
      groups = (ev.groups || []).map((g) => Object.assign({}, g));
      D = {
        live: true,
        title: ev.title,
        header: h,
        thresholds: [],
        plans: [],
        checks: [],
        outage: [],
        summary_tsv: "",
        resources_summary_tsv: "",
        parts_tsv: null,
        spread: null,
        groups: groups.map((g) => ({ tag: g.tag, name: g.name, open_loop: g.open_loop, stage: g.stage, kind_of: g.kind_of })),
        runs: [{
          run: ev.run,
          stages: (ev.stages || []).map((s) => ({ label: s.label, began: null, start: null, end: null })),
          steps: [],
          faults: [],
          changes: [],
        }],
        intervals: {},
        activity: {},
        spectrum: [],
        resources: null,
      };
      intervals = 0;
      window.MS_LIVE.intervals = 0;
      resT = [];
      resCols = {};
      state = null;
      ended = null;
      controlRows();
    },
    interval(ev) {
      const end = ev.start + ev.length;
      const per = (n) => (ev.length > 0 ? n / ev.length : 0);
      Object.keys(ev.series || {}).forEach((tag) => {
        const s = ev.series[tag];
        const c = D.intervals[tag] || (D.intervals[tag] =
          { t: [], from: [], to: [], rate: [], count: [], p50: [], p90: [], p99: [], max: [] });
        c.t.push(end);
        c.from.push(ev.start);
        c.to.push(end);
        c.rate.push(per(s.count));
        ["count", "p50", "p90", "p99", "max"].forEach((k) => c[k].push(s[k] == null ? null : s[k]));
      });
      Object.keys(ev.activity || {}).forEach((tag) => {
        const a = ev.activity[tag];
        const c = D.activity[tag] || (D.activity[tag] = { t: [], from: [], to: [], users: [], errors: [] });
        c.t.push(end);
        c.from.push(ev.start);
        c.to.push(end);
        c.users.push(a.users);
        // A rate over the interval, as report.html's.
        c.errors.push(per(a.errors));
      });
      intervals += 1;
      window.MS_LIVE.intervals = intervals;
    },
    state(ev) {
      state = ev;
      const run = D.runs[0];
      if (ev.summary_tsv != null) D.summary_tsv = ev.summary_tsv;
      D.thresholds = (ev.thresholds || []).map((t) => Object.assign({ run: run.run }, t));
      D.header.warnings = ev.warnings || [];
      if (ev.stages) run.stages = ev.stages;
      // A fault not over yet is drawn up to now.
      run.faults = (ev.faults || []).map((f) => ({ label: f.label, from: f.from, to: f.to != null ? f.to : ev.elapsed }));
      if (ev.spectrum) D.spectrum = ev.spectrum.map((s) => Object.assign({ run: run.run }, s));
      window.MS_LIVE.totals = ev.totals;
      body.dataset.totals = JSON.stringify(ev.totals);
    },
    resources(ev) {
      const k = resT.length;
      resT.push(ev.t);
      const values = ev.values || {};
      Object.keys(values).forEach((c) => {
        if (!resCols[c]) resCols[c] = new Array(k).fill(null);
      });
      Object.keys(resCols).forEach((c) => resCols[c].push(values[c] == null ? null : values[c]));
    },
    change(ev) {
      const label = ev.group + " " + setting(ev.setting, ev.from) + " -> " + setting(ev.setting, ev.to) + " (" + ev.who + ")";
      D.runs[0].changes.push({ at: ev.at, label: label });
      const g = groups.find((x) => x.name === ev.group);
      if (g) g.value = ev.to;
      const tr = rows && [...rows.children].find((r) => r.dataset.group === ev.group);
      if (tr) {
        tr.querySelector(".value").textContent = setting(ev.setting, ev.to);
        const input = tr.querySelector("input");
        if (document.activeElement !== input) input.value = String(ev.to);
      }
    },
    end(ev) {
      ended = ev;
      D.header.exit = ev.exit;
      D.header.exit_code = ev.exit_code;
      if (ev.finished_at) D.header.finished_at = ev.finished_at;
      if (ev.duration) D.header.duration = ev.duration;
      body.dataset.exit = String(ev.exit_code);
      body.dataset.ended = "1";
      source.close();
      controlsOff();
    },
  };

  let source = null;
  let failures = 0;
  let replayed = false;
  function connect() {
    source = new EventSource("/events" + (token ? "?token=" + encodeURIComponent(token) : ""));
    source.onopen = () => {
      // Every connection replays the history from its first `run`, which starts the page anew.
      failures = 0;
      gone = false;
      showState();
    };
    source.onerror = () => {
      // The server goes away after the run: after `end` that is no news.
      if (ended) {
        source.close();
        return;
      }
      failures += 1;
      gone = true;
      // EventSource tries again by itself (unless the server answered with an error): 3 times.
      if (failures >= 3 || source.readyState === EventSource.CLOSED) {
        source.close();
        controlsOff();
      }
      showState();
    };
    // The history sent on connecting is over: what is drawn next is the whole run so far.
    source.addEventListener("replayed", () => {
      replayed = true;
      if (D) schedule(true);
    });
    Object.keys(on).forEach((name) => source.addEventListener(name, (e) => {
      const ev = JSON.parse(e.data);
      // Events before the first `run` (none should come) have nothing to go into.
      if (!D && name !== "run") return;
      const a = anchor();
      on[name](ev);
      stateBar();
      keep(a);
      schedule(name === "end");
    }));
  }
  if (cfg.token_needed && !token) {
    showState();
    if (control) control.hidden = true;
  } else {
    connect();
  }
})();
