// leapp_lab front-end: one renderer for the Jupyter widget (anywidget) and the standalone HTML report.
//
// It draws a *view dict* built in Python (leapp_lab/views/viewdict.py); it never computes a metric,
// never talks to a kernel itself (the widget host passes callbacks) and never fetches anything.
// Every user string reaches the DOM through textContent / setAttribute; the only innerHTML is the
// graph SVG, which Python wrote with every string escaped.
//
// Stable DOM hooks (tests and users' automation rely on them):
//   tr[data-leapp-row][data-leapp-status][data-leapp-tap-status][data-leapp-first-divergent]
//   [data-leapp-node] on graph nodes, [data-leapp-hist-row][data-leapp-hist-sample] on the histogram panel.

const STATUS_ORDER = { fail: 0, uncompared: 1, pass: 2 };
const NUMERIC = new Set(["num", "int", "cos", "x"]);

function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "on") { for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn); continue; }
    e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// The one number format of every view (Python: leapp_lab/views/numfmt.py, same rules; a test feeds
// the same values through both). kind: num | int | cos | x | text | bool | shape | status.
const INT_LIMIT = 1e15;
function fmtNum(v) {
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (v === 0) return "0";
  if (Number.isInteger(v) && Math.abs(v) < INT_LIMIT) return String(v);
  // 4 significant digits, half away from zero on the exact value (toExponential's rounding)
  const [mant, exp] = Math.abs(v).toExponential(3).split("e");
  const digits = mant.replace(".", ""), e = Number(exp), sign = v < 0 ? "-" : "";
  if (e >= -3 && e <= 3) {
    const whole = e >= 0 ? digits.slice(0, e + 1) : "0";
    const frac = (e >= 0 ? digits.slice(e + 1) : "0".repeat(-e - 1) + digits).replace(/0+$/, "");
    return sign + whole + (frac ? "." + frac : "");
  }
  return sign + digits[0] + "." + digits.slice(1) + "e" + (e >= 0 ? "+" : "-") + String(Math.abs(e)).padStart(2, "0");
}

export function fmt(v, kind) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Array.isArray(v)) return "[" + v.map(x => fmt(x, kind === "shape" ? "num" : kind)).join(", ") + "]";
  if (typeof v === "number") {
    if (kind === "cos" && Number.isFinite(v)) {
      const s = Math.abs(v).toFixed(6);
      return (v < 0 && Number(s) !== 0 ? "-" : "") + s;
    }
    return fmtNum(v) + (kind === "x" ? "x" : "");
  }
  return String(v);
}

// SVG ids are page-global: a graph drawn twice on a page (or a marker on a hidden tab) must not take
// another drawing's marker. Python writes ids derived from the drawing (deterministic HTML); each
// insertion here renames them page-uniquely and rewrites the url(#id) references.
let svgSerial = 0;
function setSvg(box, svg) {
  box.innerHTML = svg || "";
  const n = ++svgSerial;
  for (const m of box.querySelectorAll("marker[id]")) {
    const old = m.id, id = old + "-" + n;
    m.id = id;
    for (const el of box.querySelectorAll("[marker-end], [marker-start]")) {
      for (const a of ["marker-end", "marker-start"]) {
        if (el.getAttribute(a) === "url(#" + old + ")") el.setAttribute(a, "url(#" + id + ")");
      }
    }
  }
}

function shapeText(s) { return s === null || s === undefined ? "?" : "[" + s.join(", ") + "]"; }

function kv(rows, cls) {
  return h("table", { class: "leapp-kv " + (cls || "") },
    h("tbody", {}, rows.filter(r => r).map(([k, v, kind]) => h("tr", {}, h("th", {}, k), h("td", {}, fmt(v, kind))))));
}

// -- graphs: one navigation helper for every graph panel ---------------------------------------------
// graphNav(opts) is the viewport of one graph (trace connectivity, FX, accuracy): zoom (wheel, +/−
// buttons, + / - keys), pan (drag, arrow keys), fit (button, f / 0) and a node search box, all driven
// through the <svg>'s viewBox. The state is a centre (cx, cy) in drawing units and a zoom k (screen px
// per unit); the viewBox always has the viewport's aspect ratio. When the viewport first gets a size
// (its tab shown), the whole graph is fitted if that stays readable, else it is shown at natural size
// centred on opts.focus() (the failing node). opts: find(query) -> [target], mark(targets),
// show(target) (centre on it), focus() -> element | null, onVisible() (the viewport got a size).
const READABLE = 0.6;   // a fitted graph below 60% of its natural size is not readable: focus instead

function svgLength(v) {
  const m = /^([\d.]+)\s*(pt|px)?$/.exec(String(v || "").trim());
  return m ? Number(m[1]) * (m[2] === "pt" ? 4 / 3 : 1) : null;
}

function graphNav(opts) {
  const view = h("div", { class: "leapp-graph leapp-graphview", tabindex: "0", "data-lm-suppress-shortcuts": "true",
                          "data-leapp-graph-view": "" });
  const search = h("input", { type: "search", class: "leapp-graphsearch", placeholder: "find node", "data-leapp-graph-search": "",
                              "data-lm-suppress-shortcuts": "true" });
  const count = h("span", { class: "leapp-muted", "data-leapp-graph-count": "" });
  const btn = (what, label, title, fn) => h("button", { class: "leapp-btn", "data-leapp-graph-zoom": what, title, on: { click: fn } }, label);
  const tools = h("span", { class: "leapp-graphtools" },
    btn("in", "+", "zoom in (wheel, +)", () => zoomAt(1.4)), btn("out", "−", "zoom out (wheel, -)", () => zoomAt(1 / 1.4)),
    btn("fit", "fit", "fit the whole graph (f)", () => fit()), search, count);
  let svg = null, nat = null, cx = 0, cy = 0, k = 1, ready = false, pending = null, drag = null, dragged = false;

  function size() { return [view.clientWidth, view.clientHeight]; }
  function apply() {
    const [W, H] = size();
    if (!svg || !W || !H) return;
    svg.setAttribute("viewBox", [cx - W / 2 / k, cy - H / 2 / k, W / k, H / k].map(x => x.toFixed(2)).join(" "));
    view.setAttribute("data-leapp-graph-zoom", (k / nat.k0).toFixed(3));
  }
  function fitK() {
    const [W, H] = size();
    return Math.min((W - 16) / nat.w, (H - 16) / nat.h, nat.k0);
  }
  function fit() {
    if (!nat) return;
    k = fitK(); cx = nat.x + nat.w / 2; cy = nat.y + nat.h / 2; apply();
  }
  function zoomAt(f, px, py) {
    if (!nat) return;
    const [W, H] = size();
    if (px === undefined) { px = W / 2; py = H / 2; }
    const ux = cx + (px - W / 2) / k, uy = cy + (py - H / 2) / k;
    const k2 = Math.min(nat.k0 * 4, Math.max(Math.min(fitK(), nat.k0) * 0.5, k * f));
    cx = ux - (px - W / 2) / k2; cy = uy - (py - H / 2) / k2; k = k2; apply();
  }
  // an element's box in drawing units (the root's user space, whatever transforms lie between)
  function bbox(el) {
    const m = svg && svg.getScreenCTM(), me = el.getScreenCTM && el.getScreenCTM();
    if (!m || !me) return null;
    const b = el.getBBox(), t = m.inverse().multiply(me);
    const ps = [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]]
      .map(([x, y]) => new DOMPoint(x, y).matrixTransform(t));
    const xs = ps.map(p => p.x), ys = ps.map(p => p.y);
    return { x: Math.min(...xs), y: Math.min(...ys), w: Math.max(...xs) - Math.min(...xs), h: Math.max(...ys) - Math.min(...ys) };
  }
  // centre on an element (zooming in to natural size when the graph is too small to read)
  function centerOn(el) {
    if (!el) return;
    const [W, H] = size();
    if (!ready || !W || !H) { pending = el; return; }
    const b = bbox(el);
    if (!b) { pending = el; return; }
    if (k < READABLE * nat.k0) k = nat.k0;
    cx = b.x + b.w / 2; cy = b.y + b.h / 2; apply();
  }
  function initial() {
    fit();
    if (k >= READABLE * nat.k0) return;
    const f = opts.focus && opts.focus();
    k = nat.k0;
    if (f) centerOn(f);
    else { const [W, H] = size(); cx = nat.x + W / 2 / k; cy = nat.y + H / 2 / k; apply(); }
  }
  function shown() {
    const [W, H] = size();
    if (!W || !H) return;
    if (opts.onVisible) opts.onVisible();
    if (!svg) return;
    if (!ready) { ready = true; initial(); }
    else apply();
    if (pending) { const el = pending; pending = null; centerOn(el.isConnected ? el : null); }
  }
  if (typeof ResizeObserver !== "undefined") new ResizeObserver(shown).observe(view);
  else requestAnimationFrame(shown);

  // pointer: drag pans; a drag is not a click on the node under it
  view.addEventListener("pointerdown", e => { if (e.button === 0) drag = { x: e.clientX, y: e.clientY, cx, cy, id: e.pointerId, moved: false }; });
  view.addEventListener("pointermove", e => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.hypot(dx, dy) < 4) return;
    if (!drag.moved) { drag.moved = true; view.setPointerCapture(drag.id); view.classList.add("leapp-dragging"); }
    cx = drag.cx - dx / k; cy = drag.cy - dy / k; apply();
  });
  const endDrag = () => { if (drag && drag.moved) { dragged = true; setTimeout(() => { dragged = false; }, 0); } drag = null; view.classList.remove("leapp-dragging"); };
  view.addEventListener("pointerup", endDrag);
  view.addEventListener("pointercancel", endDrag);
  view.addEventListener("click", e => { if (dragged) { e.stopPropagation(); e.preventDefault(); } }, true);
  view.addEventListener("wheel", e => {
    if (!nat) return;
    e.preventDefault();
    const r = view.getBoundingClientRect(), dy = e.deltaY * (e.deltaMode === 1 ? 16 : 1);
    zoomAt(Math.exp(-dy * 0.0015), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  view.addEventListener("keydown", e => {
    const [W, H] = size(), step = 60 / k;
    const act = { "+": () => zoomAt(1.4), "=": () => zoomAt(1.4), "-": () => zoomAt(1 / 1.4), f: fit, 0: fit,
                  ArrowLeft: () => { cx -= step; apply(); }, ArrowRight: () => { cx += step; apply(); },
                  ArrowUp: () => { cy -= step; apply(); }, ArrowDown: () => { cy += step; apply(); } }[e.key];
    if (!act || !W || !H) return;
    e.preventDefault(); e.stopPropagation(); act();
  });

  // search: typing shows the first match, Enter the next (Shift+Enter the previous)
  let matches = [], mi = -1, lastQ = "";
  function find(step) {
    const q = search.value.trim().toLowerCase();
    if (q !== lastQ) { lastQ = q; matches = q ? opts.find(q) : []; mi = -1; opts.mark(matches); }
    if (!matches.length) { count.textContent = q ? "no match" : ""; return; }
    mi = (mi + step + matches.length) % matches.length;
    count.textContent = (mi + 1) + " of " + matches.length;
    opts.show(matches[mi]);
  }
  search.addEventListener("input", () => find(1));
  search.addEventListener("keydown", e => { e.stopPropagation(); if (e.key === "Enter") { e.preventDefault(); find(e.shiftKey ? -1 : 1); } });

  return {
    el: h("div", { class: "leapp-graphnav" }, h("div", { class: "leapp-toolbar leapp-graphbar" }, tools), view),
    view, tools, centerOn, fit,
    // show `el` (an <svg>) in the viewport; keep=true keeps zoom and centre (a redraw of the same graph)
    attach(el, keep) {
      const vb = el.viewBox && el.viewBox.baseVal;
      const w = vb && vb.width ? vb.width : svgLength(el.getAttribute("width")) || 100;
      const hgt = vb && vb.height ? vb.height : svgLength(el.getAttribute("height")) || 100;
      const px = svgLength(el.getAttribute("width"));
      nat = { x: vb && vb.width ? vb.x : 0, y: vb && vb.height ? vb.y : 0, w, h: hgt, k0: px ? px / w : 1 };
      el.setAttribute("width", "100%"); el.setAttribute("height", "100%");
      el.setAttribute("preserveAspectRatio", "xMidYMid meet");
      if (el.parentNode !== view) view.replaceChildren(el);
      svg = el;
      if (!view.style.height) view.style.height = Math.round(Math.max(140, Math.min(560, nat.h * nat.k0 + 24))) + "px";
      if (!keep) ready = false;
      shown();
    },
  };
}

// a graph drawn in Python (SVG string, every string escaped there), made navigable; `focus` selects
// the node shown first when the whole graph is too big to read
function svgGraph(svgText, focus) {
  let nodes = [];
  const text = el => ((el.querySelector("title") || {}).textContent || "") + " " +
    (el.getAttribute("data-leapp-node") || el.getAttribute("data-leapp-fx") || el.getAttribute("data-leapp-io") || "");
  const nav = graphNav({
    find: q => nodes.filter(el => text(el).toLowerCase().includes(q)),
    mark: ms => { const s = new Set(ms); for (const el of nodes) { el.classList.toggle("leapp-match", s.has(el)); el.classList.remove("leapp-current"); } },
    show: el => { for (const x of nodes) x.classList.toggle("leapp-current", x === el); nav.centerOn(el); },
    focus: () => nav.view.querySelector(focus),
  });
  setSvg(nav.view, svgText);
  const svg = nav.view.querySelector("svg");
  if (svg) {
    nodes = [...svg.querySelectorAll("[data-leapp-node], [data-leapp-fx], [data-leapp-io]")];
    nav.attach(svg);
  }
  return nav;
}

// -- the accuracy graph (verify) -----------------------------------------------------------------------
// The engine graph of a verify view (view.engine_graph, leapp_lab/views/engine_graph_view.py) laid out
// by dagre in the browser, because module scopes fold and unfold here: a folded scope is one box. Each
// node with rows is filled by its worst row's metric (the rule's threshold splits green from red) and
// outlined by its verdict; clicking it selects its row (hooks.select), and a row selected anywhere
// unfolds its scope and centres its node (showRow). Laid out on first show, not at page load.
const SVGNS = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs, ...children) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) if (c !== undefined && c !== null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// badness of a metric value against the rule: 0 at the threshold, ±1 per decade (worse > 0);
// without a threshold, the value's place between the smallest and largest shown (0..1)
function badness(v, m, range) {
  if (v === null || v === undefined || Number.isNaN(v)) return null;
  if (m.threshold !== null && m.threshold !== undefined) {
    const d = m.worse === "below" ? (1 - v) / (1 - m.threshold) : v / m.threshold;
    return d <= 0 ? -3 : Math.log10(d);
  }
  if (!range || !(v > 0)) return 0;
  return range[1] > range[0] ? (Math.log10(v) - range[0]) / (range[1] - range[0]) : 1;
}

function mix(a, b, t) {
  const p = x => [1, 3, 5].map(i => parseInt(x.slice(i, i + 2), 16));
  const [x, y] = [p(a), p(b)];
  return "#" + x.map((c, i) => Math.round(c + (y[i] - c) * Math.max(0, Math.min(1, t))).toString(16).padStart(2, "0")).join("");
}

function badColor(b, m) {
  if (b === null) return "#f5f5f5";
  if (m.threshold === null || m.threshold === undefined) return mix("#e8eaf6", "#7e57c2", b);
  return b < 0 ? mix("#fff59d", "#c8e6c9", -b / 2) : mix("#ffb74d", "#e57373", b / 2);
}

function accuracyGraph(panel, G, table, rowsById, hooks) {
  const nodes = G.nodes || [], groups = new Map((G.groups || []).map(g => [g.id, g]));
  if (!nodes.length) {     // no graph stored (no ONNX found, too many nodes...): say why
    panel.append(h("div", { class: "leapp-note" }, G.note || "no graph was stored for this run"));
    return { showRow() {} };
  }
  const open = new Set(G.open || []);
  const metrics = G.metrics || [];
  let metric = metrics[0] || null;
  const rowNode = new Map();
  nodes.forEach((n, i) => n.rows.forEach(r => { if (!rowNode.has(r)) rowNode.set(r, i); }));
  const labels = table.status_labels || {};
  let selNode = null, selRow = null, marked = new Set(), current = null, dirty = true;
  let unitEls = new Map(), unitsNow = new Map();     // unit key -> <g>, unit key -> unit (as drawn)
  const info = h("div", { class: "leapp-graphinfo", "data-leapp-graph-info": "" });

  const chain = gid => { const out = []; while (gid) { out.unshift(gid); gid = (groups.get(gid) || {}).parent || null; } return out; };
  const unitOf = i => { for (const g of chain(nodes[i].group)) if (!open.has(g)) return "g:" + g; return "n:" + i; };
  const rowOf = id => rowsById.get(id);
  const value = r => (metric && r ? r.cells[metric.key] : null);
  let range = null;
  function setRange() {
    const vs = [];
    for (const n of nodes) for (const id of n.rows) { const v = value(rowOf(id)); if (v > 0) vs.push(Math.log10(v)); }
    range = vs.length ? [Math.min(...vs), Math.max(...vs)] : null;
  }
  // the row a node stands for: a diverged one first, then the worst by the metric
  function primary(ids) {
    let best = null, bb = -Infinity;
    for (const id of ids) {
      const r = rowOf(id);
      if (!r) continue;
      const b = (r.status === "fail" ? 100 : 0) + (badness(value(r), metric || {}, range) ?? -50);
      if (best === null || b > bb) { best = id; bb = b; }
    }
    return best;
  }

  const nav = graphNav({
    find: q => nodes.map((n, i) => [n, i]).filter(([n]) => (n.name + " " + n.op + " " + (n.scope || "") + " " + n.rows.join(" ")).toLowerCase().includes(q)).map(([, i]) => i),
    mark: ms => { marked = new Set(ms); current = null; paint(); },
    show: i => { current = i; reveal(i); paint(); nav.centerOn(elOf(i)); },
    focus: () => (selNode !== null ? elOf(selNode) : null),
    onVisible: () => { if (dirty) render(); },
  });
  const msel = h("select", { "data-leapp-graph-metric": "", on: { change: e => { metric = metrics.find(m => m.key === e.target.value); setRange(); paint(); legend(); } } },
    metrics.map(m => h("option", { value: m.key }, m.label)));
  const legendBox = h("span", { class: "leapp-graphlegend" });
  nav.tools.append(h("label", {}, "colour ", msel), legendBox,
    h("button", { class: "leapp-btn", "data-leapp-graph-unfold": "", title: "unfold every module scope", on: { click: () => { for (const g of groups.keys()) open.add(g); render(false); } } }, "unfold all"),
    h("button", { class: "leapp-btn", "data-leapp-graph-fold": "", title: "fold every module scope into one box", on: { click: () => { open.clear(); render(false); } } }, "fold all"));
  nav.view.style.height = "min(70vh, 640px)";
  const head = h("div", { class: "leapp-muted" },
    (G.source === "prepared" ? "the prepared ONNX (this engine has no ONNX graph): " : "the engine's ONNX graph: ") + (G.file || "") +
    " · " + nodes.filter(n => n.kind === "op").length + " nodes" +
    Object.entries(G.left_out || {}).map(([why, n]) => " · " + n + " " + why + " nodes left out").join("") +
    " · fill: the row's metric against the rule (a diverged row at least at the threshold); red outline: diverged · click a node to select its row, a box to unfold its scope, a band's label to fold it");
  panel.append(head, ...(G.note ? [h("div", { class: "leapp-note" }, G.note)] : []), nav.el, info);
  setRange();
  legend();

  function legend() {
    legendBox.replaceChildren();
    if (!metric) return;
    const th = metric.threshold;
    const stops = th !== null && th !== undefined ? [-2, -1, -0.001, 0, 1, 2] : [0, 0.5, 1];
    const grad = "linear-gradient(to right, " + stops.map(b => badColor(b, metric)).join(", ") + ")";
    const at = b => (metric.worse === "below" ? 1 - (1 - th) * 10 ** b : th * 10 ** b);
    const ticks = th !== null && th !== undefined ? [fmt(at(-2), metric.type), fmt(th, metric.type) + " (rule)", fmt(at(2), metric.type)]
      : (range ? [fmt(10 ** range[0], metric.type), "no rule threshold", fmt(10 ** range[1], metric.type)] : ["", "no values", ""]);
    legendBox.append(h("span", { class: "leapp-legendbar", style: "background:" + grad }),
      h("span", { class: "leapp-legendticks" }, ticks.map(t => h("span", {}, t))));
  }

  function reveal(i) {
    let changed = false;
    for (const g of chain(nodes[i].group)) if (!open.has(g)) { open.add(g); changed = true; }
    if (changed) { dirty = true; if (nav.view.clientWidth) render(true); }
  }
  function elOf(i) { return unitEls.get(unitOf(i)) || null; }

  function nodeTitle(n) {
    const lines = [n.name + " · " + n.op + (n.scope ? " · " + n.scope : "")];
    for (const id of n.rows.slice(0, 6)) {
      const r = rowOf(id);
      if (!r) continue;
      lines.push(id + ": " + (labels[r.status] || r.status) + (metric ? " · " + metric.label + " " + fmt(value(r), metric.type) : "") +
                 (r.reason ? " (" + r.reason + ")" : ""));
    }
    if (n.rows.length > 6) lines.push("… " + (n.rows.length - 6) + " more rows");
    if (n.kind === "op" && !n.rows.length) lines.push("not tapped: no row");
    return lines.join("\n");
  }

  // layout + drawing of the current fold state
  function render(keep) {
    dirty = false;
    if (typeof globalThis.dagre === "undefined") { nav.view.replaceChildren(h("div", { class: "leapp-empty" }, "the dagre layout library is not loaded")); return; }
    const units = new Map();
    nodes.forEach((n, i) => {
      const key = unitOf(i);
      if (!units.has(key)) units.set(key, { key, members: [], group: key.startsWith("g:") ? key.slice(2) : null });
      units.get(key).members.push(i);
    });
    const g = new globalThis.dagre.graphlib.Graph();
    g.setGraph({ rankdir: "TB", nodesep: 18, ranksep: 26, edgesep: 8, marginx: 12, marginy: 12,
                 ranker: units.size > 150 ? "longest-path" : "network-simplex" });
    g.setDefaultEdgeLabel(() => ({}));
    for (const u of units.values()) {
      if (u.group) {
        const ids = u.members.flatMap(i => nodes[i].rows).filter(id => rowOf(id));
        const fail = ids.filter(id => rowOf(id).status === "fail").length;
        u.title = "▸ " + groups.get(u.group).label;
        u.sub = u.members.length + " nodes" + (ids.length ? " · " + fail + "/" + ids.length + " diverged" : "");
      } else {
        const n = nodes[u.members[0]];
        u.title = n.op; u.sub = n.rows.length ? n.rows[0] + (n.rows.length > 1 ? " +" + (n.rows.length - 1) : "") : n.name;
      }
      const cut = t => (t.length > 34 ? t.slice(0, 33) + "…" : t);
      u.title = cut(u.title); u.sub = cut(u.sub);
      g.setNode(u.key, { width: Math.max(64, u.title.length * 6.6 + 18, u.sub.length * 5.6 + 18), height: 34 });
    }
    const edges = new Set();
    nodes.forEach((n, i) => { for (const j of n.inputs) { const a = unitOf(j), b = unitOf(i); if (a !== b && !edges.has(a + "\n" + b)) { edges.add(a + "\n" + b); g.setEdge(a, b); } } });
    globalThis.dagre.layout(g);
    const W = g.graph().width || 100, H = g.graph().height || 100;
    const mid = "leapp-acc-arrow-" + (++svgSerial);
    const svg = svgEl("svg", { viewBox: "0 0 " + W.toFixed(1) + " " + H.toFixed(1), width: W.toFixed(1), height: H.toFixed(1), class: "leapp-accgraph" },
      svgEl("defs", {}, svgEl("marker", { id: mid, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" },
        svgEl("path", { d: "M0,0 L10,5 L0,10 z", fill: "#78909c" }))));
    // open scopes: a band behind their members, its label folds the scope
    const bands = svgEl("g", { class: "leapp-bands" });
    const openGroups = [...open].filter(gid => groups.has(gid) && chain(gid).every(a => open.has(a)));
    openGroups.sort((a, b) => groups.get(a).depth - groups.get(b).depth);
    const below = new Map();     // open descendants' depth, for nesting paddings
    for (const gid of openGroups) for (const a of chain(gid)) below.set(a, Math.max(below.get(a) || 0, groups.get(gid).depth - groups.get(a).depth));
    for (const gid of openGroups) {
      let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
      for (const u of units.values()) {
        const i = u.members[0];
        if (!chain(nodes[i].group).includes(gid)) continue;
        const p = g.node(u.key);
        x0 = Math.min(x0, p.x - p.width / 2); x1 = Math.max(x1, p.x + p.width / 2);
        y0 = Math.min(y0, p.y - p.height / 2); y1 = Math.max(y1, p.y + p.height / 2);
      }
      if (!Number.isFinite(x0)) continue;
      const pad = 5 + 7 * (below.get(gid) || 0), gr = groups.get(gid);
      bands.append(svgEl("g", { class: "leapp-band", "data-leapp-scope-open": gid },
        svgEl("title", {}, gid + " · " + gr.size + " nodes · click the label to fold into one box"),
        svgEl("rect", { x: x0 - pad, y: y0 - pad - 11, width: x1 - x0 + 2 * pad, height: y1 - y0 + 2 * pad + 11, rx: 6 }),
        svgEl("text", { x: x0 - pad + 5, y: y0 - pad - 2, class: "leapp-bandlabel" }, "▾ " + gr.label)));
    }
    svg.append(bands);
    const eg = svgEl("g", { class: "leapp-edges" });
    for (const e of g.edges()) {
      const pts = g.edge(e).points || [];
      if (!pts.length) continue;
      const la = units.get(e.v), lb = units.get(e.w);
      eg.append(svgEl("path", { d: "M" + pts.map(p => p.x.toFixed(1) + "," + p.y.toFixed(1)).join(" L"), "marker-end": "url(#" + mid + ")" },
        svgEl("title", {}, (la.group || nodes[la.members[0]].name) + " → " + (lb.group || nodes[lb.members[0]].name))));
    }
    svg.append(eg);
    unitEls = new Map();
    const ng = svgEl("g", { class: "leapp-nodes" });
    for (const u of units.values()) {
      const p = g.node(u.key), x = p.x - p.width / 2, y = p.y - p.height / 2;
      const n = u.group ? null : nodes[u.members[0]];
      const el = u.group
        ? svgEl("g", { class: "leapp-gunit leapp-ggroup", "data-leapp-scope": u.group },
            svgEl("title", {}), svgEl("rect", { x: x + 3, y: y + 3, width: p.width, height: p.height, rx: 5, class: "leapp-stack" }),
            svgEl("rect", { x, y, width: p.width, height: p.height, rx: 5, class: "leapp-box" }))
        : svgEl("g", { class: "leapp-gunit leapp-gnode leapp-k-" + n.kind, "data-leapp-node": n.name },
            svgEl("title", {}), svgEl("rect", { x, y, width: p.width, height: p.height, rx: n.kind === "op" ? 5 : 16, class: "leapp-box" }));
      el.append(svgEl("text", { x: x + 8, y: y + 14, class: "leapp-gtitle" }, u.title), svgEl("text", { x: x + 8, y: y + 27, class: "leapp-gsub" }, u.sub));
      el.addEventListener("click", () => {
        if (u.group) { open.add(u.group); render(true); nav.centerOn(elOf(u.members[0])); return; }
        const i = u.members[0], row = primary(nodes[i].rows);
        selNode = i;
        if (row) hooks.select(row); else { selRow = null; paint(); describe(); }
      });
      u.el = el;
      unitEls.set(u.key, el);
      ng.append(el);
    }
    svg.append(ng);
    for (const b of bands.children) {
      const gid = b.getAttribute("data-leapp-scope-open");
      b.querySelector("text").addEventListener("click", ev => {
        ev.stopPropagation();
        for (const x of [...open]) if (chain(x).includes(gid)) open.delete(x);
        render(true);
        nav.centerOn(unitEls.get("g:" + gid));
      });
    }
    unitsNow = units;
    nav.attach(svg, keep);
    paint();
  }

  // colours, verdict outlines, selection and search marks, tooltips (no layout)
  function paint() {
    const selUnit = selNode !== null ? unitOf(selNode) : null;
    const curUnit = current !== null ? unitOf(current) : null;
    const markedUnits = new Set([...marked].map(unitOf));
    for (const u of unitsNow.values()) {
      const el = u.el, ids = u.members.flatMap(i => nodes[i].rows);
      let worst = null, fail = 0, judged = 0;
      for (const id of ids) {
        const r = rowOf(id);
        if (!r) continue;
        if (r.status === "fail") fail++;
        if (r.status !== "uncompared") judged++;
        let b = badness(value(r), metric || {}, range);
        // a diverged row stands at or above the rule, whichever criterion fired (non-finite, cosine...)
        if (r.status === "fail" && metric && metric.threshold !== null && metric.threshold !== undefined) b = Math.max(b ?? 0, 0);
        if (b !== null && (worst === null || b > worst)) worst = b;
      }
      const st = fail ? "fail" : judged ? "pass" : ids.some(id => rowOf(id)) ? "uncompared" : "none";
      el.setAttribute("data-leapp-status", st);
      const pr = u.group ? null : primary(ids);
      if (pr) el.setAttribute("data-leapp-node-row", pr); else el.removeAttribute("data-leapp-node-row");
      const box = el.querySelector(".leapp-box");
      const isIo = !u.group && nodes[u.members[0]].kind !== "op";
      box.setAttribute("fill", isIo ? "#e3f2fd" : st === "none" ? "#ffffff" : badColor(worst, metric || {}));
      el.classList.toggle("leapp-node-selected", u.key === selUnit);
      el.classList.toggle("leapp-match", markedUnits.has(u.key));
      el.classList.toggle("leapp-current", u.key === curUnit);
      el.querySelector("title").textContent = u.group
        ? u.group + " · " + u.members.length + " nodes · " + ids.length + " rows" + (fail ? ", " + fail + " diverged" : "") +
          (metric && worst !== null ? " · worst " + metric.label + " in it" : "") + " · click to unfold"
        : nodeTitle(nodes[u.members[0]]);
    }
  }

  // the selected row in words under the graph, with a way back to the table
  function describe() {
    info.replaceChildren();
    const r = selRow ? rowOf(selRow) : null;
    const n = selNode !== null ? nodes[selNode] : null;
    if (!r && !n) return;
    if (r) info.append(h("span", { class: "leapp-pill leapp-" + r.status }, labels[r.status] || r.status), " ", h("b", {}, r.id), " ");
    if (n) info.append(h("span", { class: "leapp-muted" }, "node " + n.name + " · " + n.op + (n.scope ? " · " + n.scope : "")), " ");
    else if (r) info.append(h("span", { class: "leapp-muted" }, "this row has no node in the graph (" + (r.tap_status || "") + ")"), " ");
    if (r) {
      for (const m of metrics) info.append(h("span", { class: "leapp-kvi" }, m.label + " ", h("b", {}, fmt(r.cells[m.key], m.type))), " ");
      if (r.reason) info.append(h("span", {}, r.reason), " ");
      info.append(h("button", { class: "leapp-btn", "data-leapp-graph-to-table": "", on: { click: () => hooks.showTable() } }, "show in table"));
    }
  }

  return {
    // a row was selected (table, plot, graph, search...): unfold its scope, outline and centre its node
    showRow(id) {
      selRow = id;
      const i = rowNode.get(id);
      selNode = i === undefined ? null : i;
      if (selNode !== null) reveal(selNode);
      if (!dirty) paint();
      describe();
      if (selNode !== null) nav.centerOn(elOf(selNode));
    },
  };
}

// -- histogram --------------------------------------------------------------------------------------
function histTraces(hist) {
  // zero bin at x=0, log bins from x=2 on (one empty slot between): the x axis *is* log(|diff|)
  const xs = [0], ys = [hist.zero], text = ["exactly 0"], colors = ["#1565c0"];
  const n = hist.counts.length;
  for (let i = 0; i < n; i++) {
    xs.push(i + 2); ys.push(hist.counts[i]); colors.push("#ef6c00");
    text.push("[" + hist.edges[i].toExponential(2) + ", " + hist.edges[i + 1].toExponential(2) + ")");
  }
  const step = Math.max(1, Math.ceil(n / 7));
  const tickvals = [0], ticktext = ["0"];
  for (let i = 0; i < n; i += step) { tickvals.push(i + 2 - 0.5); ticktext.push(hist.edges[i].toExponential(1)); }
  return { data: [{ type: "bar", x: xs, y: ys, text, hovertemplate: "%{text}<br>count %{y}<extra></extra>",
                    marker: { color: colors }, width: 0.92, textposition: "none" }],
           tickvals, ticktext };
}

function clearPlot(div) {
  // plotly keeps state on the element: purge it, or a later react() draws into a cleared div
  if (typeof globalThis.Plotly !== "undefined" && div._fullLayout) globalThis.Plotly.purge(div);
  div.replaceChildren();
}

// plotly draws its text in its own fixed dark grey: take the view's colour instead, so axis labels
// and titles stay readable under a dark JupyterLab theme (the div is in the document by now)
function themed(div, layout) {
  const fg = (typeof getComputedStyle === "function" && div.isConnected && getComputedStyle(div).color) || "#444";
  const grid = "rgba(128,128,128,0.3)";
  layout.font = Object.assign({ color: fg }, layout.font || {});
  for (const ax of ["xaxis", "yaxis"]) layout[ax] = Object.assign({ gridcolor: grid, linecolor: grid, zerolinecolor: grid }, layout[ax] || {});
  return layout;
}

function drawHist(div, hist, title) {
  clearPlot(div);
  if (!hist || (hist.zero === 0 && hist.counts.length === 0)) {
    div.append(h("div", { class: "leapp-empty" }, "no histogram stored for this row"));
    return;
  }
  const t = histTraces(hist);
  if (typeof globalThis.Plotly === "undefined") {
    div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded; counts: zero=" + hist.zero +
      " bins=" + hist.counts.join(",")));
    return;
  }
  const layout = {
    title: { text: title, font: { size: 12 } }, height: 260, margin: { l: 50, r: 10, t: 34, b: 44 },
    bargap: 0.05, showlegend: false, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    xaxis: { tickvals: t.tickvals, ticktext: t.ticktext, title: { text: "|diff| (log bins; 0 = exact zero)", font: { size: 10 } }, zeroline: false },
    yaxis: { title: { text: "elements", font: { size: 10 } }, rangemode: "tozero" },
  };
  globalThis.Plotly.newPlot(div, t.data, themed(div, layout), { displayModeBar: false, displaylogo: false, showLink: false, responsive: true });
}

function drawProfile(div, profile, metric, onPick) {
  clearPlot(div);
  const s = (profile.series || []).find(x => x.key === metric) || (profile.series || [])[0];
  if (!s) { div.append(h("div", { class: "leapp-empty" }, "no profile")); return; }
  if (typeof globalThis.Plotly === "undefined") { div.append(h("div", { class: "leapp-empty" }, "plotly.js is not loaded")); return; }
  const xs = profile.x.map((_, i) => i);
  const data = [{ type: "scatter", mode: "lines+markers", x: xs, y: s.y, text: profile.x,
                  hovertemplate: "%{text}<br>" + s.label + " %{y:.3e}<extra></extra>",
                  marker: { color: profile.status.map(st => st === "fail" ? "#c62828" : st === "pass" ? "#2e7d32" : "#9e9e9e"), size: 8 } }];
  const shapes = [];
  if (profile.first_divergent_index !== null && profile.first_divergent_index !== undefined) {
    shapes.push({ type: "line", x0: profile.first_divergent_index, x1: profile.first_divergent_index, yref: "paper", y0: 0, y1: 1,
                  line: { color: "#c62828", dash: "dot" } });
  }
  const layout = { title: { text: s.label + " over outputs and taps, in model order", font: { size: 12 } }, height: 300,
                   margin: { l: 60, r: 10, t: 34, b: 90 }, shapes, showlegend: false,
                   paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
                   xaxis: { tickvals: xs, ticktext: profile.x, tickangle: -40, automargin: true },
                   yaxis: { type: s.log ? "log" : "linear", title: { text: s.label, font: { size: 10 } } } };
  globalThis.Plotly.newPlot(div, data, themed(div, layout), { displayModeBar: false, displaylogo: false, showLink: false });
  if (div.on) div.on("plotly_click", ev => { const p = ev.points && ev.points[0]; if (p) onPick(profile.x[p.pointIndex]); });
}

// -- the view ---------------------------------------------------------------------------------------
export function renderView(el, view, host) {
  host = host || {};
  el.replaceChildren();
  if (!view || !view.kind) { el.append(h("div", { class: "leapp-empty" }, "(empty leapp_lab view)")); return {}; }
  const table = view.table || { rows: [], columns: [] };
  const rows = table.rows || [];
  const byId = new Map(rows.map(r => [r.id, r]));
  const groups = new Map();
  for (const r of rows) if (r.group) { if (!groups.has(r.group)) groups.set(r.group, []); groups.get(r.group).push(r); }
  const state = { tab: (view.tabs && view.tabs[0] && view.tabs[0].id) || "table", row: null, sample: null,
                  sortKey: null, sortDir: 1, onlyBad: false, node: null, logLevel: 0, logSection: "",
                  profileMetric: view.profile && view.profile.series && view.profile.series[0] ? view.profile.series[0].key : null };

  const selectionHooks = [];     // graph panels that follow the selected row
  const root = h("div", { class: "leapp-view", "data-leapp-kind": view.kind, "data-leapp-status": view.status });
  el.append(root);

  // header
  root.append(h("div", { class: "leapp-head" },
    h("div", { class: "leapp-title" }, h("span", { class: "leapp-dot leapp-" + view.status }), view.title),
    view.subtitle ? h("div", { class: "leapp-subtitle" }, view.subtitle) : null,
    h("div", { class: "leapp-badges" }, (view.badges || []).map(b =>
      h("span", { class: "leapp-badge" + (b.status ? " leapp-" + b.status : "") }, h("b", {}, b.label), " ", fmt(b.value)))),
    (view.notes || []).length ? h("ul", { class: "leapp-notes" }, view.notes.map(n => h("li", {}, n))) : null));

  // tabs
  const tabBar = h("div", { class: "leapp-tabs", role: "tablist" });
  const panels = {};
  root.append(tabBar);
  for (const t of view.tabs || []) {
    tabBar.append(h("button", { class: "leapp-tab", "data-leapp-tab": t.id, role: "tab", on: { click: () => { showTab(t.id); if (t.id === "table") refocus(); } } }, t.label));
    panels[t.id] = h("div", { class: "leapp-panel", "data-leapp-panel": t.id });
    root.append(panels[t.id]);
  }
  function showTab(id) {
    state.tab = id;
    for (const b of tabBar.children) b.classList.toggle("leapp-active", b.dataset.leappTab === id);
    for (const [k, p] of Object.entries(panels)) p.style.display = k === id ? "" : "none";
    if (id === "profile" && view.profile) drawProfile(profileDiv, view.profile, state.profileMetric, id2 => select(id2, null, true));
    if (id === "table" && state.row) renderHist();
  }

  // ---- table + histogram panel
  const tbody = h("tbody", {});
  const thead = h("thead", {});
  const tableEl = h("table", { class: "leapp-table" }, thead, tbody);
  // After a toolbar click, focus goes back to the table: ↑/↓ keep moving rows instead of reaching the
  // notebook, which would move between cells in command mode.
  const refocus = () => { if (wrap.isConnected) wrap.focus({ preventScroll: true }); };
  const filterBox = h("input", { type: "checkbox", "data-leapp-filter": "divergent", on: { change: e => { state.onlyBad = e.target.checked; fillRows(); refocus(); } } });
  const sortInfo = h("span", { class: "leapp-sortinfo" }, "model order");
  // data-lm-suppress-shortcuts: JupyterLab must not take ↑/↓ to move between notebook cells here
  const wrap = h("div", { class: "leapp-tablewrap", tabindex: "0", "data-lm-suppress-shortcuts": "true",
                          on: { keydown: onKey } }, tableEl);
  const histPanel = h("div", { class: "leapp-hist", "data-leapp-hist-row": "", "data-leapp-hist-sample": "" });
  if (panels.table) {
    panels.table.append(h("div", { class: "leapp-split" },
      h("div", { class: "leapp-left" },
        h("div", { class: "leapp-toolbar" }, h("span", { class: "leapp-ttitle" }, table.title || ""),
          h("label", {}, filterBox, " " + (table.filter_label || "divergent only")),
          sortInfo, h("button", { class: "leapp-btn", "data-leapp-sort-reset": "", on: { click: () => { state.sortKey = null; fillRows(); refocus(); } } }, "back to model order")),
        table.rule ? h("div", { class: "leapp-rule" }, table.rule) : null,
        wrap),
      histPanel));
  }
  const headRow = h("tr", {});
  for (const c of table.columns || []) {
    headRow.append(h("th", { "data-leapp-col": c.key, class: "leapp-" + c.type, title: (c.description ? c.description + " · " : "") + "sort by " + c.label,
      on: { click: () => { if (state.sortKey === c.key) state.sortDir = -state.sortDir; else { state.sortKey = c.key; state.sortDir = NUMERIC.has(c.type) && c.type !== "int" ? -1 : 1; } fillRows(); refocus(); } } }, c.label));
  }
  thead.append(headRow);
  const rowEls = new Map();

  function cmp(a, b) {
    const k = state.sortKey, col = (table.columns || []).find(c => c.key === k);
    let x = a.cells[k], y = b.cells[k];
    if (col && col.type === "status") { x = STATUS_ORDER[x] ?? 9; y = STATUS_ORDER[y] ?? 9; }
    if (x === null || x === undefined) return (y === null || y === undefined) ? 0 : 1;   // missing values last
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : x > y ? 1 : 0) * state.sortDir;
  }
  function visibleRows() {
    let rs = rows.filter(r => !state.onlyBad || r.status === "fail");
    if (state.sortKey) rs = rs.slice().sort(cmp);
    return rs;
  }
  function fillRows() {
    tbody.replaceChildren(); rowEls.clear();
    const col = (table.columns || []).find(c => c.key === state.sortKey);
    sortInfo.textContent = col ? "sorted by " + col.label + (state.sortDir > 0 ? " ↑" : " ↓") : "model order";
    for (const th of headRow.children) th.classList.toggle("leapp-sorted", th.dataset.leappCol === state.sortKey);
    for (const r of visibleRows()) {
      const tr = h("tr", { "data-leapp-row": r.id, "data-leapp-status": r.status, "data-leapp-tap-status": r.tap_status,
                           "data-leapp-first-divergent": r.first_divergent ? "true" : null,
                           class: "leapp-row leapp-" + r.status + (r.first_divergent ? " leapp-first" : ""),
                           on: { click: () => select(r.id, null, true) } });
      for (const c of table.columns || []) {
        const v = r.cells[c.key];
        if (c.type === "status") {
          const label = (table.status_labels || {})[r.status] || r.status;
          const extra = r.tap_status && r.tap_status !== "compared" ? r.tap_status : null;
          tr.append(h("td", { class: "leapp-status" }, h("span", { class: "leapp-pill leapp-" + r.status }, label),
            extra ? h("span", { class: "leapp-muted" }, " " + extra) : null,
            r.first_divergent ? h("span", { class: "leapp-firstmark", title: "first divergent row in model order" }, "◀ first") : null));
        } else {
          tr.append(h("td", { class: "leapp-" + c.type, title: typeof v === "number" ? String(v) : null }, fmt(v, c.type)));
        }
      }
      if (r.id === state.row) tr.classList.add("leapp-selected");
      rowEls.set(r.id, tr); tbody.append(tr);
    }
    if (!tbody.children.length) tbody.append(h("tr", {}, h("td", { colspan: (table.columns || []).length, class: "leapp-empty" }, "no rows")));
  }

  function select(id, sampleKey, fromUser) {
    const r = byId.get(id);
    if (!r) return;
    state.row = id;
    state.sample = sampleKey ?? r.default_sample ?? (r.samples[0] && r.samples[0].key);
    if (r.node) state.node = r.node;
    for (const [rid, tr] of rowEls) tr.classList.toggle("leapp-selected", rid === id);
    const tr = rowEls.get(id);
    if (tr && tr.scrollIntoView) tr.scrollIntoView({ block: "nearest" });
    if (state.tab !== "table" && fromUser && panels.table && state.tab === "profile") showTab("table");
    renderHist();
    renderNode();
    for (const f of selectionHooks) f(r);
    if (fromUser && host.onSelect) host.onSelect(id, state.sample);
  }

  function onKey(e) {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    e.stopPropagation();
    const ids = visibleRows().map(r => r.id);
    if (!ids.length) return;
    const i = ids.indexOf(state.row);
    const j = i < 0 ? 0 : Math.min(ids.length - 1, Math.max(0, i + (e.key === "ArrowDown" ? 1 : -1)));
    select(ids[j], null, true);
  }

  const histPlot = h("div", { class: "leapp-histplot" });
  function renderHist() {
    histPanel.replaceChildren();
    const r = byId.get(state.row);
    if (!r) { histPanel.append(h("div", { class: "leapp-empty" }, "click a row to see its |diff| histogram")); return; }
    const siblings = r.group ? groups.get(r.group) : null;
    let s = r.samples.find(x => x.key === state.sample) || r.samples[0];
    histPanel.setAttribute("data-leapp-hist-row", r.id);
    histPanel.setAttribute("data-leapp-hist-sample", s ? s.key : "");
    const picker = h("select", { "data-leapp-sample-picker": "", on: { change: e => {
      if (siblings) select(e.target.value, null, true); else { state.sample = e.target.value; renderHist(); if (host.onSelect) host.onSelect(r.id, state.sample); }
    } } });
    const opts = siblings ? siblings.map(x => [x.id, x.samples[0] ? x.samples[0].label + " · " + x.status : x.id, x.id === r.id])
                          : r.samples.map(x => [x.key, x.label, s && x.key === s.key]);
    for (const [v, label, sel] of opts) picker.append(h("option", { value: v, selected: sel }, label));
    histPanel.append(h("div", { class: "leapp-histhead" },
      h("span", { class: "leapp-pill leapp-" + r.status }, (table.status_labels || {})[r.status] || r.status), " ",
      h("b", { class: "leapp-histname" }, r.id), " ",
      opts.length > 1 ? h("label", {}, "sample ", picker) : h("span", { class: "leapp-muted" }, s ? s.label : "")));
    histPanel.append(histPlot);
    drawHist(histPlot, s && s.hist, (table.hist_title || "|diff|") + " · " + r.id + " · " + (s ? s.label : ""));
    if (s && s.note) histPanel.append(h("div", { class: "leapp-note" }, s.note));
    const side = h("div", { class: "leapp-histside" });
    if (s) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "metrics"), kv(s.metrics || [], "leapp-metrics")));
    if (r.info && r.info.length) side.append(h("div", {}, h("div", { class: "leapp-sub" }, "row"), kv(r.info)));
    if (s && s.inputs && s.inputs.length) {
      side.append(h("div", {}, h("div", { class: "leapp-sub" }, "inputs of this sample"),
        h("table", { class: "leapp-kv leapp-inputs" }, h("thead", {}, h("tr", {}, ["input", "shape", "dtype", "range", "index"].map(x => h("th", {}, x)))),
          h("tbody", {}, s.inputs.map(i => h("tr", {}, h("td", {}, i.name), h("td", {}, shapeText(i.shape)), h("td", {}, i.dtype),
            h("td", {}, fmt(i.range)), h("td", {}, fmt(i.index))))))));
    }
    histPanel.append(side);
  }

  // ---- graph tab
  if (panels.graph && view.engine_graph) {
    const acc = accuracyGraph(panels.graph, view.engine_graph, table, byId, {
      select: id => select(id, null, true),
      showTable: () => { showTab("table"); if (state.row) select(state.row, state.sample, false); },
    });
    selectionHooks.push(r => acc.showRow(r.id));
  } else if (panels.graph) {
    for (const g of view.graphs || []) {
      panels.graph.append(h("div", { class: "leapp-graphhead" }, h("b", {}, g.name), " · ", g.status, " · verdict ", g.verdict,
        h("span", { class: "leapp-muted" }, " (layout: " + g.layout + "; click a node to open it; drag to pan, wheel to zoom; dashed = feedback)")),
        ...(g.error ? [h("div", { class: "leapp-note" }, g.error)] : []));
      if (!g.svg) continue;
      const nav = svgGraph(g.svg, "[data-leapp-node].leapp-fail");   // written by leapp_lab.views.graphs, strings escaped
      panels.graph.append(nav.el);
      for (const n of nav.view.querySelectorAll("[data-leapp-node]")) {
        n.addEventListener("click", () => { state.node = n.getAttribute("data-leapp-node"); renderNode(); showTab("node"); });
      }
      // the selected row's node is outlined
      selectionHooks.push(r => { for (const n of nav.view.querySelectorAll("[data-leapp-node]")) n.classList.toggle("leapp-node-selected", n.getAttribute("data-leapp-node") === r.node); });
    }
    if (!(view.graphs || []).length) panels.graph.append(h("div", { class: "leapp-empty" }, "no graph"));
  }

  // ---- node tab
  const nodeNames = Object.keys(view.nodes || {});
  const nodeSelect = h("select", { "data-leapp-node-picker": "", on: { change: e => { state.node = e.target.value; renderNode(); } } },
    nodeNames.map(n => h("option", { value: n }, n)));
  const nodeBody = h("div", { class: "leapp-nodebody" });
  if (panels.node) panels.node.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "node ", nodeSelect)), nodeBody);
  function renderNode() {
    if (!panels.node) return;
    const n = (view.nodes || {})[state.node] || (view.nodes || {})[nodeNames[0]];
    nodeBody.replaceChildren();
    if (!n) { nodeBody.append(h("div", { class: "leapp-empty" }, "no node")); return; }
    nodeSelect.value = state.node && view.nodes[state.node] ? state.node : nodeNames[0];
    nodeBody.setAttribute("data-leapp-node-panel", n.name);
    nodeBody.append(kv([["node", n.name], ["verdict", n.verdict], ["backend", n.backend], ["artifact", n.artifact],
      ["samples recorded", n.samples], n.dropped_inputs.length ? ["inputs LEAPP dropped", n.dropped_inputs.join(", ")] : null,
      n.error ? ["error", n.error] : null]));
    nodeBody.append(h("div", { class: "leapp-sub" }, "ports"),
      h("table", { class: "leapp-kv" }, h("thead", {}, h("tr", {}, ["port", "dir", "dtype", "shape", "role", "source"].map(x => h("th", {}, x)))),
        h("tbody", {}, n.ports.map(p => h("tr", {}, h("td", {}, p.name + (p.traced_name ? " (traced " + p.traced_name + ")" : "")),
          h("td", {}, p.direction), h("td", {}, p.dtype || "?"), h("td", {}, shapeText(p.shape)), h("td", {}, p.role),
          h("td", {}, (p.source || "") + (p.feedback ? " (feedback)" : "")))))));
    if (n.hazards.length) nodeBody.append(h("div", { class: "leapp-sub" }, "hazards"),
      h("ul", { class: "leapp-hazards" }, n.hazards.map(z => h("li", {}, h("b", {}, z.kind), z.port ? " · " + z.port : "", ": ", z.message))));
    if (n.fx) {
      nodeBody.append(h("div", { class: "leapp-sub" }, "FX graph (" + n.fx.n_nodes + " nodes" +
        (n.fx.suspects.length ? "; " + n.fx.suspects.length + " flagged literal(s) in red" : "") + ")"));
      if (n.fx.suspects.length) nodeBody.append(h("ul", { class: "leapp-suspects" }, n.fx.suspects.map(s =>
        h("li", { "data-leapp-suspect": s.name }, h("b", {}, s.name), " = ", s.target, "(", s.args.join(", "), ")  literals: ", s.literals.join(", ")))));
      if (n.fx.svg) {
        const g = svgGraph(n.fx.svg, "[data-leapp-fx].leapp-suspect");   // escaped in Python
        g.view.classList.add("leapp-fx");
        nodeBody.append(g.el);
      }
      const marks = new Set(n.fx.code_marks || []);
      nodeBody.append(h("pre", { class: "leapp-code" }, (n.fx.code || "").split("\n").map((line, i) =>
        h("span", { class: marks.has(i) ? "leapp-mark" : null }, line + "\n"))));
    }
  }

  // ---- hazards tab
  if (panels.hazards) {
    const hz = view.hazards || [];
    panels.hazards.append(hz.length ? h("table", { class: "leapp-table" },
      h("thead", {}, h("tr", {}, ["kind", "node", "port", "samples", "what it means"].map(x => h("th", {}, x)))),
      h("tbody", {}, hz.map(z => h("tr", { "data-leapp-hazard": z.kind, class: "leapp-row",
        on: { click: () => { if (z.node) { state.node = (view.graphs.length > 1 ? z.graph + ":" : "") + z.node; renderNode(); showTab("node"); } } } },
        h("td", {}, z.kind), h("td", {}, z.node || "–"), h("td", {}, z.port || "–"), h("td", {}, z.samples.join(", ")), h("td", {}, z.message)))))
      : h("div", { class: "leapp-empty" }, "no hazards found"));
  }

  // ---- log tab
  if (panels.log && view.log) {
    const L = view.log;
    const levelNo = new Map(L.records.map(r => [r.level, r.levelno]));
    const lvSel = h("select", { "data-leapp-log-level": "", on: { change: e => { state.logLevel = Number(e.target.value); fillLog(); } } },
      h("option", { value: "0" }, "all levels"), (L.levels || []).map(l => h("option", { value: String(levelNo.get(l)) }, l + " and above")));
    const secSel = h("select", { "data-leapp-log-section": "", on: { change: e => { state.logSection = e.target.value; fillLog(); } } },
      h("option", { value: "" }, "all sections"), (L.sections || []).map(s => h("option", { value: s }, s)));
    const list = h("div", { class: "leapp-log" });
    const count = h("span", { class: "leapp-muted" });
    panels.log.append(h("div", { class: "leapp-toolbar" }, lvSel, " ", secSel, " ", count,
      L.truncated ? h("span", { class: "leapp-muted" }, " (" + L.truncated + " older records not shown)") : null), list);
    function fillLog() {
      list.replaceChildren();
      let n = 0;
      for (const r of L.records) {
        if (r.levelno < state.logLevel || (state.logSection && r.section !== state.logSection)) continue;
        n++;
        list.append(h("div", { class: "leapp-logline leapp-lv-" + r.level.toLowerCase(), "data-leapp-log-level": r.level,
                               "data-leapp-log-section": r.section || "" },
          h("span", { class: "leapp-lv" }, r.level), r.section ? h("span", { class: "leapp-sec" }, "[" + r.section + "]") : null, " ", r.message));
      }
      count.textContent = n + " of " + L.records.length + " records";
    }
    fillLog();
  }

  // ---- profile tab (verify)
  const profileDiv = h("div", { class: "leapp-profile" });
  if (panels.profile && view.profile) {
    const msel = h("select", { "data-leapp-profile-metric": "", on: { change: e => { state.profileMetric = e.target.value; drawProfile(profileDiv, view.profile, state.profileMetric, id => select(id, null, true)); } } },
      (view.profile.series || []).map(s => h("option", { value: s.key }, s.label)));
    panels.profile.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "metric ", msel),
      h("span", { class: "leapp-muted" }, " error growth over outputs and taps in model order; dotted line = first divergent; click a point to select its row")), profileDiv);
  }

  fillRows();
  showTab(state.tab);
  const first = table.first_divergent || (rows[0] && rows[0].id);
  if (first) select(first, null, false); else { renderHist(); renderNode(); }

  return {
    select: (id, sampleKey) => select(id, sampleKey, false),
    state,
  };
}

// -- the static companion --------------------------------------------------------------------------
// In a kernel, leapp_lab publishes the static view (data-leapp-static=ID) as its own output just before
// the widget, so a notebook reopened without the widget's model still shows it. While this live view
// is drawn, that output is taken off the page (one view, not two); it comes back if the view goes
// (kernel restart), as it would on reopening. It is looked for a few times: the live view is usually
// drawn before its output is attached.
function parkStatic(id) {
  let parked = null, tries = 0, timer = null, stopped = false;
  const find = () => {
    if (stopped) return;
    const st = [...document.querySelectorAll("[data-leapp-static]")].find(e => e.getAttribute("data-leapp-static") === id);
    if (st) {
      const box = st.closest(".jp-OutputArea-child");
      parked = { st, parent: st.parentNode, next: st.nextSibling, box };
      st.remove();
      if (box) box.style.display = "none";
    } else if (++tries < 40) timer = setTimeout(find, 100);
  };
  if (id) find();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    if (!parked) return;
    if (parked.parent) parked.parent.insertBefore(parked.st, parked.next && parked.next.parentNode === parked.parent ? parked.next : null);
    if (parked.box) parked.box.style.display = "";
  };
}

// -- anywidget host: the whole view arrives in one trait; the selection goes back in two ------------
export default {
  render({ model, el }) {
    let api = null;
    const unpark = parkStatic(model.get("_static_id") || "");
    const draw = () => {
      api = renderView(el, model.get("view"), {
        onSelect(id, sample) {
          model.set("selected", id); model.set("sample", sample == null ? "" : String(sample)); model.save_changes();
        },
      });
      // renderView opened on the first divergent row, which is also the trait's default
      const sel = model.get("selected"), sample = model.get("sample");
      if (sel && (sel !== api.state.row || sample)) api.select(sel, sample || null);
    };
    draw();
    const onView = () => draw();
    const onSel = () => { const id = model.get("selected"); if (api && api.select && id && id !== api.state.row) api.select(id, model.get("sample") || null); };
    model.on("change:view", onView);
    model.on("change:selected", onSel);
    return () => { model.off("change:view", onView); model.off("change:selected", onSel); unpark(); };
  },
};
