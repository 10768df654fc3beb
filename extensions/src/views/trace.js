// The trace view's own tabs (leapp_lab/views/trace_view.py): the graph (LEAPP's connectivity, drawn
// in Python), a node's page, the hazards and LEAPP's log. Its deep-check tabs: views/deep.js.
import { h, kv } from "../shared/dom.js";
import { shapeText } from "../shared/format.js";
import { svgGraph } from "../shared/graphnav.js";
import { layerButtons } from "./layers.js";

// graph tab: each traced graph's connectivity; a click on a node opens its node tab, and the
// selected row's node is outlined
export function traceGraphTab(ctx, panel) {
  const { view } = ctx;
  const hooks = [];
  for (const g of view.graphs || []) {
    panel.append(h("div", { class: "leapp-graphhead" }, h("b", {}, g.name), " · ", g.status, " · verdict ", g.verdict,
      h("span", { class: "leapp-muted" }, " (layout: " + g.layout + "; click a node to open it; drag to pan, wheel to zoom; dashed = feedback)")),
      ...(g.error ? [h("div", { class: "leapp-note" }, g.error)] : []));
    if (!g.svg) continue;
    const nav = svgGraph(g.svg, "[data-leapp-node].leapp-fail");   // written by leapp_lab.views.graphs, strings escaped
    panel.append(nav.el);
    for (const n of nav.view.querySelectorAll("[data-leapp-node]")) {
      n.addEventListener("click", () => ctx.openNode(n.getAttribute("data-leapp-node")));
    }
    // the selected row's node is outlined
    hooks.push(r => { for (const n of nav.view.querySelectorAll("[data-leapp-node]")) n.classList.toggle("leapp-node-selected", n.getAttribute("data-leapp-node") === r.node); });
    // --engine: each node's Layers, one button per engine, under its graph
    const many = (view.graphs || []).length > 1;
    const mine = Object.keys(view.nodes || {}).filter(k => (!many || k.startsWith(g.name + ":")) && (view.nodes[k].layers || []).length);
    if (mine.length) panel.append(h("div", { class: "leapp-toolbar leapp-graph-layers", "data-leapp-graph-layers": g.name },
      h("span", { class: "leapp-muted" }, "inside the nodes: "),
      mine.map(k => h("span", { class: "leapp-graph-layers-node" }, h("b", {}, k), " ", layerButtons(ctx, k)))));
  }
  if (!(view.graphs || []).length) panel.append(h("div", { class: "leapp-empty" }, "no graph"));
  return { select: r => { for (const f of hooks) f(r); } };
}

// node tab: one node's facts, ports, hazards and FX graph (state.node; the node of the selected row)
export function nodeTab(ctx, panel) {
  const { view, state } = ctx;
  const nodeNames = Object.keys(view.nodes || {});
  const nodeSelect = h("select", { "data-leapp-node-picker": "", on: { change: e => { state.node = e.target.value; renderNode(); } } },
    nodeNames.map(n => h("option", { value: n }, n)));
  const nodeBody = h("div", { class: "leapp-nodebody" });
  panel.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "node ", nodeSelect)), nodeBody);
  function renderNode() {
    const key = state.node && (view.nodes || {})[state.node] ? state.node : nodeNames[0];
    const n = (view.nodes || {})[key];
    nodeBody.replaceChildren();
    if (!n) { nodeBody.append(h("div", { class: "leapp-empty" }, "no node")); return; }
    nodeSelect.value = key;
    nodeBody.setAttribute("data-leapp-node-panel", n.name);
    nodeBody.append(kv([["node", n.name], ["verdict", n.verdict], ["backend", n.backend], ["artifact", n.artifact],
      ["samples recorded", n.samples], n.dropped_inputs.length ? ["inputs LEAPP dropped", n.dropped_inputs.join(", ")] : null,
      n.error ? ["error", n.error] : null]));
    nodeBody.append(h("div", { class: "leapp-sub" }, "ports"),
      h("table", { class: "leapp-kv" }, h("thead", {}, h("tr", {}, ["port", "dir", "dtype", "shape", "role", "source", "meaning (LEAPP semantics)"].map(x => h("th", {}, x)))),
        h("tbody", {}, n.ports.map(p => h("tr", {}, h("td", {}, p.name + (p.traced_name ? " (traced " + p.traced_name + ")" : "")),
          h("td", {}, p.direction), h("td", {}, p.dtype || "?"), h("td", {}, shapeText(p.shape)), h("td", {}, p.role),
          h("td", {}, (p.source || "") + (p.feedback ? " (feedback)" : "")),
          h("td", { class: "leapp-wrap", "data-leapp-port-meaning": p.meaning ? p.name : null }, p.meaning || "–"))))));
    if ((n.taps || []).length) nodeBody.append(h("div", { class: "leapp-sub" }, "taps (in the order they fired)"),
      h("table", { class: "leapp-kv" }, h("thead", {}, h("tr", {}, ["tap", "site"].map(x => h("th", {}, x)))),
        h("tbody", {}, n.taps.map(t => h("tr", { "data-leapp-tap": t.name }, h("td", {}, t.name), h("td", {}, t.site))))));
    const layers = n.layers || [];
    if (layers.length) nodeBody.append(h("div", { class: "leapp-sub" }, "inside the node, on engines"),
      h("table", { class: "leapp-kv", "data-leapp-node-engines": "" }, h("thead", {}, h("tr", {}, ["engine", "status", "first divergent", "largest local error", ""].map(x => h("th", {}, x)))),
        h("tbody", {}, layers.map(e => h("tr", { "data-leapp-node-engine": e.engine },
          h("td", {}, e.engine), h("td", {}, e.status + (e.error ? ": " + e.error : "")), h("td", {}, e.first_divergent || "none"),
          h("td", {}, e.worst_local || "–"), h("td", {}, layerButtons(ctx, key).filter(b => b.getAttribute("data-leapp-engine") === e.engine)))))));
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
  return { render: renderNode, refresh: renderNode, select: renderNode };
}

// hazards tab: every diagnosed hazard; a click opens its node
export function hazardsTab(ctx, panel) {
  const { view } = ctx;
  const hz = view.hazards || [];
  panel.append(hz.length ? h("table", { class: "leapp-table leapp-hazards-table" },
    h("thead", {}, h("tr", {}, ["kind", "node", "port", "samples", "what it means"].map(x => h("th", {}, x)))),
    h("tbody", {}, hz.map(z => h("tr", { "data-leapp-hazard": z.kind, class: "leapp-row",
      on: { click: () => { if (z.node) { ctx.openNode((view.graphs.length > 1 ? z.graph + ":" : "") + z.node); } } } },
      h("td", {}, z.kind), h("td", {}, z.node || "–"), h("td", {}, z.port || "–"), h("td", {}, z.samples.join(", ")), h("td", { class: "leapp-wrap" }, z.message)))))
    : h("div", { class: "leapp-empty" }, "no hazards found"));
  return {};
}

// log tab: LEAPP's log records, filtered by level and section
export function logTab(ctx, panel) {
  const { view, state } = ctx;
  if (!view.log) return null;
  const L = view.log;
  const levelNo = new Map(L.records.map(r => [r.level, r.levelno]));
  const lvSel = h("select", { "data-leapp-log-level": "", on: { change: e => { state.logLevel = Number(e.target.value); fillLog(); } } },
    h("option", { value: "0" }, "all levels"), (L.levels || []).map(l => h("option", { value: String(levelNo.get(l)) }, l + " and above")));
  const secSel = h("select", { "data-leapp-log-section": "", on: { change: e => { state.logSection = e.target.value; fillLog(); } } },
    h("option", { value: "" }, "all sections"), (L.sections || []).map(s => h("option", { value: s }, s)));
  const list = h("div", { class: "leapp-log" });
  const count = h("span", { class: "leapp-muted" });
  panel.append(h("div", { class: "leapp-toolbar" }, lvSel, " ", secSel, " ", count,
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
  return {};
}
