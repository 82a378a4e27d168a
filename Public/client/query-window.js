// A query's window (contract section 12) as pure code: the ordered members and the total, and
// how one `query` record changes them. No DOM, no fetch, no globals: /client/query.js keeps a
// live query with it, and Tests/js test it under Node against a brute-force model.
//
//   let window = emptyWindow();
//   window = applyQueryRecord(window, record);   // a new window; the old one is left as it was
//   window.members  // [{id, values: {keyPath: value}}], in the query's order
//
// A record is `{query, revision, total, removed, inserted, updated, initial?}`. Its removals are
// positions in the window before it, its insertions positions after it (Swift's
// CollectionDifference): every removal is taken out highest index first, then every insertion is
// put in lowest index first. `updated` then merges changed selected values into members that kept
// their place (its indexes are positions after). An `initial` record replaces the whole window.

/** A window that does not fit a record: the record was meant for another window (a lost record). */
export class QueryWindowError extends Error {
  constructor(message) {
    super(message);
    this.name = "QueryWindowError";
  }
}

/** The window of a query before anything is known: no members, total 0, revision 0. */
export function emptyWindow() {
  return { members: [], total: 0, revision: 0 };
}

/** A window from `{objects: [{id, values}], total, revision}`, the answer of `POST /v1/query`. */
export function windowFromSnapshot({ objects, total, revision }) {
  return { members: objects.map(({ id, values }) => ({ id, values: { ...(values ?? {}) } })), total, revision };
}

/**
 * The window after `record`. Members that the record does not touch are the same objects as in
 * `window` (a view can redraw only what changed). A record that does not fit (an index out of
 * range, or a removal or update naming another id than the one at its index) throws a
 * QueryWindowError and changes nothing.
 */
export function applyQueryRecord(window, record) {
  const removed = record.removed ?? [];
  const inserted = record.inserted ?? [];
  const updated = record.updated ?? [];
  if (record.initial) {
    // The whole window, in order: it replaces whatever was known (the rebuild after a reset too).
    const members = [];
    for (const entry of sortedBy(inserted, 1)) {
      if (entry.index !== members.length) throw new QueryWindowError(`initial record: index ${entry.index} out of order`);
      members.push({ id: entry.id, values: { ...(entry.new ?? {}) } });
    }
    return { members, total: record.total, revision: record.revision };
  }
  const members = window.members.slice();
  const moved = new Map(); // id → values of a member removed here that the record puts back elsewhere
  for (const entry of sortedBy(removed, -1)) {
    const member = members[entry.index];
    if (member?.id !== entry.id) {
      throw new QueryWindowError(`removal of ${entry.id} at ${entry.index}, but ${member ? member.id : "nothing"} is there`);
    }
    members.splice(entry.index, 1);
    if (entry.moved) moved.set(entry.id, member.values);
  }
  for (const entry of sortedBy(inserted, 1)) {
    if (entry.index > members.length) {
      throw new QueryWindowError(`insertion of ${entry.id} at ${entry.index}, past the end (${members.length})`);
    }
    // A moved member keeps the values it had; the record's `new` (option new) overrides them.
    const values = { ...(entry.moved ? moved.get(entry.id) : undefined), ...(entry.new ?? {}) };
    members.splice(entry.index, 0, { id: entry.id, values });
  }
  for (const entry of updated) {
    const member = members[entry.index];
    if (member?.id !== entry.id) {
      throw new QueryWindowError(`update of ${entry.id} at ${entry.index}, but ${member ? member.id : "nothing"} is there`);
    }
    members[entry.index] = { id: member.id, values: { ...member.values, ...(entry.new ?? {}) } };
  }
  return { members, total: record.total ?? window.total, revision: record.revision ?? window.revision };
}

/** `entries` ordered by index, ascending (1) or descending (-1); the record's own order is not relied on. */
function sortedBy(entries, direction) {
  return entries.slice().sort((a, b) => direction * (a.index - b.index));
}
