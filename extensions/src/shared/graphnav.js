// The graph viewport: one navigation helper for every graph panel (trace connectivity, FX, accuracy).
import { h, setSvg } from "./dom.js";

// graphNav(opts) is the viewport of one graph (trace connectivity, FX, accuracy): zoom (wheel, +/−
// buttons, + / - keys), pan (drag, arrow keys), fit (button, f / 0) and a node search box, all driven
// through the <svg>'s viewBox. The state is a centre (cx, cy) in drawing units and a zoom k (screen px
// per unit); the viewBox always has the viewport's aspect ratio. When the viewport first gets a size
// (its tab shown), the whole graph is fitted if that stays readable, else it is shown at natural size
// centred on opts.focus() (the failing node). opts: find(query) -> [target], mark(targets),
// show(target) (centre on it), focus() -> element | null, onVisible() (the viewport got a size).
const READABLE = 0.6;   // a fitted graph below 60% of its natural size is not readable: focus instead

export function svgLength(v) {
  const m = /^([\d.]+)\s*(pt|px)?$/.exec(String(v || "").trim());
  return m ? Number(m[1]) * (m[2] === "pt" ? 4 / 3 : 1) : null;
}

export function graphNav(opts) {
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
export function svgGraph(svgText, focus) {
  let nodes = [];
  // a graph input / output is found by what it shows (its port's name), not by the node its key
  // names: "stage0" finds the stages, not also the input of stage00
  const text = el => el.hasAttribute("data-leapp-io") ? [...el.querySelectorAll("text")].map(t => t.textContent).join(" ")
    : ((el.querySelector("title") || {}).textContent || "") + " " + (el.getAttribute("data-leapp-node") || el.getAttribute("data-leapp-fx") || "");
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
