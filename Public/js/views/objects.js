// The objects table: id, class, revision and values (nested key paths expandable).
// Only changed rows are rebuilt; at most MAX_ROWS rows are in the page (a filter narrows).

import { brief, el, schedule } from "../frame.js";

const MAX_ROWS = 200;
const MAX_ITEMS = 50;
const FLASH_MS = 600;

export class ObjectsView {
  constructor({ body, filter, note, datalist }, model, onSelect) {
    this.body = body;
    this.filter = filter;
    this.note = note;
    this.datalist = datalist;
    this.model = model;
    this.onSelect = onSelect;
    this.rows = new Map();
    this.dirty = new Set();
    this.shown = [];
    this.open = new Map(); // object id → set of expanded key paths (kept across redraws)
    this.render = this.render.bind(this);
    model.on("object", (id) => this.mark(id));
    model.on("objectRemoved", (id) => {
      this.open.delete(id);
      this.mark(id);
    });
    model.on("reset", () => {
      this.rows.clear();
      this.shown = [];
      schedule(this.render);
    });
    filter.addEventListener("input", () => schedule(this.render));
  }

  mark(id) {
    this.dirty.add(id);
    schedule(this.render);
  }

  visibleIDs() {
    const needle = this.filter.value.trim().toLowerCase();
    const ids = [];
    for (const object of this.model.objects.values()) {
      if (!needle || object.id.toLowerCase().includes(needle) || (object.class ?? "").toLowerCase().includes(needle)) {
        ids.push(object.id);
      }
    }
    ids.sort();
    return { ids: ids.slice(0, MAX_ROWS), total: ids.length };
  }

  render() {
    const { ids, total } = this.visibleIDs();
    const sameOrder = ids.length === this.shown.length && ids.every((id, index) => id === this.shown[index]);
    const flashed = [];
    for (const id of this.dirty) {
      const old = this.rows.get(id);
      const object = this.model.objects.get(id);
      if (!object) {
        this.rows.delete(id);
        continue;
      }
      if (!old) continue;
      const row = this.row(object);
      this.rows.set(id, row);
      if (sameOrder && old.isConnected) old.replaceWith(row);
      flashed.push(row);
    }
    this.dirty.clear();
    if (!sameOrder) {
      const rows = ids.map((id) => this.rows.get(id) ?? this.cache(id));
      this.body.replaceChildren(...rows);
      const shown = new Set(ids);
      for (const id of this.rows.keys()) if (!shown.has(id)) this.rows.delete(id);
      this.shown = ids;
      this.datalist.replaceChildren(...ids.slice(0, 100).map((id) => el("option", { value: id })));
    }
    for (const row of flashed) {
      row.classList.add("flash");
      setTimeout(() => row.classList.remove("flash"), FLASH_MS);
    }
    this.note.textContent = total > ids.length ? `Showing ${ids.length} of ${total}; filter to narrow.` : "";
  }

  cache(id) {
    const row = this.row(this.model.objects.get(id));
    this.rows.set(id, row);
    return row;
  }

  row(object) {
    const open = this.open.get(object.id) ?? new Set();
    const state = object.releasePending ? ` (release pending: ${object.retainedBy.join(", ")})` : "";
    return el("tr", { dataset: { object: object.id } },
      el("td", { class: "mono" }, object.id, state),
      el("td", {}, object.class ?? "—"),
      el("td", { class: "mono" }, String(object.revision)),
      el("td", {}, valueList(object.values, "", open, (path, isOpen) => this.remember(object.id, path, isOpen))),
      el("td", {}, el("button", {
        type: "button", class: "secondary", "aria-label": `Edit ${object.id}`, onclick: () => this.onSelect(object.id),
      }, "Edit")),
    );
  }

  remember(id, path, isOpen) {
    if (!this.open.has(id)) this.open.set(id, new Set());
    const paths = this.open.get(id);
    if (isOpen) paths.add(path);
    else paths.delete(path);
  }
}

/** A list of key: value lines; objects and arrays are <details> that expand to their key paths. */
function valueList(values, prefix, open, toggled) {
  const list = el("ul", { class: "values" });
  const entries = Array.isArray(values) ? values.map((value, index) => [String(index), value]) : Object.entries(values);
  for (const [key, value] of entries.slice(0, MAX_ITEMS)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const item = el("li", { "data-key-path": path });
    if (isContainer(value)) {
      const details = el("details", { open: open.has(path) },
        el("summary", {}, `${key}: ${Array.isArray(value) ? `[${value.length}]` : `{${Object.keys(value).length}}`}`),
        valueList(value, path, open, toggled));
      details.addEventListener("toggle", () => toggled(path, details.open));
      item.append(details);
    } else if (isRef(value)) {
      item.append(`${key}: `, el("span", { class: "ref" }, `→ ${value.$ref}`));
    } else {
      item.append(`${key}: ${brief(value, 120)}`);
    }
    list.append(item);
  }
  if (entries.length > MAX_ITEMS) list.append(el("li", {}, `… ${entries.length - MAX_ITEMS} more`));
  return list;
}

function isRef(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value) && typeof value.$ref === "string"
    && Object.keys(value).length === 1;
}

function isContainer(value) {
  return value !== null && typeof value === "object" && !isRef(value)
    && (Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0);
}
