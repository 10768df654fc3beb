// The trace view's "Layers" tab and "Pipeline on engines" tab (--engine; leapp_lab/views/trace_layers.py).
// Layers: per node and engine, the node's verify run drawn by renderView itself from the verify
// view dict embedded in view.nodes[NAME].layers[] (the verify view's accuracy table, first divergent
// row, local error, histogram panel, error growth and accuracy graph: the same components, nested).
// Reached from a Validation row's panel, the connectivity graph and the Node tab (openLayers).
// Pipeline: per graph and engine, nodes / ports in pipeline order, the first divergent node marked;
// a row opens that node's Layers on that engine.
import { h, kv } from "../shared/dom.js";
import { fmt } from "../shared/format.js";

// node keys (view.nodes) that have at least one Layers entry
export function layerNodes(view) {
  return Object.keys(view.nodes || {}).filter(k => ((view.nodes[k] || {}).layers || []).length);
}

// which node and entry to show: the asked node if it has Layers, else the first that has; the asked
// engine if that node has it, else its first entry with a view, else its first entry
export function pickLayer(view, node, engine) {
  const names = layerNodes(view);
  const name = names.includes(node) ? node : names[0];
  if (!name) return null;
  const entries = view.nodes[name].layers;
  const entry = entries.find(e => e.engine === engine) || entries.find(e => e.view) || entries[0];
  return { node: name, entry, asked: node };
}

// buttons that open a node's Layers, one per engine (data-leapp-open-layers=node, data-leapp-engine)
export function layerButtons(ctx, node) {
  const n = (ctx.view.nodes || {})[node];
  return ((n && n.layers) || []).map(e => h("button", {
    class: "leapp-btn leapp-layers-link leapp-" + (e.status === "diverged" ? "fail" : e.status === "ok" ? "pass" : "uncompared"),
    "data-leapp-open-layers": node, "data-leapp-engine": e.engine,
    title: "the layers of " + node + " on " + e.engine + ": its accuracy table, histograms and accuracy graph",
    on: { click: ev => { ev.stopPropagation(); ctx.openLayers(node, e.engine); } } },
  "Layers on " + e.engine + " (" + e.status + ") ▸"));
}

export function layersTab(ctx, panel) {
  const { view, state } = ctx;
  const names = layerNodes(view);
  if (!names.length) return null;
  const nodeSel = h("select", { "data-leapp-layers-node": "", on: { change: e => { state.node = e.target.value; draw(); } } },
    names.map(n => h("option", { value: n }, n)));
  const engSel = h("select", { "data-leapp-layers-engine": "", on: { change: e => { state.layersEngine = e.target.value; draw(); } } });
  const head = h("div", { class: "leapp-layers-head" });
  const body = h("div", { class: "leapp-layers-body" });
  panel.append(h("div", { class: "leapp-toolbar" }, h("label", {}, "node ", nodeSel), " ", h("label", {}, "engine ", engSel),
    h("span", { class: "leapp-muted" }, " the node prepared from the trace, compiled for the engine and verified tap by tap, in model order")),
  head, body);
  let drawn = null;

  function draw(force) {
    const pick = pickLayer(view, state.node, state.layersEngine);
    const key = pick.node + "\u0000" + pick.entry.engine;
    if (!force && key === drawn) return;
    drawn = key;
    const { node, entry } = pick;
    state.layersEngine = entry.engine;
    nodeSel.value = node;
    engSel.replaceChildren(...view.nodes[node].layers.map(e => h("option", { value: e.engine, selected: e.engine === entry.engine }, e.engine + " · " + e.status)));
    // (replaceChildren writes null as the text "null": leave it out)
    head.replaceChildren(...[
      pick.asked && pick.asked !== node ? h("div", { class: "leapp-note", "data-leapp-layers-fallback": pick.asked }, "node " + pick.asked + " has no engine build; showing " + node) : null,
      kv([["node", node], ["engine", entry.engine], ["status", entry.status],
          ["first divergent", entry.first_divergent || "none"],
          ["largest local error", entry.worst_local || (entry.view ? "– (no --local)" : "–")],
          entry.error ? ["error", entry.error] : null,
          entry.verify_run ? ["verify run", entry.verify_run] : null].filter(Boolean))].filter(Boolean));
    head.setAttribute("data-leapp-layers-status", entry.status);
    head.setAttribute("data-leapp-worst-local", entry.worst_local || "");
    body.replaceChildren();
    body.setAttribute("data-leapp-layers", node);
    body.setAttribute("data-leapp-layers-engine", entry.engine);
    if (entry.view) ctx.renderView(body, entry.view, {});
    else body.append(h("div", { class: "leapp-empty", "data-leapp-layers-omitted": "" }, entry.omitted || "no verify run"));
  }
  return {
    // drawn when shown (its plots size themselves only when visible); a row of another node
    // selected while it is shown draws that node's
    show: () => draw(),
    render: () => { if (state.tab === "layers") draw(); },
    select: () => { if (state.tab === "layers") draw(); },
    actions: r => (r.node ? layerButtons(ctx, r.node) : []),
  };
}

export function pipelineTab(ctx, panel) {
  const { view } = ctx;
  const tables = view.pipeline_engines || [];
  if (!tables.length) return null;
  const many = (view.graphs || []).length > 1;
  const pct = v => (v === null || v === undefined ? "–" : fmt(100 * v) + " %");
  panel.append(h("div", { class: "leapp-rule" }, "Each node's engine build run on the cached samples, fed its upstream nodes' " +
    "engine outputs (nrmse: cumulative) and fed the recorded inputs (local nrmse: its own); own share = local / cumulative. " +
    "Pipeline order; click a row to open that node's layers on that engine."));
  for (const t of tables) {
    const key = n => (many ? t.graph + ":" : "") + n;
    panel.append(h("div", { class: "leapp-graphhead", "data-leapp-pipeline": t.engine, "data-leapp-pipeline-graph": t.graph },
      h("b", {}, t.graph), " on ", h("b", {}, t.engine), " · first divergent node: ",
      h("span", { class: t.first_divergent_node ? "leapp-pill leapp-fail" : "leapp-pill leapp-pass",
                  "data-leapp-first-divergent-node": t.first_divergent_node || "" }, t.first_divergent_node || "none")));
    panel.append(h("table", { class: "leapp-table leapp-pipeline-table" },
      h("thead", {}, h("tr", {}, ["node", "port", "nrmse (cumulative)", "local nrmse", "own share", ""].map(x => h("th", {}, x)))),
      h("tbody", {}, t.nodes.map(r => {
        const has = ((view.nodes[key(r.node)] || {}).layers || []).some(e => e.engine === t.engine);
        return h("tr", { class: "leapp-row" + (r.first_divergent ? " leapp-fail leapp-first-divergent" : ""),
                         "data-leapp-pipeline-row": r.node + "/" + r.port, "data-leapp-pipeline-engine": t.engine,
                         "data-leapp-first-divergent": r.first_divergent ? "true" : "false",
                         title: has ? "open the layers of " + r.node + " on " + t.engine : null,
                         on: { click: () => { if (has) ctx.openLayers(key(r.node), t.engine); } } },
          h("td", {}, r.node), h("td", {}, r.port), h("td", { class: "leapp-num" }, pct(r.nrmse)),
          h("td", { class: "leapp-num" }, pct(r.local_nrmse)), h("td", { class: "leapp-num" }, pct(r.own_share)),
          h("td", {}, r.first_divergent ? "← first divergent node" : ""));
      }))));
  }
  return {};
}
