// fulcrum's dashboard: loads every group's status once, then follows
// GET /v1/events (Server-Sent Events read with fetch, so that the admin
// token travels in the Authorization header, never in a URL), resuming
// with Last-Event-ID after a reconnect. Actions call the API's own routes.
// No polling, no external requests. See docs/dashboard.md.
"use strict";

(function () {
  const TOKEN_KEY = "fulcrum.adminToken";
  const WINDOW_S = 300; // the charts keep the last 5 minutes
  const LOG_MAX = 300;
  const api = new URL("../v1/", location.href);

  const $ = (id) => document.getElementById(id);
  const groups = new Map(); // name -> {status, view, charts: Map, moves: [], advisories: Map, diverged: Map}
  // The cluster as GET /v1/cluster last told it, with the leaders kept
  // up to date by "leader" events (terms: group -> the leader's term).
  let cluster = { mode: "", instance: "", instances: [], leaders: {} };
  const terms = new Map();
  let clusterFresh = false; // read by start(): the stream's first status needs no second read
  // The id of the last event seen, "<instance>-<seq>", sent back verbatim
  // as Last-Event-ID: the balancer resumes after it, or starts with a
  // status when it cannot (too old, or another instance's).
  let lastId = null;
  let stream = null; // AbortController of the running stream
  let retry = 1000;
  let retryTimer = 0;

  // ---- token ----
  const token = () => sessionStorage.getItem(TOKEN_KEY) || "";
  function askToken() {
    stopStream();
    setConn("the admin API needs the admin token");
    $("login").hidden = false;
    $("forget").hidden = true;
    $("token").focus();
  }
  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
    $("token").value = "";
    $("login").hidden = true;
    start();
  });
  $("forget").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    askToken();
  });

  // ---- API calls ----
  class APIError extends Error {
    constructor(status, body) {
      const e = (body && body.error) || {};
      super(e.message || ("HTTP " + status));
      this.status = status;
      this.code = e.code || "";
      this.field = e.field || "";
      this.allowed = e.allowed || "";
    }
  }
  function headers(extra) {
    const h = Object.assign({ Accept: "application/json" }, extra || {});
    if (token()) h.Authorization = "Bearer " + token();
    return h;
  }
  async function call(method, path, body) {
    const init = { method, headers: headers(), cache: "no-store" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(new URL(path, api), init);
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
    if (!res.ok) {
      if (res.status === 401) askToken();
      const err = new APIError(res.status, data);
      if (!data || !data.error) err.message = "HTTP " + res.status + (text ? ": " + text.trim() : "");
      throw err;
    }
    return data;
  }
  function showError(what, err) {
    const p = document.createElement("p");
    let msg = what + ": ";
    if (err instanceof APIError) {
      msg += (err.code ? err.code + ": " : "") + err.message;
      if (err.allowed && !err.message.includes(err.allowed)) msg += " (allowed: " + err.allowed + ")";
    } else {
      msg += err.message || String(err);
    }
    p.textContent = msg;
    const box = $("errors");
    box.prepend(p);
    while (box.childElementCount > 5) box.lastElementChild.remove();
  }
  function clearErrors() { $("errors").replaceChildren(); }
  function setConn(text) { $("conn").textContent = text; }

  // ---- formatting ----
  const num = (v, d) => (v === null || v === undefined ? "–" : Number(v).toFixed(d));
  // ms shows a latency with two decimals below 10 ms.
  const ms = (v) => num(v, v !== null && v !== undefined && v < 10 ? 2 : 1);
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  }
  function paramsText(p) {
    if (!p || Object.keys(p).length === 0) return "defaults";
    return Object.keys(p).sort().map((k) => k + "=" + JSON.stringify(p[k])).join(", ");
  }
  function clock(t) {
    const d = t ? new Date(t) : new Date();
    return d.toLocaleTimeString([], { hour12: false });
  }

  // ---- the event log ----
  function log(kind, group, text, time) {
    const li = el("li", { class: "k-" + kind },
      el("time", { datetime: new Date(time || Date.now()).toISOString(), text: clock(time) }),
      el("span", { class: "kind", text: kind }),
      (group ? group + ": " : "") + text);
    const ol = $("log");
    ol.prepend(li);
    while (ol.childElementCount > LOG_MAX) ol.lastElementChild.remove();
  }

  // ---- groups ----
  function groupView(name) {
    let g = groups.get(name);
    if (g) return g;
    g = { status: null, charts: new Map(), moves: [], advisories: new Map(), states: new Map(), planned: new Map(), diverged: new Map() };
    const id = "g-" + name.replace(/[^A-Za-z0-9_-]/g, "_");
    const facts = el("dl", { class: "facts" });
    const strategy = el("input", { name: "strategy", autocomplete: "off", spellcheck: "false" });
    const params = el("textarea", { name: "params", spellcheck: "false", placeholder: '{"tolerance": 1.1}' });
    const form = el("form", { class: "change", "aria-label": "Change the strategy of " + name },
      el("label", {}, "Strategy", strategy),
      el("label", {}, "Params (JSON object, merged)", params),
      el("button", { type: "submit", text: "Apply" }));
    form.addEventListener("submit", (e) => { e.preventDefault(); changeStrategy(name, strategy.value.trim(), params.value.trim()); });
    const tbody = el("tbody");
    const cols = [["Replica", ""], ["State", ""], ["Weight", "num"], ["Load", "num"], ["In flight", "num"],
      ["Calls/s", "num"], ["p50 / p99 ms", "num"], ["Bound clients", "num"], ["Ejections", "num"],
      ["Applied", "num applied"], ["Actions", ""]];
    const table = el("table", { class: "replicas" },
      el("caption", { class: "visually-hidden", text: "Replicas of " + name }),
      el("thead", {}, el("tr", {}, ...cols.map(([c, cl]) => el("th", { scope: "col", class: cl, text: c })))),
      tbody);
    const moves = el("ol", { class: "moves", "aria-live": "polite" });
    const section = el("section", { class: "group", id, "data-group": name, "aria-labelledby": id + "-h" },
      el("h2", { id: id + "-h", text: name }),
      facts, form,
      el("div", { class: "table-wrap" }, table),
      el("div", { class: "charts" }),
      el("h3", { text: "Planned moves" }), moves);
    g.view = { section, facts, strategy, params, tbody, charts: section.querySelector(".charts"), moves, table };
    groups.set(name, g);
    const list = $("groups");
    const after = [...list.children].find((s) => s.dataset.group > name);
    list.insertBefore(section, after || null);
    $("nogroups").hidden = true;
    return g;
  }

  function removeGroup(name) {
    const g = groups.get(name);
    if (!g) return;
    for (const c of g.charts.values()) c.plot.destroy();
    g.view.section.remove();
    groups.delete(name);
    $("nogroups").hidden = groups.size > 0;
  }

  // setStatus replaces a group's status (GET, PATCH answers, status events).
  function setStatus(st) {
    const g = groupView(st.name);
    const prev = g.status;
    g.status = st;
    if (!prev || document.activeElement !== g.view.strategy) g.view.strategy.value = st.strategy || "";
    renderFacts(g);
    const seen = new Set();
    for (const r of st.replicas || []) {
      seen.add(r.id);
      g.states.set(r.id, r.state);
      if (!g.advisories.has(r.id)) g.advisories.set(r.id, "nominal/0");
      renderReplica(g, r);
      point(g, r);
    }
    for (const id of [...g.charts.keys()]) if (!seen.has(id)) dropReplica(g, id);
    reconcileDiverged(g);
    renderLag(g);
  }

  function renderFacts(g) {
    const st = g.status;
    const facts = [
      ["Protocol", st.protocol || "http"],
      ["Binding", st.binding || ""],
      ["Strategy", st.strategy || ""],
      ["Params", paramsText(st.params)],
      ["Front door", frontDoor(st)],
    ];
    if (st.reference) facts.push(["Reference", st.reference.corbaloc || st.reference.ior]);
    if (g.connections !== undefined) facts.push(["Open connections", String(g.connections)]);
    if (g.sessions !== undefined) facts.push(["Sessions", String(g.sessions)]);
    if (st.queue_stats) facts.push(["Queue", st.queue_stats.waiting + " waiting, " + st.queue_stats.served + " served"]);
    if (st.blocked && st.blocked.length) facts.push(["Blocked", st.blocked.join(", ")]);
    if (st.warning) facts.push(["Warning", st.warning]);
    const lead = leaderFact(st.name);
    if (lead) facts.push(["Leader", lead]);
    const gone = [...g.diverged].filter(([id]) => !(st.replicas || []).some((r) => r.id === id));
    if (gone.length) facts.push(["Diverged", gone.map(([id, d]) => id + (d.address ? " (" + d.address + ")" : "") + " " + divergedText(d)).join("; ")]);
    g.view.facts.replaceChildren(...facts.map(([k, v]) =>
      el("div", { "data-fact": k.toLowerCase().replace(/ /g, "-") }, el("dt", { text: k }),
        v instanceof Node ? el("dd", {}, v) : el("dd", { class: k === "Reference" || k === "Params" ? "mono" : "", text: v }))));
    g.view.table.classList.toggle("replicated", st.binding === "replicated");
    for (const c of g.view.table.querySelectorAll(".applied")) c.hidden = st.binding !== "replicated";
  }

  function frontDoor(st) {
    const shown = st.advertise || st.front_door || "";
    if (!st.listening || shown === st.listening || shown.endsWith("//" + st.listening)) return shown;
    return shown + " (listening on " + st.listening + ")";
  }

  function cell(label, cls) { return el("td", { "data-label": label, class: cls || "" }); }

  function renderReplica(g, r) {
    const name = g.status.name;
    let tr = g.view.tbody.querySelector('tr[data-replica="' + CSS.escape(r.id) + '"]');
    if (!tr) {
      const drain = el("button", { type: "button", "data-action": "drain", "aria-label": "Drain " + r.id, text: "Drain" });
      const activate = el("button", { type: "button", "data-action": "activate", "aria-label": "Activate " + r.id, text: "Activate" });
      const remove = el("button", { type: "button", class: "danger", "data-action": "remove", "aria-label": "Remove " + r.id, text: "Remove" });
      drain.addEventListener("click", () => act(name, r.id, "drain"));
      activate.addEventListener("click", () => act(name, r.id, "activate"));
      remove.addEventListener("click", () => confirmRemove(name, r.id, remove));
      tr = el("tr", { "data-replica": r.id },
        el("th", { scope: "row", "data-label": "Replica" }, el("span", { class: "mono rid" }), el("span", { class: "addr mono" }), el("span", { class: "addr workers" })),
        cell("State", "st"), cell("Weight", "num w"), cell("Load", "num load"), cell("In flight", "num inf"),
        cell("Calls/s", "num rps"), cell("p50 / p99 ms", "num lat"), cell("Bound clients", "num bound"),
        cell("Ejections", "num ej"), cell("Applied", "num applied"),
        el("td", { class: "actions", "data-label": "Actions" }, drain, activate, remove));
      g.view.tbody.append(tr);
    }
    const q = (c) => tr.querySelector("." + c);
    q("rid").textContent = r.id;
    if (r.address) q("addr").textContent = r.address;
    if (r.workers) q("workers").textContent = r.workers.reporting + " of " + r.workers.count + " workers reporting";
    tr.dataset.state = r.state;
    const div = g.diverged.get(r.id);
    q("st").replaceChildren(el("span", { class: "state state-" + r.state, text: r.state }),
      r.advisory && r.advisory !== "nominal" ? " " + r.advisory + (r.shed ? " (shed " + num(r.shed, 1) + ")" : "") : "",
      ...(div ? [el("span", { class: "diverged", "data-position": String(div.position), text: divergedText(div) })] : []));
    if (div) tr.dataset.diverged = String(div.position); else delete tr.dataset.diverged;
    if (r.weight !== undefined) q("w").textContent = num(r.weight, 2).replace(/\.?0+$/, "");
    q("load").textContent = num(r.load, 1);
    if (r.inflight !== undefined) q("inf").textContent = String(r.inflight);
    if (r.source !== undefined) {
      q("rps").textContent = num(r.rps, 1);
      q("lat").textContent = ms(r.latency_p50_ms) + " / " + ms(r.latency_p99_ms);
      q("bound").textContent = num(r.bound_clients, 0);
      q("ej").textContent = num(r.ejections, 0);
    }
    tr.querySelector('[data-action="drain"]').disabled = r.state === "draining";
    tr.querySelector('[data-action="activate"]').disabled = r.state === "active";
    if (!q("pos")) q("applied").append(el("span", { class: "pos" }), el("span", { class: "lag" }));
    q("pos").textContent = r.applied ? String(r.applied) : "–";
    q("applied").hidden = g.status.binding !== "replicated";
    chartFor(g, r.id);
  }

  function dropReplica(g, id) {
    const tr = g.view.tbody.querySelector('tr[data-replica="' + CSS.escape(id) + '"]');
    if (tr) tr.remove();
    const c = g.charts.get(id);
    if (c) { c.plot.destroy(); c.box.remove(); g.charts.delete(id); }
    g.states.delete(id);
    g.advisories.delete(id);
  }

  // ---- cluster and leaders ----
  async function loadCluster() {
    const before = cluster.leaders;
    try {
      cluster = await call("GET", "cluster");
    } catch (e) {
      if (e.status !== 401) showError("reading the cluster", e);
      return;
    }
    cluster.leaders = cluster.leaders || {};
    // The answer has no terms: a term kept from a leader event stays only
    // while the same instance leads.
    for (const group of [...terms.keys()]) if (before[group] !== cluster.leaders[group]) terms.delete(group);
    renderCluster();
    for (const g of groups.values()) if (g.status) renderFacts(g);
  }

  const clustered = () => cluster.mode === "cluster";

  function renderCluster() {
    const n = (cluster.instances || []).length;
    const self = cluster.instance ? el("strong", { class: "mono", text: cluster.instance }) : null;
    if (clustered()) {
      $("cluster-mode").replaceChildren("Cluster of " + n + " instance" + (n === 1 ? "" : "s") + "; this page talks to ", self || "?");
    } else {
      $("cluster-mode").replaceChildren("Single node", ...(self ? [": ", self] : []));
    }
    $("instances").replaceChildren(...(clustered() ? cluster.instances || [] : []).map((i) =>
      el("li", { class: i.self ? "self" : "", "data-instance": i.name },
        el("span", { class: "mono", text: i.name }),
        i.self ? el("span", { class: "self-tag", text: "this page" }) : null,
        el("span", { class: "ver", text: i.version || "" }),
        el("span", { class: "admin mono", text: i.admin_url || "" }))));
  }

  // leaderFact is what the Leader fact of group shows: nothing on a
  // single node; the leading instance (marked when it is the one the
  // page talks to) and its term; or that there is none.
  function leaderFact(group) {
    if (!clustered()) return null;
    const name = cluster.leaders[group];
    if (!name) return el("span", { class: "no-leader", text: "none (between leaders)" });
    const t = terms.get(group);
    const self = name === cluster.instance;
    return el("span", { class: self ? "leader-self" : "", "data-leader": name },
      el("span", { class: "mono", text: name }), (self ? " (this instance)" : "") + (t ? ", term " + t : ""));
  }

  function onLeader(ev) {
    const d = ev.data || {};
    if (d.leader) cluster.leaders[ev.group] = d.leader; else delete cluster.leaders[ev.group];
    if (d.term) terms.set(ev.group, d.term); else terms.delete(ev.group);
    log("leader", ev.group, d.leader ? "led by " + d.leader + " (term " + d.term + ")" +
      (ev.instance ? " as " + ev.instance + " sees it" : "") : "no leader (an election is under way)", ev.time);
    const g = groups.get(ev.group);
    if (g && g.status) renderFacts(g);
  }

  // ---- divergent replicas ----
  function divergedText(d) {
    return "diverged at " + d.position + (d.ejected ? ", ejected (address blocked)" : ", alert only (no majority)");
  }

  function onDivergence(g, ev) {
    const d = ev.data;
    log("health", ev.group, "replica " + d.replica + " diverged at position " + d.position + (d.ejected ? ", ejected" : ""), ev.time);
    if (!g || !g.status) return;
    const cur = (g.status.replicas || []).find((x) => x.id === d.replica);
    g.diverged.set(d.replica, { position: d.position, ejected: !!d.ejected, address: cur ? cur.address : "", left: false });
    if (cur) renderReplica(g, cur);
    renderFacts(g);
  }

  // reconcileDiverged keeps the divergence marks that g's status still
  // bears out: a replica ejected for divergence while its row is still
  // leaving (not active again) or its address blocked; one only alerted
  // while it is a replica. A mark of an address that registered again
  // (re-admitted) goes.
  function reconcileDiverged(g) {
    const st = g.status;
    const blocked = new Set(st.blocked || []);
    for (const [id, d] of [...g.diverged]) {
      const r = (st.replicas || []).find((x) => x.id === id);
      const again = (st.replicas || []).some((x) => x.id !== id && d.address && x.address === d.address);
      let keep;
      if (again) keep = false;
      else if (!d.ejected) keep = !!r;
      else if (r) keep = r.state !== "active" || !d.left;
      else keep = blocked.has(d.address);
      if (r && r.state !== "active") d.left = true;
      if (!r) d.left = true;
      if (!keep) g.diverged.delete(id);
      if (r) renderReplica(g, r);
    }
    renderFacts(g);
  }

  // divergedMembership follows the divergence marks through a membership
  // event: an ejected replica leaving keeps its mark (its address is
  // blocked); one that is active again after leaving (re-admitted), or a
  // replica registered again at its address, clears it; a replica only
  // alerted loses its mark when it leaves.
  function divergedMembership(g, reps) {
    for (const [id, d] of [...g.diverged]) {
      const r = reps.find((x) => x.id === id);
      const again = reps.some((x) => x.id !== id && d.address && x.address === d.address);
      if (again || (!r && !d.ejected) || (r && r.state === "active" && d.left && d.ejected)) { g.diverged.delete(id); continue; }
      if (!r || r.state !== "active") d.left = true;
    }
    for (const r of g.status.replicas || []) renderReplica(g, r);
    renderFacts(g);
  }

  // renderLag shows, in a replicated group, how far each replica's
  // applied position is behind the group's highest.
  function renderLag(g) {
    if (!g.status || g.status.binding !== "replicated") return;
    const reps = g.status.replicas || [];
    const top = Math.max(0, ...reps.map((r) => r.applied || 0));
    for (const r of reps) {
      const tr = g.view.tbody.querySelector('tr[data-replica="' + CSS.escape(r.id) + '"]');
      const lag = tr && tr.querySelector(".applied .lag");
      if (!lag) continue;
      const behind = top - (r.applied || 0);
      lag.dataset.lag = String(behind);
      lag.textContent = !top ? "" : behind === 0 ? "up to date" : behind + " behind";
      lag.classList.toggle("behind", behind > 0);
    }
  }

  // ---- charts ----
  function chartFor(g, id) {
    let c = g.charts.get(id);
    if (c) return c;
    const target = el("div", { class: "plot" });
    const box = el("figure", { class: "chart", "data-replica": id }, el("h4", { class: "mono", text: id }), target);
    box.style.margin = "0";
    g.view.charts.append(box);
    c = { box, data: [[], [], []], plot: null };
    const width = Math.max(200, g.view.charts.clientWidth ? Math.min(box.clientWidth - 10, 900) : 300);
    c.plot = new uPlot({
      width, height: 150,
      scales: {
        x: { time: true, range: (u, min, max) => [Math.min(Math.max(min, max - WINDOW_S), max - 10), max] },
        rate: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] },
        load: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] },
      },
      series: [{},
        { label: "calls/s", scale: "rate", stroke: "#1d4ed8", width: 2, value: (u, v) => num(v, 1) },
        { label: "load", scale: "load", stroke: "#b45309", width: 2, dash: [6, 4], value: (u, v) => num(v, 1) }],
      axes: [{}, { scale: "rate", label: "calls/s", size: 50 },
        { scale: "load", side: 1, label: "load", size: 50, grid: { show: false } }],
      legend: { live: false },
      cursor: { show: false },
    }, c.data, target);
    g.charts.set(id, c);
    return c;
  }
  const resize = new ResizeObserver(() => {
    for (const g of groups.values()) for (const c of g.charts.values()) {
      const w = Math.max(200, c.box.clientWidth - 10);
      if (Math.abs(w - c.plot.width) > 4) c.plot.setSize({ width: w, height: 150 });
    }
  });
  resize.observe(document.body);

  // point adds r's served rate and load to its chart, at the browser's
  // clock (events are live; a replay after a reconnect lands at once).
  function point(g, r) {
    const c = chartFor(g, r.id);
    const t = Date.now() / 1000;
    const [xs, rps, load] = c.data;
    if (xs.length && t <= xs[xs.length - 1]) return;
    xs.push(t);
    rps.push(r.rps === undefined ? null : r.rps);
    load.push(r.load === undefined ? null : r.load);
    let drop = 0;
    while (drop < xs.length && xs[drop] < t - WINDOW_S) drop++;
    if (drop) for (const a of c.data) a.splice(0, drop);
    c.plot.setData(c.data);
  }

  // ---- events ----
  function onEvent(type, ev) {
    const g = ev.group ? groups.get(ev.group) : null;
    switch (type) {
      case "status": {
        if (clusterFresh) clusterFresh = false; else loadCluster(); // a resync: the leaders may have changed unseen
        const names = new Set();
        for (const st of ev.data.groups || []) { names.add(st.name); setStatus(st); }
        for (const name of [...groups.keys()]) if (!names.has(name)) removeGroup(name);
        $("nogroups").hidden = groups.size > 0;
        break;
      }
      case "group-created":
        log("group", ev.group, "created", ev.time);
        call("GET", "groups/" + encodeURIComponent(ev.group)).then((st) => setStatus(st), (e) => showError("reading group " + ev.group, e));
        break;
      case "group-deleted":
        log("group", ev.group, "deleted", ev.time);
        removeGroup(ev.group);
        break;
      case "config":
        if (!g || !g.status) break;
        Object.assign(g.status, { strategy: ev.data.strategy, params: ev.data.params, binding: ev.data.binding });
        if (document.activeElement !== g.view.strategy) g.view.strategy.value = ev.data.strategy || "";
        renderFacts(g);
        log("config", ev.group, "strategy " + ev.data.strategy + " (" + paramsText(ev.data.params) + "), binding " + ev.data.binding, ev.time);
        break;
      case "membership": onMembership(g, ev); break;
      case "step": onStep(g, ev); break;
      case "binding": {
        if (!g) break;
        const from = g.planned.get(ev.data.client);
        log("binding", ev.group, "client " + ev.data.client + " moved " + (from ? "from " + from + " " : "") + "to " + ev.data.replica, ev.time);
        g.planned.delete(ev.data.client);
        break;
      }
      case "alert":
        log("alert", ev.group, (ev.data.strategy ? ev.data.strategy + ": " : "") + ev.data.message, ev.time);
        break;
      case "divergence": onDivergence(g, ev); break;
      case "leader": onLeader(ev); break;
      case "closed":
        setConn("the stream closed: " + ((ev.data && ev.data.reason) || "balancer shutting down"));
        break;
    }
  }

  function onMembership(g, ev) {
    if (!g || !g.status) return;
    const seen = new Set();
    let unknown = false;
    for (const r of ev.data.replicas || []) {
      seen.add(r.id);
      const was = g.states.get(r.id);
      if (was === undefined) {
        unknown = true;
        log("health", ev.group, "replica " + r.id + " joined (" + r.address + "), " + r.state, ev.time);
      } else if (was !== r.state) {
        log("health", ev.group, "replica " + r.id + ": " + was + " → " + r.state, ev.time);
      }
      g.states.set(r.id, r.state);
      const cur = (g.status.replicas || []).find((x) => x.id === r.id);
      if (cur) { cur.state = r.state; renderReplica(g, cur); }
    }
    for (const id of [...g.states.keys()]) {
      if (!seen.has(id)) {
        log("health", ev.group, "replica " + id + " left", ev.time);
        g.status.replicas = (g.status.replicas || []).filter((x) => x.id !== id);
        dropReplica(g, id);
      }
    }
    divergedMembership(g, ev.data.replicas || []);
    if (unknown) {
      call("GET", "groups/" + encodeURIComponent(ev.group)).then((st) => setStatus(st), (e) => showError("reading group " + ev.group, e));
    }
  }

  function onStep(g, ev) {
    if (!g || !g.status) return;
    const d = ev.data;
    if (d.connections !== undefined || d.sessions !== undefined) {
      g.connections = d.connections; g.sessions = d.sessions;
      renderFacts(g);
    }
    for (const r of d.replicas || []) {
      const cur = (g.status.replicas || []).find((x) => x.id === r.id);
      if (!cur) continue;
      Object.assign(cur, r);
      const was = g.advisories.get(r.id);
      const now = r.advisory + "/" + r.epoch;
      if (was !== now && r.advisory && (was !== undefined || r.advisory !== "nominal")) {
        log("advisory", ev.group, "replica " + r.id + " told " + r.advisory + (r.shed ? ", shed " + num(r.shed, 1) : "") +
          (ev.instance ? " by leader " + ev.instance : ""), ev.time);
      }
      g.advisories.set(r.id, now);
      renderReplica(g, cur);
      point(g, cur);
    }
    renderLag(g);
    const moves = d.moves || [];
    const items = moves.map((m) => {
      const key = m.client + "|" + m.from + "|" + m.to;
      if (!g.planned.has(m.client) || g.planned.get(m.client) !== m.from) {
        log("move", ev.group, "planned: client " + m.client + " from " + m.from + " to " + m.to + " (" + num(m.rate, 1) + " calls/s)" +
          (ev.instance ? " by leader " + ev.instance : ""), ev.time);
      }
      g.planned.set(m.client, m.from);
      return el("li", { "data-move": key }, "client ", el("code", { text: m.client }), " from ", el("code", { text: m.from }),
        " to ", el("code", { text: m.to }), " (" + num(m.rate, 1) + " calls/s)");
    });
    g.view.moves.replaceChildren(...items);
  }

  // ---- the stream ----
  function stopStream() {
    if (stream) stream.abort();
    stream = null;
    clearTimeout(retryTimer);
  }

  async function follow() {
    stopStream();
    const ctl = new AbortController();
    stream = ctl;
    const h = headers({ Accept: "text/event-stream" });
    if (lastId !== null) h["Last-Event-ID"] = lastId;
    try {
      const res = await fetch(new URL("events", api), { headers: h, cache: "no-store", signal: ctl.signal });
      if (res.status === 401) { askToken(); return; }
      if (!res.ok) {
        let body = null;
        try { body = await res.json(); } catch (_) { /* not JSON */ }
        throw new APIError(res.status, body);
      }
      setConn("live: following /v1/events");
      retry = 1000;
      await readSSE(res.body, onSSE);
      if (stream === ctl) throw new Error("the stream ended");
    } catch (e) {
      if (ctl.signal.aborted) return;
      setConn("disconnected (" + (e.message || e) + "); reconnecting in " + Math.round(retry / 1000) + " s");
      retryTimer = setTimeout(follow, retry);
      retry = Math.min(retry * 2, 15000);
    }
  }

  function onSSE(msg) {
    if (msg.id !== null) lastId = msg.id;
    let ev;
    try { ev = JSON.parse(msg.data); } catch (_) { return; }
    try { onEvent(msg.event || ev.type, ev); } catch (e) { showError("showing a " + msg.event + " event", e); }
  }

  // readSSE parses a text/event-stream body (the WHATWG rules: fields
  // id, event, data; comments; a blank line dispatches) and calls onMsg
  // with each message until the body ends.
  async function readSSE(body, onMsg) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    let data = [], event = "", id = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith("\r")) line = line.slice(0, -1);
        if (line === "") {
          if (data.length) onMsg({ id, event, data: data.join("\n") });
          data = []; event = ""; id = null;
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) val = val.slice(1);
        if (field === "data") data.push(val);
        else if (field === "event") event = val;
        else if (field === "id" && !val.includes("\0")) id = val;
      }
    }
  }

  // ---- actions ----
  async function act(group, id, action) {
    clearErrors();
    const path = "groups/" + encodeURIComponent(group) + "/replicas/" + encodeURIComponent(id);
    try {
      const res = action === "remove" ? await call("DELETE", path) : await call("POST", path + "/" + action);
      setConn(action + " " + id + ": " + ((res && res.state) || "done"));
      const g = groups.get(group);
      const cur = g && g.status && (g.status.replicas || []).find((x) => x.id === id);
      if (cur && res && res.state) { cur.state = res.state; g.states.set(id, res.state); renderReplica(g, cur); }
    } catch (e) {
      showError(action + " " + id, e);
    }
  }

  function confirmRemove(group, id, button) {
    if (button.dataset.armed) {
      delete button.dataset.armed;
      button.textContent = "Remove";
      act(group, id, "remove");
      return;
    }
    button.dataset.armed = "1";
    button.textContent = "Confirm remove";
    setTimeout(() => { if (button.isConnected && button.dataset.armed) { delete button.dataset.armed; button.textContent = "Remove"; } }, 5000);
  }

  async function changeStrategy(group, strategy, paramsJSON) {
    clearErrors();
    const g = groups.get(group);
    const patch = {};
    if (strategy && (!g || !g.status || strategy !== g.status.strategy)) patch.strategy = strategy;
    if (paramsJSON) {
      let p;
      try { p = JSON.parse(paramsJSON); } catch (e) { showError("params", new Error("not JSON: " + e.message)); return; }
      if (p === null || typeof p !== "object" || Array.isArray(p)) { showError("params", new Error("must be a JSON object, such as {\"tolerance\": 1.1}")); return; }
      patch.params = p;
    }
    if (!patch.strategy && !patch.params) { setConn("nothing to change in " + group); return; }
    try {
      const st = await call("PATCH", "groups/" + encodeURIComponent(group), patch);
      setStatus(st);
      g.view.params.value = "";
      setConn(group + ": strategy " + st.strategy + " (" + paramsText(st.params) + ")");
    } catch (e) {
      showError("changing " + group, e);
    }
  }

  // ---- start ----
  async function start() {
    stopStream();
    clearErrors();
    setConn("loading…");
    try {
      const all = await call("GET", "groups");
      for (const st of all.groups || []) setStatus(st);
      $("nogroups").hidden = groups.size > 0;
    } catch (e) {
      if (e.status !== 401) { showError("reading the groups", e); setConn("cannot read the groups"); }
      return;
    }
    $("forget").hidden = !token();
    await loadCluster();
    clusterFresh = true;
    follow();
  }
  start();
})();
