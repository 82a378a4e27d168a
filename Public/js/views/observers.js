// The observers table: name (and the scoped token that made it), streams, lease countdown,
// registrations and the objects it owns (contract 14), last event id, backlog, dropped; a delivering observer (contract 16)
// shows its URL, state, attempts and last error under its name, and its unacknowledged events as its backlog;
// each row can open the observer's own stream or delete it. Rows are
// kept and their cells updated in place, so the figures refreshed every second never
// take the keyboard focus away from a row's buttons.

import { el, schedule } from "../frame.js";
import { naturally, queryLabel } from "../queries.js";

const MAX_ROWS = 200;
const MAX_OWNED = 5;

export class ObserversView {
  constructor(body, model, { onWatch, onDelete }) {
    this.body = body;
    this.model = model;
    this.onWatch = onWatch;
    this.onDelete = onDelete;
    this.entries = new Map(); // observer id → {row, cells, observer, registrationsKey}
    this.order = "";
    this.render = this.render.bind(this);
    model.on("observers", () => schedule(this.render));
    model.on("reset", () => schedule(this.render));
    setInterval(() => this.tick(), 1000);
  }

  render() {
    const observers = [...this.model.observers.values()]
      .sort((a, b) => naturally(a.name ?? a.id, b.name ?? b.id) || naturally(a.id, b.id));
    const shown = observers.slice(0, MAX_ROWS);
    const owned = new Map();
    for (const o of this.model.observations.values()) add(owned, o.observer, "observations", `${o.object}.${o.keyPath}`);
    for (const s of this.model.subscriptions.values()) {
      add(owned, s.observer, "subscriptions", `notification ${s.name ?? "*"} from ${s.object ?? "*"}`);
    }
    for (const q of this.model.queries.values()) add(owned, q.observer, "queries", `query ${queryLabel(q)}`);
    for (const o of this.model.objects.values()) if (o.owner) add(owned, o.owner, "objects", o);
    const ids = new Set(shown.map((observer) => observer.id));
    for (const id of this.entries.keys()) if (!ids.has(id)) this.entries.delete(id);
    for (const observer of shown) {
      if (!this.entries.has(observer.id)) this.entries.set(observer.id, this.build(observer));
      this.fill(this.entries.get(observer.id), observer, owned.get(observer.id));
    }
    const order = `${[...ids].join("\n")}\n${observers.length}`;
    if (order === this.order) return;
    this.order = order;
    const rows = shown.map((observer) => this.entries.get(observer.id).row);
    if (observers.length > MAX_ROWS) {
      rows.push(el("tr", {}, el("td", { colspan: "8" }, `… ${observers.length - MAX_ROWS} more observers`)));
    }
    this.body.replaceChildren(...rows);
  }

  build(observer) {
    const label = observer.name && observer.name !== observer.id ? observer.name : observer.id;
    // data-label names each cell where a narrow page stacks the row (dashboard.css).
    const cells = {
      streams: el("td", { "data-label": "streams" }),
      lease: el("td", { class: "mono", "data-label": "lease" }),
      registrations: el("td", { class: "registrations", "data-label": "registrations" }),
      lastEventId: el("td", { class: "mono", "data-label": "last id" }),
      backlog: el("td", { class: "mono", "data-label": "backlog" }),
      dropped: el("td", { class: "mono", "data-label": "dropped" }),
      owns: el("div", { class: "hint owns" }),
      delivery: el("div", { class: "hint delivery" }),
    };
    // The token that made it never changes (contract 13): its name is looked up once.
    const token = observer.tokenId ? this.model.tokens.get(observer.tokenId) : null;
    const row = el("tr", { dataset: { observer: observer.id, token: observer.tokenId ?? "" } },
      el("td", { class: "who" }, el("strong", { title: label }, label), el("div", { class: "mono hint", title: observer.id }, observer.id),
        observer.tokenId ? el("div", { class: "hint token-of" }, "token ",
          el("span", { class: "mono" }, token?.name ? `${token.name} (${observer.tokenId})` : observer.tokenId)) : null,
        cells.delivery, cells.owns),
      cells.streams, cells.lease, cells.registrations, cells.lastEventId, cells.backlog, cells.dropped,
      el("td", { class: "actions" },
        el("button", { type: "button", class: "secondary", "aria-label": `Watch the stream of ${label}`, onclick: () => this.onWatch(observer.id) }, "Watch"),
        " ",
        el("button", { type: "button", class: "danger", "aria-label": `Delete ${label}`, onclick: () => this.onDelete(observer.id) }, "Delete")),
    );
    return { row, cells, observer, registrationsKey: null };
  }

  fill(entry, observer, { observations = [], subscriptions = [], queries = [], objects = [] } = {}) {
    entry.observer = observer;
    const { cells } = entry;
    setText(cells.streams, observer.streams ? `● ${observer.streams}` : "0");
    setText(cells.lastEventId, String(observer.lastEventId ?? 0));
    setText(cells.backlog, String((observer.delivery ? observer.delivery.backlog : observer.backlog) ?? 0));
    this.showDelivery(entry);
    setText(cells.dropped, String(observer.dropped ?? 0));
    this.showLease(entry);
    this.showOwned(entry, objects);
    const registrations = [...observations, ...subscriptions, ...queries];
    const key = registrations.join("\n");
    if (key === entry.registrationsKey) return;
    entry.registrationsKey = key;
    const wasOpen = cells.registrations.querySelector("details")?.open ?? false;
    const summary = `${observations.length} obs · ${subscriptions.length} subs${queries.length ? ` · ${queries.length} ${queries.length === 1 ? "query" : "queries"}` : ""}`;
    cells.registrations.replaceChildren(registrations.length
      ? el("details", { open: wasOpen }, el("summary", {}, summary),
        el("ul", { class: "values" }, registrations.map((text) => el("li", {}, text))))
      : summary);
  }

  /** The objects it owns (contract 14), under its name: they go when it goes. */
  showOwned({ cells }, objects) {
    const ids = objects.map((object) => object.id).sort(naturally);
    const key = ids.join("\n");
    if (cells.owns.dataset.ids === key) return;
    cells.owns.dataset.ids = key;
    const shown = ids.slice(0, MAX_OWNED).map((id) => {
      const object = this.model.objects.get(id);
      return el("span", { class: "mono", dataset: { object: id } }, id, object?.class ? ` (${object.class})` : "");
    });
    cells.owns.replaceChildren(...(ids.length
      ? ["owns ", ...shown.flatMap((span, n) => (n ? [", ", span] : [span])), ids.length > MAX_OWNED ? ` … ${ids.length - MAX_OWNED} more` : ""]
      : []));
  }

  /** Where a delivering observer pushes (contract 16), and how it goes: state, attempts, the last error. */
  showDelivery({ cells, observer }) {
    const d = observer.delivery;
    const text = d
      ? `delivers to ${d.url} · ${d.state ?? "idle"}${d.attempts ? ` (${d.attempts} attempts)` : ""} · acknowledged ${d.acknowledged}${d.lastError ? ` · ${d.lastError}` : ""}`
      : "";
    setText(cells.delivery, text);
    cells.delivery.dataset.state = d ? d.state ?? "idle" : "";
    if (d) cells.delivery.title = d.url;
  }

  /** Lease: "held" while a stream is connected, none for a delivering observer, else a countdown to `expiresAt`. */
  showLease({ cells, observer }) {
    if (observer.delivery) {
      setText(cells.lease, "none");
      return;
    }
    if (observer.streams > 0 || !observer.expiresAt) {
      setText(cells.lease, "held");
      return;
    }
    const left = Math.round((Date.parse(observer.expiresAt) - Date.now()) / 1000);
    setText(cells.lease, left > 0 ? `${left} s` : "expiring…");
  }

  tick() {
    for (const entry of this.entries.values()) this.showLease(entry);
  }
}

function setText(cell, text) {
  if (cell.textContent !== text) cell.textContent = text;
}

/** Adds `text` to the `field` list of observer `id`. */
function add(owned, id, field, text) {
  if (!owned.has(id)) owned.set(id, { observations: [], subscriptions: [], queries: [], objects: [] });
  owned.get(id)[field].push(text);
}
