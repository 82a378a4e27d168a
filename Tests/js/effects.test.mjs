// A change's effects (Public/client/effects.js) and a window under them (overlay.js): nested sets,
// sets through references, to-many mutations, what is not known here, and a window whose filter
// reads through a reference to an object the context changed.

import assert from "node:assert/strict";
import { test } from "node:test";

import { effectsOf, mutated } from "../../Public/client/effects.js";
import { applyEffects, extendDefinition, overlayWindow } from "../../Public/client/overlay.js";

const known = {
  o1: { class: "Order", values: { meta: { tags: ["a"], level: 1 }, customer: { $ref: "c1" }, items: ["x", "y"] } },
  c1: { class: "Customer", values: { country: "FR", name: "Ada" } },
};
const base = (id) => known[id] ?? null;
const doc = (docs) => (id) => docs.get(id) ?? base(id);

test("a nested set gives the top-level key's new value; through a reference it changes the object referred to", () => {
  const docs = applyEffects([], base);
  assert.deepEqual(effectsOf({ op: "set", object: "o1", keyPath: "meta.level", value: 2 }, doc(docs)),
    [{ object: "o1", key: "meta", value: { tags: ["a"], level: 2 } }]);
  assert.equal(known.o1.values.meta.level, 1, "the known values are not changed in place");
  assert.deepEqual(effectsOf({ op: "set", object: "o1", keyPath: "customer.country", value: "DE" }, doc(docs)),
    [{ object: "c1", key: "country", value: "DE" }]);
  // An object never loaded: only that key path is known to change.
  assert.deepEqual(effectsOf({ op: "set", object: "zz", keyPath: "a.b", value: 1 }, doc(docs)),
    [{ object: "zz", path: "a.b", value: 1 }]);
  assert.deepEqual(effectsOf({ op: "patch", object: "zz", values: { a: 1, b: [2] } }, doc(docs)),
    [{ object: "zz", key: "a", value: 1 }, { object: "zz", key: "b", value: [2] }]);
});

test("a to-many mutation gives the new array when the array is known, nothing when it is not", () => {
  const docs = applyEffects([], base);
  assert.deepEqual(effectsOf({ op: "mutate", object: "o1", keyPath: "items", kind: "insertion", indexes: [0, 3], values: ["s", "t"] }, doc(docs)),
    [{ object: "o1", key: "items", value: ["s", "x", "y", "t"] }]);
  assert.deepEqual(effectsOf({ op: "mutate", object: "zz", keyPath: "items", kind: "removal", indexes: [0] }, doc(docs)), []);
  assert.deepEqual(mutated(["a", "b", "c", "d"], { kind: "removal", indexes: [1, 3] }), ["a", "c"]);
  assert.deepEqual(mutated(["a", "b"], { kind: "replacement", indexes: [1], values: ["z"] }), ["a", "z"]);
  // Applied again, an effect changes nothing: it is the value, not the step.
  const effects = effectsOf({ op: "mutate", object: "o1", keyPath: "items", kind: "insertion", indexes: [0], values: ["s"] }, doc(docs));
  const twice = applyEffects([...effects, ...effects], base);
  assert.deepEqual(twice.get("o1").values.items, ["s", "x", "y"]);
});

test("a member whose customer moves to another country leaves a window filtered through the reference", () => {
  const definition = { class: "Order", where: [["customer.country", "==", "FR"]], select: ["customer.name"] };
  const asked = extendDefinition(definition);
  assert.deepEqual(asked.select, ["customer.name", "customer.country", "customer"]);
  const window = {
    total: 2, revision: 5,
    members: [
      { id: "o1", values: { "customer.name": "Ada", "customer.country": "FR", customer: { $ref: "c1" } } },
      { id: "o2", values: { "customer.name": "Bob", "customer.country": "FR", customer: { $ref: "c2" } } },
    ],
  };
  const untouched = overlayWindow(window, definition, applyEffects([], base));
  assert.deepEqual(untouched.members.map((member) => member.id), ["o1", "o2"]);
  assert.deepEqual(untouched.members[0].values, { "customer.name": "Ada" });
  const docs = applyEffects([{ object: "c1", key: "country", value: "DE" }, { object: "c2", key: "name", value: "Bo" }], base);
  const after = overlayWindow(window, definition, docs);
  assert.deepEqual(after.members, [{ id: "o2", values: { "customer.name": "Bo" } }], "c2 was never loaded, its pending name shows");
  assert.equal(after.total, 1);
});
