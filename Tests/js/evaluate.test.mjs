// The client's one query evaluator (Public/client/evaluate.js) against the real server: the
// answers of POST /v1/query recorded on random data (filters of every operator, orders across
// types, windows, references, a deleted reference, arrays and collection operators). The fixture is
// made by record-query-answers.mjs (see there how to regenerate it).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { UNKNOWN, compareValues, evaluateQuery, holds, readKeyPath } from "../../Public/client/evaluate.js";

const fixture = JSON.parse(readFileSync(new URL("./fixtures/query-answers.json", import.meta.url), "utf8"));

test("every recorded answer of the server is the evaluator's, member for member and value for value", () => {
  assert.ok(fixture.cases.length >= 100);
  let nonEmpty = 0;
  for (const [index, { definition, objects, total }] of fixture.cases.entries()) {
    const mine = evaluateQuery(definition, fixture.objects);
    const what = `case ${index}: ${JSON.stringify(definition)}`;
    assert.equal(mine.total, total, `${what}: total`);
    assert.deepEqual(mine.objects.map(({ id }) => id), objects.map(({ id }) => id), `${what}: the window`);
    for (const [n, member] of objects.entries()) assert.deepEqual(mine.objects[n].values, member.values ?? {}, `${what}: ${member.id}`);
    if (objects.length) nonEmpty += 1;
  }
  assert.ok(nonEmpty > fixture.cases.length / 2, "most recorded windows hold members");
});

test("the fixture covers every operator, both directions, references and collection operators", () => {
  const text = JSON.stringify(fixture.cases.map(({ definition }) => definition));
  for (const needle of ['"=="', '"!="', '"<"', '">="', '"in"', '"prefix"', '"exists"', '"desc"', '"asc"', "customer.", "@sum", "@count"]) {
    assert.ok(text.includes(needle), `no recorded definition has ${needle}`);
  }
});

test("a reference the reader does not know reads as UNKNOWN, a missing object as null", () => {
  const values = { customer: { $ref: "c1" }, lines: [{ qty: 2 }, { qty: 3 }] };
  assert.equal(readKeyPath(values, "customer.name"), UNKNOWN);
  assert.equal(readKeyPath(values, "customer.name", () => null), null);
  assert.equal(readKeyPath(values, "customer.name", () => ({ name: "ada" })), "ada");
  assert.deepEqual(readKeyPath(values, "customer", () => ({ name: "ada" })), { $ref: "c1" });
  assert.equal(readKeyPath(values, "lines.@sum.qty"), 5);
  assert.deepEqual(readKeyPath(values, "lines.qty"), [2, 3]);
  assert.equal(readKeyPath(values, "missing.deeper"), null);
});

test("values order across types, and comparisons hold only between numbers or strings", () => {
  const sorted = [null, false, true, -1, 2.5, "B", "a", "é", [1], { a: 1 }];
  const shuffled = [...sorted].reverse();
  assert.deepEqual(shuffled.sort(compareValues), sorted);
  assert.equal(holds(["x", "<", 3], "2"), false);
  assert.equal(holds(["x", "==", 1], 1.0), true);
  assert.equal(holds(["x", "==", { a: 1, b: 2 }], { b: 2, a: 1 }), true);
  assert.equal(holds(["x", "exists", false], null), true);
});
