// The Jupyter widget's module (anywidget; leapp_lab/views/widget.py): the view dict arrives in the
// `view` trait, the selection goes back in `selected` and `sample`.
import { renderView } from "./view.js";

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

// The anywidget host: the whole view arrives in one trait; the selection goes back in two.
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
