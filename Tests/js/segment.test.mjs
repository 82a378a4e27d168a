// The one path-segment encoder of Public/client/wire.js. Contract section 1: the server splits
// the path at `/` first and percent-decodes each segment on its own; so a segment must survive
// the URL parser untouched and decode back to exactly the id, name or key path.

import assert from "node:assert/strict";
import { test } from "node:test";

import { segment } from "../../Public/client/wire.js";

/** The path segments of `path` as a WHATWG URL parser (fetch's, a browser's) leaves them. */
const segmentsOf = (path) => new URL(`http://server${path}`).pathname.split("/").slice(1);

test("the id alphabet and key paths' dots go as they are", () => {
  for (const text of ["acct-1", "obj_AZaz09", "a.b.c", "~tilde", "...", ".hidden", "trailing.", "employees.name"]) {
    assert.equal(segment(text), text);
  }
});

test("everything else is percent-encoded as UTF-8 bytes, upper-case hex", () => {
  for (const [text, expected] of [
    ["a/b", "a%2Fb"],
    ["100%", "100%25"],
    ["%2F", "%252F"],
    ["%2e%2E", "%252e%252E"],
    ["employees.@count", "employees.%40count"],
    ["a b+c", "a%20b%2Bc"],
    ["?#&=;,", "%3F%23%26%3D%3B%2C"],
    ["!*'()", "%21%2A%27%28%29"],
    ["[]{}|\\^`\"<>", "%5B%5D%7B%7D%7C%5C%5E%60%22%3C%3E"],
    ["é", "%C3%A9"],
    ["€", "%E2%82%AC"],
    ["😀", "%F0%9F%98%80"],
    ["K\u212A", "K%E2%84%AA"],
    ["\u0000", "%00"],
    ["a\u0000b", "a%00b"],
    ["\t\n\r", "%09%0A%0D"],
    ["\u001f\u007f", "%1F%7F"],
    ["\u0085\u2028", "%C2%85%E2%80%A8"],
    ["", ""],
  ]) {
    assert.equal(segment(text), expected, JSON.stringify(text));
  }
});

test("a lone surrogate, which no UTF-8 can carry, is U+FFFD", () => {
  assert.equal(segment("a\uD800b"), "a%EF%BF%BDb");
  assert.equal(segment("\uDC00"), "%EF%BF%BD");
});

test("what is not a string is sent as its text", () => {
  assert.equal(segment(42), "42");
  assert.equal(segment(1.5), "1.5");
});

test("each segment survives the URL parser and decodes back to its text, alone", () => {
  const texts = ["acct-1", "a/b", "a%2Fb", "..a", "a..", "...", "%2e%2e", ".%2E", "a b", "employees.@sum.salary",
    "é€😀", "a\u0000b", "\n", "?x=1#y", "\\..\\", "x/../y", "/"];
  for (const text of texts) {
    const path = `/v1/objects/${segment(text)}/values/${segment(text)}`;
    const segments = segmentsOf(path);
    assert.equal(segments.length, 5, `${JSON.stringify(text)}: ${path} has five segments`);
    assert.deepEqual(segments.map(decodeURIComponent), ["v1", "objects", text, "values", text], JSON.stringify(text));
  }
});

test(". and .. are refused: URL parsers drop them, even percent-encoded", () => {
  for (const text of [".", ".."]) {
    assert.throws(() => segment(text), RangeError);
  }
  // Why: the request would name another resource (the parent, or the object itself).
  assert.deepEqual(segmentsOf("/v1/objects/x/values/%2E%2E"), ["v1", "objects", "x", ""]);
  assert.deepEqual(segmentsOf("/v1/observers/%2e/events"), ["v1", "observers", "events"]);
});
