// The query window reducer of Public/client/query-window.js (contract section 12): hand-made
// records for each rule, then random windows whose records are computed here the way the contract
// defines them (a reference LCS: kept members, moves as removal + insertion, updates of kept ones).

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { QueryWindowError, applyQueryRecord, emptyWindow, windowFromSnapshot } from "../../Public/client/query-window.js";

const win = (ids, total = ids.length, revision = 1) => ({
  members: ids.map((id) => ({ id, values: { v: id } })), total, revision,
});
const ids = (window) => window.members.map((member) => member.id);

describe("hand-made records", () => {
  test("removals go highest index first: their indexes are all positions in the old window", () => {
    const next = applyQueryRecord(win(["a", "b", "c", "d", "e"]), {
      query: "q", revision: 2, total: 3, removed: [{ index: 1, id: "b" }, { index: 3, id: "d" }], inserted: [], updated: [],
    });
    assert.deepEqual(ids(next), ["a", "c", "e"]);
    assert.equal(next.total, 3);
    assert.equal(next.revision, 2);
  });

  test("insertions go lowest index first: their indexes are all positions in the new window", () => {
    const next = applyQueryRecord(win(["a", "c", "e"]), {
      query: "q", revision: 2, total: 5, removed: [], updated: [],
      // Listed highest first on purpose: the order of the list is not what counts.
      inserted: [{ index: 2, id: "y", new: { v: 2 } }, { index: 0, id: "x", new: { v: 1 } }],
    });
    assert.deepEqual(ids(next), ["x", "a", "y", "c", "e"]);
    assert.deepEqual(next.members[2].values, { v: 2 });
  });

  test("removals come before insertions: a member may leave at an index another one enters", () => {
    const next = applyQueryRecord(win(["a", "b", "c"]), {
      query: "q", revision: 2, total: 3, updated: [],
      removed: [{ index: 1, id: "b" }], inserted: [{ index: 1, id: "z" }],
    });
    assert.deepEqual(ids(next), ["a", "z", "c"]);
    assert.deepEqual(next.members[1].values, {});
  });

  test("a move keeps the member's values, and its new values win when the record carries them", () => {
    const next = applyQueryRecord(win(["a", "b", "c"]), {
      query: "q", revision: 2, total: 3, updated: [],
      removed: [{ index: 0, id: "a", moved: true }, { index: 1, id: "b", moved: true, old: { v: "b" } }],
      inserted: [{ index: 1, id: "a", moved: true }, { index: 2, id: "b", moved: true, new: { v: "B", w: 1 } }],
    });
    assert.deepEqual(ids(next), ["c", "a", "b"]);
    assert.deepEqual(next.members.map((member) => member.values), [{ v: "c" }, { v: "a" }, { v: "B", w: 1 }]);
  });

  test("updates merge only the changed key paths, at positions after the removals and insertions", () => {
    const before = { members: [{ id: "a", values: { s: 1, t: 2 } }, { id: "b", values: { s: 3, t: 4 } }], total: 2, revision: 1 };
    const next = applyQueryRecord(before, {
      query: "q", revision: 2, total: 3,
      removed: [], inserted: [{ index: 0, id: "n", new: { s: 0, t: 0 } }],
      updated: [{ index: 2, id: "b", old: { t: 4 }, new: { t: 40, "x.y": null } }],
    });
    assert.deepEqual(next.members, [
      { id: "n", values: { s: 0, t: 0 } }, { id: "a", values: { s: 1, t: 2 } }, { id: "b", values: { s: 3, t: 40, "x.y": null } },
    ]);
    assert.equal(next.members[1], before.members[0], "an untouched member is the same object");
    assert.deepEqual(before.members[1].values, { s: 3, t: 4 }, "the old window is left as it was");
  });

  test("a record that changes only the total keeps every member", () => {
    const before = win(["a", "b"], 2);
    const next = applyQueryRecord(before, { query: "q", revision: 9, total: 40, removed: [], inserted: [], updated: [] });
    assert.deepEqual(next.members, before.members);
    assert.equal(next.members[0], before.members[0]);
    assert.deepEqual([next.total, next.revision], [40, 9]);
  });

  test("an initial record replaces the whole window, whatever it held", () => {
    const next = applyQueryRecord(win(["old-1", "old-2", "old-3"]), {
      query: "q", revision: 7, total: 12, initial: true, removed: [], updated: [],
      inserted: [{ index: 0, id: "p", new: { v: 1 } }, { index: 1, id: "old-2", new: { v: 2 } }],
    });
    assert.deepEqual(next, {
      members: [{ id: "p", values: { v: 1 } }, { id: "old-2", values: { v: 2 } }], total: 12, revision: 7,
    });
    const empty = applyQueryRecord(next, { query: "q", revision: 8, total: 0, initial: true, removed: [], inserted: [], updated: [] });
    assert.deepEqual(empty, { members: [], total: 0, revision: 8 });
  });

  test("a record that does not fit the window throws and changes nothing", () => {
    const before = win(["a", "b"]);
    const cases = [
      { removed: [{ index: 0, id: "b" }] },
      { removed: [{ index: 2, id: "c" }] },
      { inserted: [{ index: 3, id: "c" }] },
      { updated: [{ index: 0, id: "b", new: { v: 1 } }] },
      { initial: true, inserted: [{ index: 1, id: "a" }] },
    ];
    for (const record of cases) {
      assert.throws(() => applyQueryRecord(before, { query: "q", revision: 2, total: 2, ...record }), QueryWindowError);
    }
    assert.deepEqual(before, win(["a", "b"]));
  });

  test("the empty window and a POST /v1/query answer", () => {
    assert.deepEqual(emptyWindow(), { members: [], total: 0, revision: 0 });
    const answer = { objects: [{ id: "a", values: { v: 1 } }, { id: "b" }], total: 5, revision: 3 };
    assert.deepEqual(windowFromSnapshot(answer), {
      members: [{ id: "a", values: { v: 1 } }, { id: "b", values: {} }], total: 5, revision: 3,
    });
  });
});

// ---- the brute-force model ------------------------------------------------------------------

/** A deterministic random generator (mulberry32), so a failure can be repeated from its seed. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Index pairs [i, j] of one longest common subsequence of the id lists `a` and `b` (plain DP). */
function lcs(a, b) {
  const table = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const pairs = [];
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i] === b[j]) pairs.push([i++, j++]);
    else if (table[i + 1][j] >= table[i][j + 1]) i++;
    else j++;
  }
  return pairs;
}

/** The key paths whose values differ between two value maps, as {old, new} of only those. */
function changed(before, after) {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
  return keys.length
    ? { old: Object.fromEntries(keys.map((key) => [key, before[key]])), new: Object.fromEntries(keys.map((key) => [key, after[key]])) }
    : null;
}

/** The record the contract defines from window `a` to window `b`, with options `new` and `old` as asked. */
function recordBetween(a, b, { withNew = true, withOld = true, revision = 2 } = {}) {
  const aIDs = a.members.map((m) => m.id);
  const bIDs = b.members.map((m) => m.id);
  const pairs = lcs(aIDs, bIDs);
  const keptOld = new Set(pairs.map(([i]) => i));
  const keptNew = new Set(pairs.map(([, j]) => j));
  const inA = new Set(aIDs);
  const inB = new Set(bIDs);
  const removed = [];
  a.members.forEach((member, index) => {
    if (keptOld.has(index)) return;
    removed.push({ index, id: member.id, ...(withOld && { old: member.values }), ...(inB.has(member.id) && { moved: true }) });
  });
  const inserted = [];
  b.members.forEach((member, index) => {
    if (keptNew.has(index)) return;
    inserted.push({ index, id: member.id, ...(withNew && { new: member.values }), ...(inA.has(member.id) && { moved: true }) });
  });
  const updated = [];
  for (const [i, j] of pairs) {
    const change = changed(a.members[i].values, b.members[j].values);
    if (!change) continue;
    updated.push({ index: j, id: b.members[j].id, ...(withOld && { old: change.old }), ...(withNew && { new: change.new }) });
  }
  return { query: "qry_1", revision, total: b.total, removed, inserted, updated };
}

/** A random window over ids o0…o{universe-1}: a random subset in random order, each with values. */
function randomWindow(next, universe, values) {
  const members = [];
  for (let n = 0; n < universe; n++) if (next() < 0.5) members.push({ id: `o${n}`, values: values(n) });
  for (let n = members.length - 1; n > 0; n--) {
    const k = Math.floor(next() * (n + 1));
    [members[n], members[k]] = [members[k], members[n]];
  }
  return { members, total: members.length + Math.floor(next() * 5), revision: 1 };
}

/** A window like `a` that a revision could lead to: some leave, some enter, some move, some change value. */
function nextWindow(next, a, universe) {
  const members = a.members.filter(() => next() > 0.25)
    .map((member) => (next() < 0.3 ? { id: member.id, values: { ...member.values, s: Math.floor(next() * 4) } } : member));
  const present = new Set(members.map((m) => m.id));
  for (let n = 0; n < universe; n++) {
    if (!present.has(`o${n}`) && next() < 0.15) {
      members.splice(Math.floor(next() * (members.length + 1)), 0, { id: `o${n}`, values: { s: Math.floor(next() * 4), t: n } });
    }
  }
  for (let moves = Math.floor(next() * 3); moves > 0 && members.length > 1; moves--) {
    const [member] = members.splice(Math.floor(next() * members.length), 1);
    members.splice(Math.floor(next() * (members.length + 1)), 0, member);
  }
  return { members, total: members.length + Math.floor(next() * 5), revision: 2 };
}

describe("random windows against the reference LCS", () => {
  test("every record leads from the old window to the new one, values included", () => {
    for (let seed = 1; seed <= 2000; seed++) {
      const next = random(seed);
      const universe = 1 + Math.floor(next() * 16);
      let current = randomWindow(next, universe, (n) => ({ s: n % 4, t: n }));
      // A chain of revisions: each record is applied to what the previous ones made.
      for (let step = 0; step < 4; step++) {
        const target = nextWindow(next, current, universe);
        const record = recordBetween(current, target, { revision: current.revision + 1 });
        const applied = applyQueryRecord(current, record);
        assert.deepEqual(applied.members, target.members, `seed ${seed}, step ${step}: ${JSON.stringify(record)}`);
        assert.equal(applied.total, target.total);
        assert.equal(applied.revision, record.revision);
        current = applied;
      }
    }
  });

  test("the record's lists in any order give the same window", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed * 7919);
      const a = randomWindow(next, 12, (n) => ({ t: n }));
      const b = nextWindow(next, a, 12);
      const record = recordBetween(a, b);
      const shuffled = { ...record, removed: record.removed.slice().reverse(), inserted: record.inserted.slice().reverse() };
      assert.deepEqual(applyQueryRecord(a, shuffled).members, b.members, `seed ${seed}`);
    }
  });

  test("without option new, the ids are still exact and moved members keep their values", () => {
    for (let seed = 1; seed <= 500; seed++) {
      const next = random(seed * 104729);
      const a = randomWindow(next, 10, (n) => ({ t: n }));
      const b = nextWindow(next, a, 10);
      const applied = applyQueryRecord(a, recordBetween(a, b, { withNew: false }));
      assert.deepEqual(ids(applied), ids(b), `seed ${seed}`);
      const before = new Map(a.members.map((member) => [member.id, member.values]));
      for (const member of applied.members) {
        assert.deepEqual(member.values, before.get(member.id) ?? {}, `seed ${seed}: ${member.id}`);
      }
    }
  });

  test("without select (no values at all), the ids are exact and nothing is updated", () => {
    for (let seed = 1; seed <= 500; seed++) {
      const next = random(seed * 31337);
      const a = randomWindow(next, 14, () => ({}));
      const b = nextWindow(next, a, 14);
      b.members = b.members.map((member) => ({ id: member.id, values: {} }));
      const record = recordBetween(a, b);
      assert.deepEqual(record.updated, []);
      assert.deepEqual(applyQueryRecord(a, record).members, b.members, `seed ${seed}`);
    }
  });

  test("the reference LCS is a longest one (checked against every subsequence of small windows)", () => {
    const next = random(42);
    for (let round = 0; round < 200; round++) {
      const a = randomWindow(next, 7, () => ({})).members.map((m) => m.id);
      const b = randomWindow(next, 7, () => ({})).members.map((m) => m.id);
      let best = 0;
      for (let mask = 0; mask < 1 << a.length; mask++) {
        const sub = a.filter((_, index) => mask & (1 << index));
        let at = 0;
        for (const id of b) if (at < sub.length && sub[at] === id) at++;
        if (at === sub.length) best = Math.max(best, sub.length);
      }
      const pairs = lcs(a, b);
      assert.equal(pairs.length, best);
      assert.ok(pairs.every(([i, j]) => a[i] === b[j]));
    }
  });
});
