// The objects table: the window of the dashboard's live query (objects-query.js), in the query's
// order. Each row: id (and the observer that owns it, if any), class, revision, one column per selected key path (the query's values,
// live from its records), all values (from the admin stream's model; nested ones expandable), and
// Edit. A key path column's header sorts by it (again: the other way); the id header goes back to
// the id order. Only rows whose member or object changed are rebuilt. A key path cell is edited in
// place (double-click or Enter, then Enter to keep, Escape to leave) through the page's context
// (/client/context.js): shown at once, marked pending until saved (see ./pending.js).

import { el, schedule } from "../frame.js";
import { shortValue } from "./value.js";

const MAX_ITEMS = 50;
const FLASH_MS = 600;

export class ObjectsView {
  constructor({ head, body, total, datalist }, model, { onSelect, onSort, context }) {
    Object.assign(this, { head, body, total, datalist, model, onSelect, onSort, context });
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
    // Saved, queued or refused: the pending marks change though the window may not.
    for (const name of ["change", "saved", "queued", "conflict", "error"]) context?.on(name, () => schedule(this.render));
    model.on("reset", () => {
      this.rows.clear();
      this.shown = [];
      schedule(this.render);
    });
  }

  /** Shows `query`'s window (a LiveQuery); called again after each change of it. */
  show(query) {
    if (query !== this.query) {
      this.rows.clear(); // another query: other columns, and every row is drawn again (the same ids too)
      this.shown = [];
    }
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
    // A local query (one that shows the context's changes) asks the server for more than the app's own definition.
    const definition = this.query?.view ?? this.query?.definition;
    const columns = definition?.select ?? [];
    const [sortKey = null, direction = "asc"] = definition?.orderBy?.[0] ?? [];
    this.renderHead(columns, sortKey, direction);
    const ids = members.map((member) => member.id);
    const sameOrder = ids.length === this.shown.length && ids.every((id, index) => id === this.shown[index]);
    const flashed = [];
    for (const member of members) {
      const cached = this.rows.get(member.id);
      const marks = columns.map((keyPath) => this.pending(member.id, keyPath)).join();
      if (cached && cached.member === member && cached.marks === marks && !this.dirty.has(member.id)) continue;
      if (cached?.row.contains(document.activeElement) && document.activeElement.tagName === "INPUT") continue; // being edited
      const row = this.row(member, columns);
      if (cached) {
        if (sameOrder && cached.row.isConnected) cached.row.replaceWith(row);
        flashed.push(row);
      }
      this.rows.set(member.id, { row, member, marks });
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
      columns.map((keyPath) => this.cell(member, keyPath)),
      el("td", {}, object
        ? valueList(object.values, "", open, (path, isOpen) => this.remember(member.id, path, isOpen), member.id)
        : "…"),
      el("td", {}, el("button", {
        type: "button", class: "secondary", "aria-label": `Edit ${member.id}`, onclick: () => this.onSelect(member.id),
      }, "Edit")),
    );
  }

  /** Whether the context has a change of this cell not saved yet (a set through a reference: of the object referred to). */
  pending(id, keyPath) {
    return this.context?.isPending(id, keyPath.split(".")[0]) ?? false;
  }

  cell(member, keyPath) {
    const pending = this.pending(member.id, keyPath);
    const td = el("td", {
      class: `mono editable${pending ? " pending" : ""}`, "data-key-path": keyPath, tabindex: this.context ? "0" : null,
      title: pending ? "changed here, not saved yet" : this.context ? "double-click to edit" : null,
    }, shortValue(member.values[keyPath] ?? null, 60, `${member.id}.${keyPath}`));
    if (!this.context) return td;
    td.addEventListener("dblclick", () => this.edit(td, member, keyPath));
    td.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target === td) this.edit(td, member, keyPath);
    });
    return td;
  }

  /** An input in the cell: Enter sets the value (JSON, or else the text as a string) in the context. */
  edit(td, member, keyPath) {
    const input = el("input", {
      class: "cell-input", value: JSON.stringify(member.values[keyPath] ?? null), "aria-label": `${member.id}.${keyPath}`,
    });
    const leave = () => {
      this.dirty.add(member.id);
      schedule(this.render);
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Escape") return leave();
      if (event.key !== "Enter") return;
      event.preventDefault();
      let value;
      try {
        value = JSON.parse(input.value);
      } catch {
        value = input.value;
      }
      input.blur();
      this.context.set(member.id, keyPath, value);
      leave();
    });
    input.addEventListener("blur", leave);
    td.replaceChildren(input);
    input.focus();
    input.select();
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
