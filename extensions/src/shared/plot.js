// plotly.js helpers shared by every plot (histogram, profile, bars, replay). Plotly is the page's
// global (the widget and the offline report install it once per page).

export function hasPlotly() { return typeof globalThis.Plotly !== "undefined"; }

export function clearPlot(div) {
  // plotly keeps state on the element: purge it, or a later react() draws into a cleared div
  if (hasPlotly() && div._fullLayout) globalThis.Plotly.purge(div);
  div.replaceChildren();
}

// plotly draws its text in its own fixed dark grey: take the view's colour instead, so axis labels
// and titles stay readable under a dark JupyterLab theme (the div is in the document by now)
export function themed(div, layout) {
  const fg = (typeof getComputedStyle === "function" && div.isConnected && getComputedStyle(div).color) || "#444";
  const grid = "rgba(128,128,128,0.3)";
  layout.font = Object.assign({ color: fg }, layout.font || {});
  for (const ax of ["xaxis", "yaxis"]) layout[ax] = Object.assign({ gridcolor: grid, linecolor: grid, zerolinecolor: grid }, layout[ax] || {});
  return layout;
}
