/* crseval session viewer (crseval.reports.viewer): plain DOM, no framework, no network.
   Data arrive through window.crsevalData(payload) from list.js and data/<n>.js (script tags).
   Every string of a session is set with textContent or as a text node, never parsed as markup. */
(function () {
  "use strict";

  var PAGE = 100;
  var state = {
    data: null,
    rows: [],
    byId: new Map(), /* session id -> row; a Map: an id from the address is never a property name */
    columns: [],
    filtered: [],
    filter: { system: "", text: "", where: "" },
    whereError: "",
    sort: { key: "", dir: 1 },
    cursor: 0,
    view: "list",
    session: null,
    side: null,
    sideFrom: null,
    chunks: {},
    pending: {},
    started: false
  };
  var viewer = { state: state, readyAt: null };
  window.crsevalViewer = viewer;

  /* ---------- small DOM helpers (text only) ---------- */

  function $(id) {
    return document.getElementById(id);
  }

  function el(tag, cls, children) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    append(node, children);
    return node;
  }

  function append(node, children) {
    if (children === undefined || children === null) return node;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (child) {
      if (child === undefined || child === null || child === false) return;
      if (Array.isArray(child)) append(node, child);
      else if (typeof child === "string" || typeof child === "number") node.appendChild(document.createTextNode(String(child)));
      else node.appendChild(child);
    });
    return node;
  }

  function titled(node, text) {
    node.title = text;
    return node;
  }

  function fmt(value) {
    if (value === null || value === undefined) return "–";
    if (typeof value !== "number") return String(value);
    if (Number.isInteger(value)) return String(value);
    return value.toFixed(3);
  }

  function chip(text, kind, tip) {
    var node = el("span", "chip " + (kind || ""), text);
    if (tip) node.title = tip;
    return node;
  }

  function chips(titles, kind, tip) {
    return (titles || []).map(function (title) {
      return chip(title, kind, tip);
    });
  }

  function concept(c) {
    if (!c) return "";
    return c.field + ": " + c.value;
  }

  function showError(text) {
    var node = $("error");
    node.textContent = text;
    node.hidden = false;
  }

  /* ---------- data loading ---------- */

  window.crsevalData = function (payload) {
    if (payload.kind === "list") onList(payload);
    else if (payload.kind === "chunk") onChunk(payload);
  };

  viewer.missing = function (name) {
    showError("Could not load " + name + ": keep it beside index.html (and the data/ folder).");
  };

  function onList(data) {
    state.data = data;
    var f = data.fields;
    var at = {};
    f.forEach(function (name, i) {
      at[name] = i;
    });
    state.columns = data.columns;
    state.visible = {};
    data.columns.forEach(function (c) {
      state.visible[c.name] = c.visible;
    });
    var nf = f.length;
    state.rows = data.rows.map(function (r, order) {
      var m = {};
      data.columns.forEach(function (c, i) {
        m[c.name] = r[nf + i];
      });
      var row = {
        id: r[at.id],
        system: r[at.system],
        session_index: r[at.session_index],
        seed: r[at.seed],
        profile: r[at.profile],
        trial: r[at.trial],
        turns: r[at.turns],
        ending: r[at.ending],
        chunk: r[at.chunk],
        m: m,
        order: order
      };
      row.hay = [row.id, row.system, row.profile || "", row.ending || "", "#" + row.session_index]
        .join(" ")
        .toLowerCase();
      state.byId.set(row.id, row);
      return row;
    });
  }

  function onChunk(payload) {
    state.chunks[payload.chunk] = payload.sessions;
    var waiting = state.pending[payload.chunk] || [];
    delete state.pending[payload.chunk];
    waiting.forEach(function (done) {
      done();
    });
  }

  function loadChunks(numbers, done) {
    var missing = numbers.filter(function (n, i) {
      return !state.chunks[n] && numbers.indexOf(n) === i;
    });
    var left = missing.length;
    if (!left) return done();
    missing.forEach(function (n) {
      var first = !state.pending[n];
      (state.pending[n] = state.pending[n] || []).push(function () {
        left -= 1;
        if (!left) done();
      });
      if (!first) return;
      var script = document.createElement("script");
      script.src = "data/" + n + ".js";
      script.onerror = function () {
        viewer.missing("data/" + n + ".js");
      };
      document.head.appendChild(script);
    });
  }

  function sessionData(row) {
    var chunk = state.chunks[row.chunk];
    return chunk ? chunk[row.id] : null;
  }

  /* ---------- filtering and sorting ---------- */

  var FIELDS = {
    id: "session",
    system: "system",
    session_index: "user",
    trial: "trial",
    profile: "profile",
    turns: "turns",
    ending: "ending"
  };

  function value(row, key) {
    return Object.prototype.hasOwnProperty.call(FIELDS, key) ? row[key] : row.m[key];
  }

  var OPS = {
    "<": function (a, b) { return a < b; },
    "<=": function (a, b) { return a <= b; },
    ">": function (a, b) { return a > b; },
    ">=": function (a, b) { return a >= b; },
    "=": function (a, b) { return a === b; },
    "==": function (a, b) { return a === b; },
    "!=": function (a, b) { return a !== b; }
  };
  var NUMBER = "(-?(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][-+]?\\d+)?)";
  var SIMPLE = new RegExp("^([A-Za-z_][A-Za-z0-9_]*)\\s*(<=|>=|==|!=|<|>|=)\\s*" + NUMBER + "$");
  var RANGE = new RegExp("^" + NUMBER + "\\s*(<=|<)\\s*([A-Za-z_][A-Za-z0-9_]*)\\s*(<=|<)\\s*" + NUMBER + "$");

  function known(name) {
    return name === "session_index" || name === "trial" || name === "turns" ||
      state.columns.some(function (c) { return c.name === name; });
  }

  /* "tas < 0.3, success = 1" -> [{key, op, number}], or throws a message */
  function parseWhere(text) {
    var tests = [];
    text.split(/,|&&|\band\b/).forEach(function (part) {
      part = part.trim();
      if (!part) return;
      var m = SIMPLE.exec(part);
      if (m) {
        if (!known(m[1])) throw "no column " + m[1];
        tests.push({ key: m[1], op: m[2], number: parseFloat(m[3]) });
        return;
      }
      m = RANGE.exec(part);
      if (m) {
        if (!known(m[3])) throw "no column " + m[3];
        tests.push({ key: m[3], op: m[2] === "<" ? ">" : ">=", number: parseFloat(m[1]) });
        tests.push({ key: m[3], op: m[4], number: parseFloat(m[5]) });
        return;
      }
      throw "cannot read \u201c" + part + "\u201d (write e.g. tas < 0.3)";
    });
    return tests;
  }

  function applyFilter() {
    var f = state.filter;
    var words = f.text.toLowerCase().split(/\s+/).filter(Boolean);
    var tests = [];
    state.whereError = "";
    try {
      tests = parseWhere(f.where);
    } catch (message) {
      state.whereError = String(message);
    }
    var out = [];
    var rows = state.rows;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      if (f.system && row.system !== f.system) continue;
      var ok = true;
      for (var w = 0; w < words.length && ok; w++) ok = row.hay.indexOf(words[w]) !== -1;
      for (var t = 0; t < tests.length && ok; t++) {
        var v = value(row, tests[t].key);
        ok = typeof v === "number" && OPS[tests[t].op](v, tests[t].number);
      }
      if (ok) out.push(row);
    }
    sortRows(out);
    state.filtered = out;
    state.cursor = Math.min(state.cursor, Math.max(out.length - 1, 0));
    return out.length;
  }

  function sortRows(rows) {
    var key = state.sort.key;
    var dir = state.sort.dir;
    if (!key) {
      rows.sort(function (a, b) { return a.order - b.order; });
      return;
    }
    rows.sort(function (a, b) {
      var x = value(a, key);
      var y = value(b, key);
      var xm = x === null || x === undefined;
      var ym = y === null || y === undefined;
      if (xm || ym) return xm === ym ? a.order - b.order : xm ? 1 : -1; /* missing values last */
      if (x < y) return -dir;
      if (x > y) return dir;
      return a.order - b.order;
    });
  }

  /* ---------- the list ---------- */

  function listColumns() {
    var cols = [
      { key: "id", label: "session", cls: "c-id" },
      { key: "system", label: "system", cls: "c-system" },
      { key: "session_index", label: "user", cls: "c-num", tip: "session index: the same seeded user in every system" }
    ];
    if (state.data.trials) cols.push({ key: "trial", label: "trial", cls: "c-num" });
    if (state.data.profiles) cols.push({ key: "profile", label: "profile", cls: "c-text" });
    cols.push({ key: "turns", label: "turns", cls: "c-num" });
    cols.push({ key: "ending", label: "ending", cls: "c-text" });
    state.columns.forEach(function (c) {
      if (!state.visible[c.name]) return;
      var arrow = c.better > 0 ? " (higher is better)" : c.better < 0 ? " (lower is better)" : "";
      cols.push({ key: c.name, label: c.name.replace(/_/g, " "), cls: "c-metric", metric: true,
        tip: c.name + ": " + c.label + " [" + c.unit + "]" + arrow });
    });
    return cols;
  }

  /* column widths in px (as in viewer.css); a metric column gets at least METRIC_WIDTH */
  var WIDTHS = { "c-id": 170, "c-system": 110, "c-num": 54, "c-text": 80 };
  var METRIC_WIDTH = 84;

  function renderHead() {
    var tr = el("tr");
    var cols = listColumns();
    $("list").style.minWidth = cols.reduce(function (sum, c) {
      return sum + (WIDTHS[c.cls] || METRIC_WIDTH);
    }, 0) + "px";
    cols.forEach(function (c) {
      var mark = state.sort.key === c.key ? (state.sort.dir > 0 ? " ▲" : " ▼") : "";
      var th = el("th", c.cls + (state.sort.key === c.key ? " sorted" : ""), [c.label, mark]);
      th.title = (c.tip || c.label) + " — click to sort";
      th.dataset.key = c.key;
      th.addEventListener("click", function () {
        if (state.sort.key === c.key) {
          if (state.sort.dir > 0) state.sort.dir = -1;
          else state.sort = { key: "", dir: 1 };
        } else {
          state.sort = { key: c.key, dir: c.metric ? -1 : 1 };
          var col = state.columns.filter(function (x) { return x.name === c.key; })[0];
          if (col && col.better < 0) state.sort.dir = 1;
        }
        sortRows(state.filtered);
        state.cursor = 0;
        renderList();
        saveListHash();
      });
      tr.appendChild(th);
    });
    $("list-head").replaceChildren(tr);
  }

  function renderColumnChooser() {
    var box = $("column-list");
    box.replaceChildren();
    state.columns.forEach(function (c) {
      var input = el("input");
      input.type = "checkbox";
      input.checked = !!state.visible[c.name];
      input.addEventListener("change", function () {
        state.visible[c.name] = input.checked;
        renderList();
      });
      box.appendChild(titled(el("label", "", [input, " " + c.name]), c.label + " [" + c.unit + "]"));
    });
  }

  function page() {
    return Math.floor(state.cursor / PAGE);
  }

  function renderList() {
    renderHead();
    var cols = listColumns();
    var rows = state.filtered;
    var start = page() * PAGE;
    var body = document.createDocumentFragment();
    for (var i = start; i < Math.min(start + PAGE, rows.length); i++) {
      body.appendChild(listRow(rows[i], cols, i));
    }
    $("list-body").replaceChildren(body);
    var pages = Math.max(1, Math.ceil(rows.length / PAGE));
    $("page-label").textContent = "page " + (page() + 1) + " of " + pages;
    $("prev-page").disabled = page() === 0;
    $("next-page").disabled = page() >= pages - 1;
    var status = rows.length + " of " + state.rows.length + " sessions";
    if (state.whereError) status += " — where: " + state.whereError;
    $("list-status").textContent = status;
    $("list-status").classList.toggle("bad", !!state.whereError);
    $("f-where").classList.toggle("bad", !!state.whereError);
    markCursor();
  }

  function listRow(row, cols, index) {
    var tr = el("tr");
    tr.dataset.index = String(index);
    tr.dataset.id = row.id;
    cols.forEach(function (c) {
      var v = value(row, c.key);
      var td = el("td", c.cls, c.metric || c.cls === "c-num" ? fmt(v) : v === null || v === undefined ? "" : String(v));
      if (c.key === "id" || c.metric) td.title = c.key === "id" ? row.id : c.key + " = " + (v === null ? "missing" : v);
      tr.appendChild(td);
    });
    tr.addEventListener("click", function () {
      state.cursor = index;
      openRow(row);
    });
    return tr;
  }

  function markCursor() {
    var rows = $("list-body").children;
    for (var i = 0; i < rows.length; i++) {
      var on = Number(rows[i].dataset.index) === state.cursor;
      rows[i].classList.toggle("cursor", on);
      if (on && state.view === "list") scrollIntoViewIfNeeded(rows[i]);
    }
  }

  function scrollIntoViewIfNeeded(node) {
    var box = node.getBoundingClientRect();
    if (box.top < 60 || box.bottom > window.innerHeight) node.scrollIntoView({ block: "nearest" });
  }

  function moveCursor(step) {
    if (!state.filtered.length) return;
    var before = page();
    state.cursor = Math.max(0, Math.min(state.filtered.length - 1, state.cursor + step));
    if (page() !== before) {
      renderList();
      saveListHash();
    } else markCursor();
  }

  function turnPage(step) {
    var pages = Math.max(1, Math.ceil(state.filtered.length / PAGE));
    var next = Math.max(0, Math.min(pages - 1, page() + step));
    state.cursor = next * PAGE;
    renderList();
    saveListHash();
    window.scrollTo(0, 0);
  }

  /* the exposed filter call: {system, text, where} (each optional); returns the number of sessions */
  viewer.filter = function (options) {
    options = options || {};
    ["system", "text", "where"].forEach(function (key) {
      if (options[key] !== undefined) state.filter[key] = String(options[key]);
    });
    $("f-system").value = state.filter.system;
    $("f-text").value = state.filter.text;
    $("f-where").value = state.filter.where;
    state.cursor = 0;
    var n = applyFilter();
    if (state.view === "list") renderList();
    saveListHash();
    return n;
  };

  /* ---------- hash ---------- */

  function parseHash() {
    var out = Object.create(null); /* keys from the address: no inherited names such as __proto__ */
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      if (!part) return;
      var i = part.indexOf("=");
      var key = i < 0 ? part : part.slice(0, i);
      var val = i < 0 ? "" : part.slice(i + 1);
      try {
        out[decodeURIComponent(key)] = decodeURIComponent(val.replace(/\+/g, " "));
      } catch (e) {
        out[key] = val;
      }
    });
    return out;
  }

  function listHash() {
    var parts = [];
    var f = state.filter;
    if (f.system) parts.push("system=" + encodeURIComponent(f.system));
    if (f.text) parts.push("q=" + encodeURIComponent(f.text));
    if (f.where) parts.push("where=" + encodeURIComponent(f.where));
    if (state.sort.key) parts.push("sort=" + (state.sort.dir < 0 ? "-" : "") + encodeURIComponent(state.sort.key));
    if (page() > 0) parts.push("page=" + (page() + 1));
    return "#" + parts.join("&");
  }

  function setHash(hash, replace) {
    if (location.hash === hash || (hash === "#" && !location.hash)) return false;
    try {
      if (replace) history.replaceState(null, "", hash === "#" ? location.pathname + location.search : hash);
      else location.hash = hash;
    } catch (e) {
      location.hash = hash;
    }
    return true;
  }

  /* navigate: a new history entry, or the same view drawn again when the hash is already there */
  function go(hash) {
    if (!setHash(hash)) route();
  }

  function saveListHash() {
    if (state.view === "list") setHash(listHash(), true);
  }

  function sideHash(index, trial, systems) {
    var hash = "#side=" + index;
    if (trial) hash += "&trial=" + trial;
    if (systems) hash += "&systems=" + systems.map(encodeURIComponent).join(",");
    return hash;
  }

  function route() {
    var h = parseHash();
    if (h.session !== undefined) {
      var row = state.byId.get(h.session);
      if (!row) return showList("no such session: " + h.session);
      return showSession(row);
    }
    if (h.side !== undefined) {
      var systems = h.systems ? h.systems.split(",").filter(Boolean) : null;
      return showSide(Number(h.side), Number(h.trial || 0), systems);
    }
    state.filter = { system: h.system || "", text: h.q || "", where: h.where || "" };
    if (h.sort) state.sort = { key: h.sort.replace(/^-/, ""), dir: h.sort.charAt(0) === "-" ? -1 : 1 };
    else state.sort = { key: "", dir: 1 };
    $("f-system").value = state.filter.system;
    $("f-text").value = state.filter.text;
    $("f-where").value = state.filter.where;
    var keep = state.cursor;
    applyFilter();
    var first = h.page ? (Number(h.page) - 1) * PAGE : 0;
    /* back from a session: the cursor stays on it when it is on the page the hash names */
    state.cursor = keep >= first && keep < first + PAGE ? keep : first;
    state.cursor = Math.max(0, Math.min(state.cursor, state.filtered.length - 1));
    showList();
  }

  /* ---------- views ---------- */

  function setView(name) {
    state.view = name;
    $("list-view").hidden = name !== "list";
    $("session-view").hidden = name !== "session";
    $("side-view").hidden = name !== "side";
    document.body.dataset.view = name;
    $("error").hidden = true;
    renderCrumbs();
  }

  function renderCrumbs() {
    var nav = $("crumbs");
    var items = [link("Sessions", listHash())];
    if (state.view === "session" && state.session) items.push(el("span", "", "› " + state.session.id));
    if (state.view === "side" && state.side) {
      items.push(el("span", "", "› user #" + state.side.index + (state.side.trial ? " trial " + state.side.trial : "") + " side by side"));
    }
    nav.replaceChildren.apply(nav, items);
  }

  function link(text, hash) {
    var a = el("a", "", text);
    a.href = hash === "#" ? "#" : hash;
    return a;
  }

  function showList(message) {
    setView("list");
    renderList();
    if (message) showError(message);
    if (!viewer.readyAt) {
      viewer.readyAt = performance.now();
      document.body.dataset.ready = "1";
    }
  }

  function openRow(row) {
    go("#session=" + encodeURIComponent(row.id));
  }

  function showSession(row) {
    state.session = row;
    var i = state.filtered.indexOf(row);
    if (i >= 0) state.cursor = i;
    setView("session");
    var view = $("session-view");
    view.replaceChildren(el("p", "status", "loading " + row.id + " …"));
    loadChunks([row.chunk], function () {
      if (state.session !== row || state.view !== "session") return;
      renderSession(row, sessionData(row));
    });
  }

  function toolbar(buttons) {
    var bar = el("div", "toolbar");
    buttons.forEach(function (b) {
      var button = el("button", b.cls || "", b.label);
      button.type = "button";
      if (b.tip) button.title = b.tip;
      button.addEventListener("click", b.run);
      bar.appendChild(button);
    });
    return bar;
  }

  function renderSession(row, s) {
    var view = $("session-view");
    if (!s) {
      view.replaceChildren(el("p", "error", "no data for " + row.id));
      return;
    }
    var facts = el("dl", "facts");
    function fact(name, val) {
      if (val === null || val === undefined || val === "") return;
      append(facts, [el("dt", "", name), el("dd", "", String(val))]);
    }
    fact("system", s.system);
    fact("user", "#" + s.session_index);
    if (state.data.trials) fact("trial", s.trial);
    fact("seed", s.seed);
    fact("profile", s.profile);
    fact("turns", s.turns.length);
    if (s.ending) fact("ending", s.ending.reason + " after turn " + s.ending.turn);
    if (s.labels && s.labels.satisfaction) fact("human label", s.labels.satisfaction);
    if (s.source_file) fact("source", s.source_file);

    var head = el("div", "session-head", [
      el("h2", "", s.id),
      toolbar([
        { label: "← list", tip: "Escape", run: goBack },
        { label: "◀ previous", tip: "k", run: function () { step(-1); } },
        { label: "next ▶", tip: "j", run: function () { step(1); } },
        { label: "side by side", tip: "s", cls: "primary", run: toggleSide }
      ])
    ]);
    var parts = [head, facts];
    if (s.liked_titles.length) parts.push(el("div", "liked", [el("span", "label", "liked films "), chips(s.liked_titles, "liked")]));
    parts.push(metricPills(row));
    s.judges.forEach(function (j) {
      parts.push(judgeBlock(j));
    });
    var imported = s.turns.every(function (t) { return !t.user_meta; });
    var tooled = s.turns.some(function (t) { return !!t.tools; });
    if (imported) parts.push(el("p", "note", "Imported dialogue: no simulated user, so no hidden state."));
    parts.push(el("p", "legend muted", [
      "films: ", chip("recommended", "rec"), " ", chip("mentioned", "mention"), " ", chip("outside the catalog", "unknown"),
      tooled ? [" ", chip("committed through recommend", "rec committed"), "  · under each reply: its tool calls (click to unfold)"] : null,
      imported ? null : ["  · beside each user turn: the simulated user's hidden state (gold constraints: ",
        chip("said", "status said"), " ", chip("on ask", "status on-ask"), " ", chip("hidden", "status hidden"), ")"]
    ]));
    var chat = el("div", "chat" + (imported ? " no-state" : ""));
    var shifts = {};
    s.shift_events.forEach(function (e) {
      shifts[e.turn] = e;
    });
    s.turns.forEach(function (t) {
      if (shifts[t.turn]) chat.appendChild(shiftLine(shifts[t.turn]));
      chat.appendChild(turnBlock(t, imported));
    });
    if (s.ending) chat.appendChild(endingBlock(s.ending, imported));
    parts.push(chat);
    view.replaceChildren.apply(view, parts);
    window.scrollTo(0, 0);
    document.body.dataset.session = s.id;
    viewer.renderedAt = performance.now();
  }

  function metricPills(row) {
    var box = el("div", "metrics");
    var shown = el("div", "pills");
    var rest = el("div", "pills");
    state.columns.forEach(function (c) {
      var v = row.m[c.name];
      if (v === null || v === undefined) return;
      var pill = titled(el("span", "pill", [el("b", "", c.name.replace(/_/g, " ")), " " + fmt(v)]), c.label + " [" + c.unit + "] = " + v);
      (state.visible[c.name] ? shown : rest).appendChild(pill);
    });
    box.appendChild(shown);
    if (rest.children.length) box.appendChild(el("details", "more", [el("summary", "", "all metrics (" + rest.children.length + " more)"), rest]));
    return box;
  }

  function judgeBlock(j) {
    var box = el("div", "judge");
    box.appendChild(el("h3", "", j.judge === "judge" ? "Judge" : "Judge " + j.judge));
    if (j.missing_reason) box.appendChild(el("p", "note", "no judgement: " + j.missing_reason));
    j.scores.forEach(function (s) {
      var score = [el("b", "", s.criterion), " " + fmt(s.score)];
      if (s.sd !== null && s.sd !== undefined) score.push(el("span", "muted", " ± " + fmt(s.sd)));
      if (s.geval !== null && s.geval !== undefined) score.push(el("span", "muted", " (G-Eval " + fmt(s.geval) + ")"));
      box.appendChild(el("div", "criterion", [el("div", "score", score), s.rationale ? el("p", "rationale", s.rationale) : null]));
    });
    return box;
  }

  function shiftLine(e) {
    var text = "⇄ shift at turn " + e.turn + ": " + concept(e.from_focus) + " → " + concept(e.to_focus);
    if (e.bridge) text += " (bridge " + concept(e.bridge) + ")";
    if (e.from_anchor || e.to_anchor) text += "; anchor " + (e.from_anchor || "?") + " → " + (e.to_anchor || "?");
    return el("div", "shift-line", text);
  }

  function turnMetrics(t) {
    var names = state.data.turn_metrics;
    var parts = [];
    names.forEach(function (n) {
      if (t.metrics[n.name] === undefined) return;
      parts.push(titled(el("span", "tm", [el("b", "", n.name.toUpperCase()), " " + fmt(t.metrics[n.name])]), n.label + " = " + t.metrics[n.name]));
    });
    return parts.length ? el("div", "turn-metrics", parts) : null;
  }

  /* the turn's recommendations: the titles it committed through the recommend tool (marked), then any
     other recommended title the scorer read in the text */
  function recChips(t) {
    var committed = t.tools && t.tools.committed;
    if (!committed) return chips(t.recommended_titles, "rec", "recommended (catalog)");
    var others = (t.recommended_titles || []).filter(function (title) { return committed.indexOf(title) < 0; });
    return [chips(committed, "rec committed", "recommended: committed through the recommend tool"),
      chips(others, "rec", "recommended (catalog)")];
  }

  var TOOL_STATUS = { ok: "ok", error: "error", ignored: "ignored" }; /* status -> class "s-<status>"; any other: "s-other" */
  var TOOL_END = {
    message: "ended with a message, nothing committed",
    bound: "ended at the call bound",
    error: "ended: the model call failed"
  };

  function plural(n, one, many) {
    return n + " " + (n === 1 ? one : many);
  }

  /* a tool-using system's calls in the turn, folded: the summary counts them (names, errors, ignored calls,
     how the turn ended unless by a commit); inside, one row per call (the first 50 the chunk carries) */
  function toolFold(tools) {
    if (!tools) return null;
    var names = tools.names.map(function (pair) {
      return pair[1] > 1 ? pair[0] + " ×" + pair[1] : pair[0];
    });
    if (tools.more_names) names.push("… " + plural(tools.more_names, "other", "others"));
    var summary = [el("span", "tool-count", plural(tools.count, "tool call", "tool calls") + (names.length ? ": " + names.join(", ") : ""))];
    if (tools.errors) summary.push(el("span", "tool-flag s-error", plural(tools.errors, "error", "errors")));
    if (tools.ignored) summary.push(el("span", "tool-flag s-ignored", tools.ignored + " ignored"));
    if (tools.end && tools.end !== "recommend") {
      var ended = Object.prototype.hasOwnProperty.call(TOOL_END, tools.end) ? TOOL_END[tools.end] : "ended: " + tools.end;
      summary.push(el("span", "tool-end", ended));
    }
    if (!tools.count) return el("div", "tools none", summary);
    var rows = el("tbody");
    tools.calls.forEach(function (c) {
      var status = Object.prototype.hasOwnProperty.call(TOOL_STATUS, c.status) ? TOOL_STATUS[c.status] : "other";
      var outcome = [];
      if (c.result !== null && c.result !== undefined) outcome.push(el("span", "tool-result", c.result));
      if (c.error !== null && c.error !== undefined) outcome.push(el("span", "tool-error", c.error));
      var tr = el("tr", "tool-call s-" + status, [
        el("td", "tool-step", c.step === null ? "–" : String(c.step)),
        el("td", "tool-name", c.name),
        titled(el("td", "tool-args" + (c.raw ? " raw" : ""), c.arguments),
          c.raw ? "not JSON: an excerpt of what the model sent" : "the arguments, as compact JSON"),
        el("td", "tool-status", el("span", "tool-status-chip s-" + status, c.status)),
        el("td", "tool-outcome", outcome),
        el("td", "tool-latency", c.latency_s === null ? "–" : fmt(c.latency_s) + " s")
      ]);
      tr.dataset.status = status;
      rows.appendChild(tr);
    });
    var head = el("thead", "", el("tr", "", ["step", "tool", "arguments", "status", "result / error", "latency"].map(function (h) {
      return el("th", "", h);
    })));
    var parts = [el("summary", "", summary), el("table", "tool-calls", [head, rows])];
    if (tools.more) parts.push(el("p", "tool-more", "… and " + plural(tools.more, "more call", "more calls") + " not shown (the first " + tools.calls.length + " are)"));
    return el("details", "tools", parts);
  }

  function titleChips(t) {
    var row = el("div", "chips", [
      recChips(t),
      chips(t.mentioned_titles, "mention", "mentioned (catalog)"),
      chips(t.unknown_titles, "unknown", "named, outside the catalog")
    ]);
    if (t.system_asks && t.system_asks.length) {
      append(row, chips(t.system_asks.map(function (a) { return "asks " + a; }), "ask", "the reply asks about"));
    }
    return row.children.length ? row : null;
  }

  function userChips(t) {
    var parts = [];
    var implies = t.user_implies || { accepts: [], rejects: [] };
    parts = parts.concat(chips(implies.accepts, "accept", "the user takes it"));
    parts = parts.concat(chips(implies.rejects, "reject", "the user turns it down"));
    return parts.length ? el("div", "chips", parts) : null;
  }

  /* a text the chunk carries cut (crseval.reports.viewer.TEXT_SHOWN): what it shows of how much */
  function cutNote(cut) {
    if (!cut) return null;
    return el("div", "cut", "… cut: the first " + cut.shown.toLocaleString("en") + " of " +
      cut.chars.toLocaleString("en") + " characters shown (the session's shard holds it whole)");
  }

  /* two turns' texts the same, a cut text by its length and digest too */
  function sameText(a, b, cut) {
    var x = a[cut], y = b[cut];
    var key = cut === "system_cut" ? "system_text" : "user_text";
    if (a[key] !== b[key] || !x !== !y) return false;
    return !x || (x.chars === y.chars && x.sha256 === y.sha256);
  }

  function turnBlock(t, imported) {
    var user = el("div", "msg user", [
      el("div", "who", "user · turn " + t.turn),
      el("div", "text", t.user_text),
      cutNote(t.user_cut),
      userChips(t)
    ]);
    var system = el("div", "msg system", [
      el("div", "who", "system"),
      el("div", "text", t.system_text || "(no reply)"),
      cutNote(t.system_cut),
      titleChips(t),
      turnMetrics(t),
      toolFold(t.tools)
    ]);
    var block = el("div", "turn", [el("div", "pair", [user, system])]);
    block.dataset.turn = String(t.turn);
    if (!imported) block.appendChild(hiddenState(t.user_meta));
    return block;
  }

  function hiddenState(meta) {
    var box = el("aside", "state");
    if (!meta) {
      box.appendChild(el("p", "muted", "no hidden state"));
      return box;
    }
    var head = el("div", "state-head", [chip(meta.stage, meta.stage === "shift" ? "stage shift" : "stage", "the turn's main act")]);
    if (meta.shift_event && meta.stage !== "shift") head.appendChild(chip("shift", "shift", "the user shifts at this turn"));
    if (meta.plan_event && meta.plan_event !== "shift") head.appendChild(chip(meta.plan_event, "shift", "what the plan changed at this turn"));
    if (meta.cannot_judge) head.appendChild(chip("cannot judge", "warn", "the reply named only films outside the catalog"));
    if (meta.paraphrase) head.appendChild(chip("paraphrase " + meta.paraphrase.verdict, "muted-chip", meta.paraphrase.template_text || ""));
    box.appendChild(head);
    box.appendChild(el("div", "kv", [el("span", "k", "focus"), el("span", "v", meta.focus_field + ": " + meta.focus_value)]));
    if (meta.bridge) box.appendChild(el("div", "kv", [el("span", "k", "bridge"), el("span", "v", concept(meta.bridge))]));
    if (meta.anchor_title) box.appendChild(el("div", "kv", [el("span", "k", "anchor"), el("span", "v", meta.anchor_title)]));
    var list = el("ul", "gold");
    var revealed = {};
    (meta.revealed || []).forEach(function (c) {
      revealed[c.field + "\u0000" + c.value + "\u0000" + c.negated] = true;
    });
    (meta.constraints || []).forEach(function (c, i) {
      var said = meta.said ? meta.said[i] : null;
      var disclosure = meta.disclosure ? meta.disclosure[i] : null;
      var status = said ? "said" : disclosure === "hidden" ? "hidden" : disclosure === "on_ask" ? "on ask" : said === false ? "not yet" : "";
      var item = el("li", said ? "said" : "unsaid", [
        el("span", "c", (c.negated ? "not " : "") + c.field + ": " + c.value),
        status ? chip(status, "status " + status.replace(" ", "-")) : null,
        revealed[c.field + "\u0000" + c.value + "\u0000" + c.negated] ? chip("revealed now", "status revealed") : null
      ]);
      list.appendChild(item);
    });
    box.appendChild(el("div", "k", "gold constraints"));
    box.appendChild(list);
    if (meta.stated && meta.stated.length) {
      box.appendChild(el("div", "kv", [el("span", "k", "says"), el("span", "v", meta.stated.map(function (s) {
        return (s.role === "exclusion" ? "not " : s.role === "context" ? "(context) " : "") + s.field + ": " + s.value;
      }).join("; "))]));
    }
    if (meta.titles && meta.titles.length) box.appendChild(el("div", "kv", [el("span", "k", "names"), el("span", "v", chips(meta.titles, "mention"))]));
    return box;
  }

  function endingBlock(ending, imported) {
    var parts = [];
    if (ending.farewell) {
      parts.push(el("div", "pair", [el("div", "msg user farewell", [el("div", "who", "user · leaves"), el("div", "text", ending.farewell)])]));
    }
    var what = ending.reason === "abandoned" ? "The user left after turn " + ending.turn + " (abandoned)." : "Ended at the turn limit (turn " + ending.turn + ").";
    parts.push(el("p", "note end", what));
    return el("div", "turn ending" + (imported ? "" : " with-gap"), parts);
  }

  /* ---------- side by side ---------- */

  function groupRows(index, trial) {
    return state.rows.filter(function (r) {
      return r.session_index === index && (r.trial || 0) === trial;
    });
  }

  function showSide(index, trial, systems) {
    var rows = groupRows(index, trial);
    if (!rows.length) return showList("no sessions of user #" + index + (trial ? " trial " + trial : ""));
    var seeded = rows.filter(function (r) { return r.seed !== null && r.seed !== undefined; });
    var chosen = systems || (seeded.length ? seeded : rows).map(function (r) { return r.system; });
    state.side = { index: index, trial: trial, rows: rows, systems: chosen };
    setView("side");
    $("side-view").replaceChildren(el("p", "status", "loading …"));
    loadChunks(rows.map(function (r) { return r.chunk; }), function () {
      if (state.view === "side" && state.side && state.side.rows === rows) renderSide();
    });
  }

  function renderSide() {
    var side = state.side;
    var view = $("side-view");
    var picks = el("div", "picks", [el("span", "label", "systems ")]);
    side.rows.forEach(function (r) {
      var input = el("input");
      input.type = "checkbox";
      input.checked = side.systems.indexOf(r.system) >= 0;
      input.value = r.system;
      input.addEventListener("change", function () {
        var chosen = side.rows
          .map(function (x) { return x.system; })
          .filter(function (name) {
            return name === r.system ? input.checked : side.systems.indexOf(name) >= 0;
          });
        side.systems = chosen;
        setHash(sideHash(side.index, side.trial, chosen), true);
        renderSide();
      });
      picks.appendChild(el("label", "pick", [input, " " + r.system]));
    });
    var head = el("div", "session-head", [
      el("h2", "", "User #" + side.index + (side.trial ? ", trial " + side.trial : "") + " side by side"),
      toolbar([
        { label: "← back", tip: "Escape", run: goBack },
        { label: "single session", tip: "s", cls: "primary", run: toggleSide }
      ])
    ]);
    var rows = side.rows.filter(function (r) { return side.systems.indexOf(r.system) >= 0; });
    var parts = [head, picks];
    if (!rows.length) {
      parts.push(el("p", "note", "Choose at least one system."));
      view.replaceChildren.apply(view, parts);
      return;
    }
    var sessions = rows.map(sessionData).filter(Boolean);
    rows = rows.filter(function (r) { return sessionData(r); });
    var turns = [];
    sessions.forEach(function (s) {
      s.turns.forEach(function (t) {
        if (turns.indexOf(t.turn) < 0) turns.push(t.turn);
      });
    });
    turns.sort(function (a, b) { return a - b; });
    var grid = el("div", "side-grid");
    grid.style.gridTemplateColumns = "3.2em repeat(" + rows.length + ", minmax(0, 1fr))";
    grid.appendChild(titled(el("div", "side-corner", "#"), "turn"));
    rows.forEach(function (r) {
      var a = link(r.system, "#session=" + encodeURIComponent(r.id));
      a.title = "open " + r.id;
      var facts = [];
      if (r.m.success !== undefined) facts.push("success " + fmt(r.m.success));
      if (r.m.tas !== undefined) facts.push("TAS " + fmt(r.m.tas));
      grid.appendChild(el("div", "side-head", [a, el("div", "muted", facts.join(" · "))]));
    });
    turns.forEach(function (n) {
      grid.appendChild(el("div", "side-turn", String(n)));
      var first = null;
      sessions.forEach(function (s, col) {
        var t = s.turns.filter(function (x) { return x.turn === n; })[0];
        if (!t) {
          grid.appendChild(el("div", "side-cell empty", "—"));
          return;
        }
        if (col === 0) first = t;
        var differs = col > 0 && (!first || !sameText(first, t, "system_cut"));
        var userDiffers = col > 0 && (!first || !sameText(first, t, "user_cut"));
        var cell = el("div", "side-cell" + (differs ? " differs" : ""), [
          el("div", "u" + (userDiffers ? " u-differs" : ""), [el("span", "who", "user "), t.user_text]),
          cutNote(t.user_cut),
          el("div", "s", t.system_text || "(no reply)"),
          cutNote(t.system_cut),
          titleChips(t),
          turnMetrics(t),
          toolFold(t.tools)
        ]);
        cell.dataset.system = s.system;
        cell.dataset.turn = String(n);
        if (differs) cell.title = "the reply differs from " + rows[0].system + "'s";
        grid.appendChild(cell);
      });
    });
    parts.push(el("p", "muted legend", "Highlighted: the reply differs from the first column's (" + rows[0].system + ")."));
    parts.push(grid);
    view.replaceChildren.apply(view, parts);
    document.body.dataset.side = String(side.index);
    viewer.renderedAt = performance.now();
  }

  /* ---------- navigation ---------- */

  function goBack() {
    if (state.view === "side" && state.sideFrom && state.byId.has(state.sideFrom)) {
      var from = state.sideFrom;
      state.sideFrom = null;
      return go("#session=" + encodeURIComponent(from));
    }
    state.sideFrom = null;
    if (state.view !== "list") {
      go(listHash());
    }
  }

  function toggleSide() {
    if (state.view === "side") {
      var side = state.side;
      var back = state.sideFrom && state.byId.get(state.sideFrom);
      var pick = back || side.rows.filter(function (r) { return side.systems.indexOf(r.system) >= 0; })[0] || side.rows[0];
      state.sideFrom = null;
      return go("#session=" + encodeURIComponent(pick.id));
    }
    var row = state.view === "session" ? state.session : state.filtered[state.cursor];
    if (!row) return;
    state.sideFrom = state.view === "session" ? row.id : null;
    go(sideHash(row.session_index, row.trial || 0, null));
  }

  function step(by) {
    if (!state.filtered.length) return;
    var i = state.session ? state.filtered.indexOf(state.session) : state.cursor;
    if (i < 0) i = state.cursor;
    i = Math.max(0, Math.min(state.filtered.length - 1, i + by));
    state.cursor = i;
    var row = state.filtered[i];
    if (state.view === "side") {
      state.sideFrom = null;
      go(sideHash(row.session_index, row.trial || 0, null));
    } else openRow(row);
  }

  function onKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var target = e.target;
    var typing = target && (target.tagName === "SELECT" || target.tagName === "TEXTAREA" ||
      (target.tagName === "INPUT" && target.type !== "checkbox"));
    if (typing) {
      if (e.key === "Escape" || e.key === "Enter") {
        target.blur();
        e.preventDefault();
      }
      return;
    }
    var key = e.key;
    if ((key === "Enter" || key === " ") && target && /^(BUTTON|A|SUMMARY)$/.test(target.tagName)) return;
    if (key === "/") {
      e.preventDefault();
      if (state.view !== "list") {
        state.sideFrom = null;
        setHash(listHash(), true);
        showList();
      }
      $("f-text").focus();
      return;
    }
    if (state.view === "list") {
      if (key === "j" || key === "ArrowDown") moveCursor(1);
      else if (key === "k" || key === "ArrowUp") moveCursor(-1);
      else if (key === "ArrowRight") turnPage(1);
      else if (key === "ArrowLeft") turnPage(-1);
      else if (key === "Enter") {
        if (state.filtered[state.cursor]) openRow(state.filtered[state.cursor]);
      } else if (key === "s") toggleSide();
      else return;
      e.preventDefault();
      return;
    }
    if (key === "Escape") goBack();
    else if (key === "s") toggleSide();
    else if (key === "j") step(1);
    else if (key === "k") step(-1);
    else return;
    e.preventDefault();
  }

  /* ---------- start ---------- */

  viewer.open = function (id) {
    go("#session=" + encodeURIComponent(id));
  };
  viewer.side = function (index, trial, systems) {
    go(sideHash(index, trial || 0, systems || null));
  };

  viewer.start = function () {
    if (state.started) return;
    state.started = true;
    if (!state.data) {
      showError("No session list: list.js did not load.");
      return;
    }
    if (state.data.title) {
      $("title").textContent = state.data.title;
      document.title = state.data.title;
    }
    var select = $("f-system");
    state.data.systems.forEach(function (name) {
      var option = el("option", "", name);
      option.value = name;
      select.appendChild(option);
    });
    renderColumnChooser();
    var timer = null;
    function typed() {
      clearTimeout(timer);
      timer = setTimeout(function () {
        viewer.filter({ text: $("f-text").value, where: $("f-where").value });
      }, 120);
    }
    $("f-text").addEventListener("input", typed);
    $("f-where").addEventListener("input", typed);
    select.addEventListener("change", function () {
      viewer.filter({ system: select.value });
    });
    $("prev-page").addEventListener("click", function () { turnPage(-1); });
    $("next-page").addEventListener("click", function () { turnPage(1); });
    document.addEventListener("keydown", onKey);
    window.addEventListener("hashchange", route);
    applyFilter();
    route();
    if (!viewer.readyAt) {
      /* opened on a session or side by side: the list is drawn behind it */
      setTimeout(function () {
        if (state.view !== "list") renderList();
        viewer.readyAt = performance.now();
        document.body.dataset.ready = "1";
      }, 0);
    }
  };
})();
