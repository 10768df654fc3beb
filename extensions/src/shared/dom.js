// DOM construction. Every user string reaches the DOM through textContent / setAttribute; the only
// innerHTML is a graph SVG that Python wrote with every string escaped (setSvg).
import { fmt } from "./format.js";

export function h(tag, attrs, ...children) {
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

export const SVGNS = "http://www.w3.org/2000/svg";
export function svgEl(tag, attrs, ...children) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) if (c !== undefined && c !== null) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

// SVG ids are page-global: a graph drawn twice on a page (or a marker on a hidden tab) must not take
// another drawing's marker. Python writes ids derived from the drawing (deterministic HTML); each
// insertion here renames them page-uniquely and rewrites the url(#id) references. One counter for
// the page: the accuracy graph numbers its own marker from it too.
let svgSerial = 0;
export function nextSvgSerial() { return ++svgSerial; }

export function setSvg(box, svg) {
  box.innerHTML = svg || "";
  const n = nextSvgSerial();
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

export function kv(rows, cls) {
  return h("table", { class: "leapp-kv " + (cls || "") },
    h("tbody", {}, rows.filter(r => r).map(([k, v, kind, title]) => h("tr", {}, h("th", { title }, k), h("td", {}, fmt(v, kind))))));
}

// A list of values and the columns that name them (the view dict says labels once per table).
export function labelled(columns, values, skipEmpty) {
  const out = [];
  (columns || []).forEach((c, i) => {
    const v = values ? values[i] : null;
    if (skipEmpty && (v === null || v === undefined || v === "")) return;
    out.push([c.label, v, c.type, c.description || null]);
  });
  return out;
}

export function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h("a", { href: url, download: name, style: "display:none" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 4000);
}
