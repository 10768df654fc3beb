// The graph tab of a verify view: the accuracy graph (leapp_lab/views/engine_graph_view.py).
import { badColor, badness } from "../shared/colour.js";
import { h, nextSvgSerial, svgEl } from "../shared/dom.js";
import { fmt } from "../shared/format.js";
import { graphNav } from "../shared/graphnav.js";

// The engine graph of a verify view (view.engine_graph, leapp_lab/views/engine_graph_view.py) laid out
// by dagre in the browser, because module scopes fold and unfold here: a folded scope is one box. Each
// node with rows is filled by its worst row's metric (the rule's threshold splits green from red) and
// outlined by its verdict; clicking it selects its row (hooks.select), and a row selected anywhere
// unfolds its scope and centres its node (showRow). Laid out on first show, not at page load.
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
    const mid = "leapp-acc-arrow-" + nextSvgSerial();
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
      // coloured by a local column: a box counts the rows whose *local* error crosses the rule
      const local = !!(metric && metric.key && metric.key.startsWith("local_"));
      const failed = r => local ? r.local_status === "fail" : r.status === "fail";
      for (const id of ids) {
        const r = rowOf(id);
        if (!r) continue;
        if (failed(r)) fail++;
        if (r.status !== "uncompared") judged++;
        let b = badness(value(r), metric || {}, range);
        // a diverged row stands at or above the rule, whichever criterion fired (non-finite, cosine...)
        if (failed(r) && metric && metric.threshold !== null && metric.threshold !== undefined) b = Math.max(b ?? 0, 0);
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

// the tab renderer (tabs.js): a row selected anywhere shows its node here
export function engineGraphTab(ctx, panel) {
  const { state } = ctx;
  const acc = accuracyGraph(panel, ctx.view.engine_graph, ctx.table, ctx.byId, {
    select: id => ctx.select(id, null, true),
    showTable: () => { ctx.showTab("table"); if (state.row) ctx.select(state.row, state.sample, false); },
  });
  return { select: r => acc.showRow(r.id) };
}
