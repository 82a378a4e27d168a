// The live event feed, newest first, filterable by object and observer (the exact id, or a
// prefix ending in `*`: id-filter.js) and kind. A transaction's events (the same `tx` and
// revision) are one entry, labelled with its id, that opens to show them (feed-entries.js). It
// keeps the last KEEP entries in memory and at most SHOW in the page.

import { brief, el, schedule } from "../frame.js";
import { appendEvent, entryMatcher, idRange, objectOf, observerOf, transactionSummary } from "../feed-entries.js";
import { idMatcher } from "../id-filter.js";
import { queryLabel } from "../queries.js";

const KEEP = 2000; // at most 1.5 × KEEP between trims
const SHOW = 300;

export class FeedView {
  constructor({ list, object, observer, kind, pause }) {
    this.list = list;
    this.filters = { object, observer, kind };
    this.pauseButton = pause;
    this.entries = [];
    this.pending = [];
    /** Transactions already drawn (or filtered out) that got another event since. */
    this.grown = new Set();
    this.rebuild = true;
    this.paused = false;
    this.render = this.render.bind(this);
    for (const input of [object, observer, kind]) {
      input.addEventListener("input", () => this.refilter());
    }
    pause.addEventListener("click", () => {
      this.paused = !this.paused;
      pause.setAttribute("aria-pressed", String(this.paused));
      pause.textContent = this.paused ? "Resume" : "Pause";
      this.refilter();
    });
  }

  /** One admin stream event. */
  add(kind, data, id) {
    const { entry, added } = appendEvent(this.entries, kind, data, id);
    if (added && this.entries.length > KEEP * 1.5) this.entries.splice(0, this.entries.length - KEEP); // trim in bulk
    if (this.paused) return; // resuming rebuilds from `entries`
    if (added) this.pending.push(entry);
    // The admin stream sends a revision's events one by one: a transaction's may span frames.
    else if (this.pending.at(-1) !== entry) this.grown.add(entry);
    schedule(this.render);
  }

  refilter() {
    this.rebuild = true;
    schedule(this.render);
  }

  render() {
    if (this.paused && !this.rebuild) return;
    const match = this.matcher();
    for (const entry of this.grown) {
      if (entry.element?.isConnected) {
        if (match(entry)) entry.element.replaceWith(item(entry));
        else entry.element.remove();
      } else if (match(entry)) this.rebuild = true; // it matches now: its place is among older entries
    }
    this.grown.clear();
    if (this.rebuild) {
      const shown = [];
      for (let index = this.entries.length - 1; index >= 0 && shown.length < SHOW; index--) {
        if (match(this.entries[index])) shown.push(item(this.entries[index]));
      }
      this.list.replaceChildren(...shown);
      this.rebuild = false;
    } else {
      const fragment = document.createDocumentFragment();
      for (let index = this.pending.length - 1; index >= 0; index--) {
        if (match(this.pending[index])) fragment.append(item(this.pending[index]));
      }
      this.list.prepend(fragment);
      while (this.list.childElementCount > SHOW) this.list.lastElementChild.remove();
    }
    this.pending = [];
  }

  matcher() {
    return entryMatcher({
      object: idMatcher(this.filters.object.value),
      observer: idMatcher(this.filters.observer.value),
      kind: this.filters.kind.value,
    });
  }
}

function item(entry) {
  if (entry.kind === "transaction") return transactionItem(entry);
  return el("li", { dataset: { kind: entry.kind, object: objectOf(entry.data) ?? "", observer: observerOf(entry.data) ?? "" } },
    el("span", { class: "eid" }, entry.id ? `#${entry.id}` : ""),
    el("span", { class: "kind" }, entry.kind),
    describe(entry.kind, entry.data),
    entry.data.revision ? `  (rev ${entry.data.revision})` : "");
}

/** A transaction: one line with its id and what it did, opening to its events (open stays open on a redraw). */
function transactionItem(entry) {
  const details = el("details", { open: entry.open },
    el("summary", {},
      el("span", { class: "eid" }, idRange(entry)),
      el("span", { class: "kind" }, "transaction"),
      el("span", { class: "tx" }, entry.tx), ` ${transactionSummary(entry)}`,
      entry.revision ? `  (rev ${entry.revision})` : ""),
    el("ol", { class: "tx-events" }, entry.events.map(item)));
  details.addEventListener("toggle", () => { entry.open = details.open; });
  entry.element = el("li", { class: "tx-entry", dataset: { kind: "transaction", tx: entry.tx, revision: entry.revision ?? "" } }, details);
  return entry.element;
}

/** One line saying what happened. */
export function describe(kind, data) {
  switch (kind) {
    case "objectCreated": return `${data.object.id} (${data.object.class ?? "no class"}) ${brief(data.object.values, 60)}`;
    case "objectDeleted": return data.object;
    case "objectReleasePending": return `${data.object} retained by ${data.retainedBy.join(", ")}`;
    case "valueChanged": {
      const mutation = data.kind ? ` ${data.kind} at ${data.indexes.join(",")}:` : "";
      return `${data.object}.${data.keyPath} =${mutation} ${brief(data.value)}`;
    }
    case "observerCreated": return `${data.observer.name} (${data.observer.id})`;
    case "observerRemoved": return `${data.observer} (${data.reason})`;
    case "observationAdded": {
      const o = data.observation;
      return `${data.observer} → ${o.object}.${o.keyPath} [${o.options.join(",")}]`;
    }
    case "observationRemoved": return `${data.observer} ✕ ${data.object}.${data.keyPath} (${data.reason})`;
    case "subscriptionAdded": {
      const s = data.subscription;
      return `${data.observer} → notification ${s.name ?? "any name"} from ${s.object ?? "any object"}`;
    }
    case "subscriptionRemoved": return `${data.observer} ✕ ${data.subscription} (${data.reason})`;
    case "queryAdded": return `${data.observer} → ${queryLabel(data.query)} (${data.query.id})`;
    case "queryRemoved": return `${data.observer} ✕ ${data.query} on ${data.class ?? "all objects"} (${data.reason})`;
    case "notificationPosted":
      return `${data.name} from ${data.object ?? "—"}${userInfo(data)} → ${data.delivered} delivered`;
    case "tokenCreated": case "tokenChanged": {
      const t = data.token;
      return `${t.name ?? t.id} (${t.id}) ${t.scopes.length} ${t.scopes.length === 1 ? "scope" : "scopes"}, expires ${t.expiresAt ?? "never"}`;
    }
    case "tokenRevoked": return `${data.token} (${data.reason})`;
    case "change": {
      const values = [data.old !== undefined ? `old ${brief(data.old, 40)}` : "", data.new !== undefined ? `new ${brief(data.new, 40)}` : ""];
      const flags = data.initial ? " initial" : data.prior ? " prior" : "";
      return `${data.object}.${data.keyPath} ${data.kind}${flags} ${values.filter(Boolean).join(" ")}`;
    }
    case "notification": return `${data.name} from ${data.object ?? "—"}${userInfo(data)}`;
    case "cancelled": return `${data.observation ?? data.subscription ?? data.query} (${data.reason})`;
    case "query": {
      const moves = `−${data.removed.length} +${data.inserted.length} ~${data.updated.length}`;
      return `${data.query}${data.initial ? " initial" : ""} ${moves} (total ${data.total})`;
    }
    default: return brief(data);
  }
}

function userInfo(data) {
  return data.userInfo == null ? "" : ` ${brief(data.userInfo, 40)}`;
}
