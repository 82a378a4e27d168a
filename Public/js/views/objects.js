// The objects table: the window of the dashboard's live query (objects-query.js), in the query's
// order. Each row: id (and the observer that owns it, if any), class, revision, one column per selected key path (the query's values,
// live from its records), all values (from the admin stream's model; nested ones expandable), and
// Edit. A key path column's header sorts by it (again: the other way); the id header goes back to
// the id order. Only rows whose member or object changed are rebuilt.

import { el, schedule } from "../frame.js";
import { shortValue } from "./value.js";

const MAX_ITEMS = 50;
const FLASH_MS = 600;

export class ObjectsView {
  constructor({ head, body, total, datalist }, model, { onSelect, onSort }) {
    Object.assign(this, { head, body, total, datalist, model, onSelect, onSort });
    this.query = null;
    this.rows = new Map(); // object id → {row, member, columns}
    this.dirty = new Set(); // objects whose model entry changed
    this.shown = [];
    this.headKey = null;
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
  }

  /** Shows `query`'s window (a LiveQuery); called again after each change of it. */
  show(query) {
    if (query !== this.query) this.rows.clear(); // another query: other columns
    this.query = query;
    schedule(this.render);
  }

  mark(id) {
    if (!this.rows.has(id)) return; // not in the window: nothing to redraw
    this.dirty.add(id);
    schedule(this.render);
  }

  render() {
    const members = this.query?.members ?? [];
    const columns = this.query?.definition.select ?? [];
    const [sortKey = null, direction = "asc"] = this.query?.definition.orderBy?.[0] ?? [];
    this.renderHead(columns, sortKey, direction);
    const ids = members.map((member) => member.id);
    const sameOrder = ids.length === this.shown.length && ids.every((id, index) => id === this.shown[index]);
    const flashed = [];
    for (const member of members) {
      const cached = this.rows.get(member.id);
      if (cached && cached.member === member && !this.dirty.has(member.id)) continue;
      const row = this.row(member, columns);
      if (cached) {
        if (sameOrder && cached.row.isConnected) cached.row.replaceWith(row);
        flashed.push(row);
      }
      this.rows.set(member.id, { row, member });
    }
    this.dirty.clear();
    if (!sameOrder) {
      this.body.replaceChildren(...ids.map((id) => this.rows.get(id).row));
      const shown = new Set(ids);
      for (const id of this.rows.keys()) if (!shown.has(id)) this.rows.delete(id);
      this.shown = ids;
      this.datalist.replaceChildren(...ids.slice(0, 100).map((id) => el("option", { value: id })));
    }
    for (const row of flashed) {
      row.classList.add("flash");
      setTimeout(() => row.classList.remove("flash"), FLASH_MS);
    }
    const total = this.query?.total ?? 0;
    this.total.textContent = this.query
      ? `${total} ${total === 1 ? "object matches" : "objects match"}${total > ids.length ? `; the first ${ids.length} are shown` : ""}.`
      : "";
  }

  /** The header: sortable key path columns between the object's own columns. */
  renderHead(columns, sortKey, direction) {
    const key = JSON.stringify([columns, sortKey, direction]);
    if (key === this.headKey) return;
    this.headKey = key;
    const sortable = (label, keyPath) => {
      const active = keyPath === sortKey || (keyPath === null && sortKey === null);
      const order = active ? (keyPath === null || direction === "asc" ? "ascending" : "descending") : "none";
      const next = active && keyPath !== null && direction === "asc" ? "descending" : "ascending";
      return el("th", { scope: "col", "aria-sort": order },
        el("button", {
          type: "button", class: "sort", dataset: { sort: keyPath ?? "" },
          "aria-label": keyPath === null ? "Sort by id" : `Sort by ${keyPath}, ${next}`,
          onclick: () => this.onSort(keyPath),
        }, label, active ? (order === "ascending" ? " ▲" : " ▼") : ""));
    };
    this.head.replaceChildren(el("tr", {},
      sortable("id", null),
      el("th", { scope: "col" }, "class"),
      el("th", { scope: "col" }, "rev"),
      columns.map((keyPath) => sortable(keyPath, keyPath)),
      el("th", { scope: "col" }, "values"),
      el("th", { scope: "col" }, el("span", { class: "visually-hidden" }, "actions"))));
  }

  row(member, columns) {
    const object = this.model.objects.get(member.id);
    const open = this.open.get(member.id) ?? new Set();
    const state = object?.releasePending ? ` (release pending: ${object.retainedBy.join(", ")})` : "";
    // An owned object (contract 14) lives as long as its observer: marked with it.
    const owner = object?.owner ? el("div", { class: "hint owner" }, "owner ", el("span", { class: "mono" }, object.owner)) : null;
    return el("tr", { dataset: { object: member.id, owner: object?.owner ?? "" } },
      el("td", { class: "mono id", title: member.id }, member.id, state, owner),
      el("td", {}, object ? object.class ?? "—" : "…"),
      el("td", { class: "mono" }, object ? String(object.revision) : "…"),
      columns.map((keyPath) => el("td", { class: "mono", "data-key-path": keyPath },
        shortValue(member.values[keyPath] ?? null, 60, `${member.id}.${keyPath}`))),
      el("td", {}, object
        ? valueList(object.values, "", open, (path, isOpen) => this.remember(member.id, path, isOpen), member.id)
        : "…"),
      el("td", {}, el("button", {
        type: "button", class: "secondary", "aria-label": `Edit ${member.id}`, onclick: () => this.onSelect(member.id),
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
function valueList(values, prefix, open, toggled, id) {
  const list = el("ul", { class: "values" });
  const entries = Array.isArray(values) ? values.map((value, index) => [String(index), value]) : Object.entries(values);
  for (const [key, value] of entries.slice(0, MAX_ITEMS)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const item = el("li", { "data-key-path": path });
    if (isContainer(value)) {
      const details = el("details", { open: open.has(path) },
        el("summary", {}, `${key}: ${Array.isArray(value) ? `[${value.length}]` : `{${Object.keys(value).length}}`}`),
        valueList(value, path, open, toggled, id));
      details.addEventListener("toggle", () => toggled(path, details.open));
      item.append(details);
    } else if (isRef(value)) {
      item.append(`${key}: `, el("span", { class: "ref" }, `→ ${value.$ref}`));
    } else {
      item.append(`${key}: `, shortValue(value, 80, `${id}.${path}`));
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
