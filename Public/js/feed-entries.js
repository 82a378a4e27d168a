// The live feed's entries as pure data (no DOM; views/feed.js draws them, Tests/js tests them):
// one admin event each, except a transaction's (contract 15): its events, which carry the same
// `tx` and revision and arrive one after another, make ONE entry, `kind` "transaction".

/**
 * The entry for one admin event: `{kind, data, id, at}`, or for an event of a transaction
 * `{kind: "transaction", tx, revision, events: [that event], at}`.
 */
export function feedEntry(kind, data, id, at = new Date()) {
  const event = { kind, data, id, at };
  if (typeof data?.tx !== "string") return event;
  return { kind: "transaction", tx: data.tx, revision: data.revision, events: [event], at };
}

/** Whether an event belongs to `entry`: the transaction entry of the same `tx` and revision. */
export function joins(entry, data) {
  return entry?.kind === "transaction" && typeof data?.tx === "string"
    && data.tx === entry.tx && data.revision === entry.revision;
}

/**
 * Adds one admin event to `entries` (oldest first): to the last entry when that is its
 * transaction's, else as a new entry. Returns `{entry, added}`: the entry it went to, and whether
 * that entry is new.
 */
export function appendEvent(entries, kind, data, id, at = new Date()) {
  const last = entries.at(-1);
  if (joins(last, data)) {
    last.events.push({ kind, data, id, at });
    return { entry: last, added: false };
  }
  const entry = feedEntry(kind, data, id, at);
  entries.push(entry);
  return { entry, added: true };
}

/** The object an event is about (an id), or null. */
export function objectOf(data) {
  if (typeof data.object === "string") return data.object;
  return data.object?.id ?? data.observation?.object ?? data.subscription?.object ?? null;
}

/** The observer an event is about (an id), or null. */
export function observerOf(data) {
  return typeof data.observer === "string" ? data.observer : data.observer?.id ?? null;
}

/**
 * A predicate on entries for the feed's filters: `kind` an event kind ("" for all; "transaction"
 * for transactions only), `object` and `observer` id matchers (id-filter.js) or null. A transaction
 * matches when one of its events does (the kind "transaction" matches every transaction).
 */
export function entryMatcher({ kind = "", object = null, observer = null }) {
  const event = (entry) => (!kind || entry.kind === kind)
    && (!object || object(objectOf(entry.data)))
    && (!observer || observer(observerOf(entry.data)));
  return (entry) => {
    if (entry.kind !== "transaction") return event(entry);
    if (kind === "transaction") return entry.events.some((one) => event({ ...one, kind: "transaction" }));
    return entry.events.some(event);
  };
}

/** What a transaction did, as "3 events: valueChanged ×2, notificationPosted" (kinds in first-seen order). */
export function transactionSummary(entry) {
  const counts = new Map();
  for (const { kind } of entry.events) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  const kinds = [...counts].map(([kind, count]) => (count > 1 ? `${kind} ×${count}` : kind));
  const events = entry.events.length === 1 ? "1 event" : `${entry.events.length} events`;
  return `${events}: ${kinds.join(", ")}`;
}

/** The ids of a transaction's events as "#12–#15" (or "#12"); "" when they have none. */
export function idRange(entry) {
  const ids = entry.events.map((event) => event.id).filter((id) => id != null);
  if (ids.length === 0) return "";
  const first = Math.min(...ids);
  const last = Math.max(...ids);
  return first === last ? `#${first}` : `#${first}–#${last}`;
}
