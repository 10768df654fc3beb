// The tab renderers, keyed by tab id (view.tabs[].id in the view dict). renderView (view.js) calls
// each renderer whose tab the view has, in this order, as render(ctx, panel) -> tab | null:
//   tab.init()         before the first tab is shown
//   tab.show()         the tab was shown (plotly and graph layouts size themselves only when visible)
//   tab.select(r, source, toTable)   a row was selected anywhere (table first, then the others)
//   tab.refresh()      draw for the current state (the opening view, when there is no row to select)
//   tab.ready()        after the opening selection
//   tab.handsToTable   a row picked on this tab opens in the table tab
// ctx: view, host, state, table, rows, columns, byId, root, frag and select(id, sample, source),
// showTab(id), openNode(name), openLayers(node, engine), writeFragment(), emit(id, sample, source),
// refocus(), renderView(el, view, host) (a view inside a tab) and rowActions(r) (every tab's
// tab.actions(r): buttons for the selected row's side panel).
// A new tab: a module under views/ exporting its renderer, and one line here.
import { tableTab } from "./tabs/table.js";
import { DEEP_SECTIONS, deepTab } from "./views/deep.js";
import { engineGraphTab } from "./views/engine_graph.js";
import { barsTab } from "./views/repair.js";
import { layersTab, pipelineTab } from "./views/layers.js";
import { hazardsTab, logTab, nodeTab, traceGraphTab } from "./views/trace.js";
import { profileTab } from "./views/verify.js";

export const TABS = {
  ...Object.fromEntries(DEEP_SECTIONS.map(name => [name, deepTab(name)])),
  table: tableTab,          // every kind; built even without a table tab (the API's rows)
  node: nodeTab,
  // a verify view's graph is the accuracy graph; a trace view's, LEAPP's connectivity
  graph: (ctx, panel) => (ctx.view.engine_graph ? engineGraphTab(ctx, panel) : traceGraphTab(ctx, panel)),
  hazards: hazardsTab,
  log: logTab,
  layers: layersTab,        // a trace node's verify view per engine (--engine)
  pipeline: pipelineTab,    // the pipeline on each engine, node by node
  profile: profileTab,
  bars: barsTab,
};
