// leapp_lab front-end: one renderer for the Jupyter widget (anywidget) and the standalone HTML report.
// This is the bundle's entry (esbuild, extensions/build.mjs -> extensions/leapp_view.js, the one file
// both hosts inline; docs/contributing.md "Front-end modules"). The offline report calls renderView
// at the module's top level; the widget takes the default export.
//
// It draws a *view dict* built in Python (leapp_lab/views/viewdict.py); it never computes a metric,
// never talks to a kernel itself (the widget host passes callbacks) and never fetches anything.
// Every user string reaches the DOM through textContent / setAttribute; the only innerHTML is the
// graph SVG, which Python wrote with every string escaped.
//
// Stable DOM hooks (tests and users' automation rely on them; docs/notebook.md lists them):
//   tr[data-leapp-row][data-leapp-status][data-leapp-tap-status][data-leapp-first-divergent]
//   [data-leapp-node] on graph nodes, [data-leapp-hist-row][data-leapp-hist-sample] on the histogram panel,
//   [data-leapp-why] (the verdict's reason), input[data-leapp-search], [data-leapp-next-divergent] ...
// The table is virtual: only the rows scrolled into view exist as <tr>; select a row (click, search,
// keys, the API's select) to bring it into view.
//   Compare views: tr[data-leapp-flip][data-leapp-first-divergent-in][data-leapp-missing-in],
//   td[data-leapp-side][data-leapp-verdict], th[data-leapp-group], [data-leapp-hist-group] in the panel.
export { fmt } from "./shared/format.js";
export { binEdge } from "./shared/histogram.js";
export { parseQuery } from "./shared/search.js";
export { tableCsv } from "./shared/table.js";
export { renderView } from "./view.js";
export { renderDeep } from "./views/deep.js";
export { default } from "./widget.js";
