// The NDJSON parser of Public/client/wire.js: one JSON value per LF-ended line (contract 7.2's
// `Accept: application/x-ndjson` streams), fed whole and in chunks split anywhere.

import assert from "node:assert/strict";
import { test } from "node:test";

import { NDJSONParser } from "../../Public/client/wire.js";

const utf8 = new TextEncoder();

/** Every entry that `chunks` give, fed one by one to a fresh parser, and its end's. */
function parse(chunks, parser = new NDJSONParser()) {
  return [...chunks.flatMap((chunk) => parser.push(chunk)), ...parser.end()];
}

const values = (...list) => list.map((value) => ({ value }));

// The contract's lines: an event with an id, one without (no `id` member), the keep-alive; blank
// lines, a CRLF, characters of 2 to 4 UTF-8 bytes.
const SAMPLE = "{\"id\": 57, \"event\": \"change\", \"data\": {\"object\": \"acct-é\", \"new\": \"€ 😀\"}}\n"
  + "\n"
  + "{\"event\": \"synced\", \"data\": {\"lastEventId\": 57, \"revision\": 9}}\r\n"
  + "   \t\n"
  + "{\"event\":\"keep-alive\"}\n";

const SAMPLE_VALUES = values(
  { id: 57, event: "change", data: { object: "acct-é", new: "€ 😀" } },
  { event: "synced", data: { lastEventId: 57, revision: 9 } },
  { event: "keep-alive" },
);

test("a whole stream gives one value per line, blank lines skipped", () => {
  assert.deepEqual(parse([SAMPLE]), SAMPLE_VALUES);
  assert.deepEqual(parse([utf8.encode(SAMPLE)]), SAMPLE_VALUES);
  assert.deepEqual(parse([utf8.encode(SAMPLE).buffer]), SAMPLE_VALUES);
});

test("two byte chunks, split at every byte (multibyte characters cut in two included)", () => {
  const bytes = utf8.encode(SAMPLE);
  for (let cut = 0; cut <= bytes.length; cut++) {
    assert.deepEqual(parse([bytes.subarray(0, cut), bytes.subarray(cut)]), SAMPLE_VALUES, `cut at byte ${cut}`);
  }
});

test("three byte chunks, split at every pair of bytes", () => {
  const bytes = utf8.encode(SAMPLE);
  for (let first = 0; first <= bytes.length; first++) {
    for (let second = first; second <= bytes.length; second++) {
      const chunks = [bytes.subarray(0, first), bytes.subarray(first, second), bytes.subarray(second)];
      assert.deepEqual(parse(chunks), SAMPLE_VALUES, `cuts at bytes ${first} and ${second}`);
    }
  }
});

test("text split at every UTF-16 unit, and one unit at a time", () => {
  for (let cut = 0; cut <= SAMPLE.length; cut++) {
    assert.deepEqual(parse([SAMPLE.slice(0, cut), SAMPLE.slice(cut)]), SAMPLE_VALUES, `cut at unit ${cut}`);
  }
  assert.deepEqual(parse(SAMPLE.split("")), SAMPLE_VALUES);
});

test("a line is given as soon as its LF arrives; a partial one waits", () => {
  const parser = new NDJSONParser();
  assert.deepEqual(parser.push("{\"a\":"), []);
  assert.deepEqual(parser.push(" 1}"), []);
  assert.deepEqual(parser.push("\n{\"b\""), values({ a: 1 }));
  assert.deepEqual(parser.push(": 2}\n\n\n[3]\n"), values({ b: 2 }, [3]));
  assert.deepEqual(parser.end(), []);
});

test("any JSON value is a line's value", () => {
  assert.deepEqual(parse(["1\n\"text\"\nnull\ntrue\n[]\n{}\n-0.5e3\n"]), values(1, "text", null, true, [], {}, -500));
});

test("a CR alone is JSON whitespace, never a line end", () => {
  const [entry, ...rest] = parse(["{\"a\": 1}\r{\"b\": 2}\n"]);
  assert.ok(entry.error instanceof SyntaxError, "two values on one line are not JSON");
  assert.equal(entry.line, "{\"a\": 1}\r{\"b\": 2}");
  assert.deepEqual(rest, []);
  assert.deepEqual(parse(["\r{\"a\":\r1}\r\r\n"]), values({ a: 1 }));
});

test("a line that is not JSON is an error entry with its line; the lines after it still count", () => {
  const entries = parse(["{\"a\": 1}\n", "not json\n", "{\"a\": 2\n", "\u00a0\n", "{\"b\": 3}\n"]);
  assert.equal(entries.length, 5);
  assert.deepEqual(entries[0], { value: { a: 1 } });
  for (const [index, line] of [[1, "not json"], [2, "{\"a\": 2"], [3, "\u00a0"]]) {
    assert.ok(entries[index].error instanceof SyntaxError, `entry ${index} is a SyntaxError`);
    assert.equal(entries[index].line, line);
    assert.equal("value" in entries[index], false);
  }
  assert.deepEqual(entries[4], { value: { b: 3 } });
});

test("end() gives a last line without its LF, then the parser starts afresh", () => {
  const parser = new NDJSONParser();
  assert.deepEqual(parser.push("{\"a\": 1}\n{\"b\": 2}"), values({ a: 1 }));
  assert.deepEqual(parser.end(), values({ b: 2 }));
  assert.deepEqual(parser.end(), []);
  assert.deepEqual(parser.push("\uFEFF[1]\n"), values([1]), "a new stream's BOM is dropped");
});

test("end() after a cut-off line that is not JSON yet gives its error", () => {
  const [entry] = parse(["{\"a\": "]);
  assert.ok(entry.error instanceof SyntaxError);
  assert.equal(entry.line, "{\"a\": ");
});

test("end() after a character cut off by the end gives U+FFFD in its line", () => {
  const parser = new NDJSONParser();
  assert.deepEqual(parser.push(Uint8Array.of(0x22, 0x61, 0xe2, 0x82)), []);
  const [entry] = parser.end();
  assert.ok(entry.error instanceof SyntaxError);
  assert.equal(entry.line, "\"a\uFFFD");
});

test("a byte-order mark is dropped at the start only", () => {
  assert.deepEqual(parse(["\uFEFF{\"a\": 1}\n"]), values({ a: 1 }));
  assert.deepEqual(parse([Uint8Array.of(0xef), Uint8Array.of(0xbb, 0xbf), utf8.encode("[1]\n")]), values([1]));
  const [, second] = parse(["[1]\n\uFEFF[2]\n"]);
  assert.ok(second.error instanceof SyntaxError, "a BOM later is not whitespace");
});

test("a value spread over many chunks, as a large event is", () => {
  const data = { text: "x".repeat(10000), list: Array.from({ length: 500 }, (_, n) => n) };
  const line = `${JSON.stringify({ id: 1, event: "change", data })}\n`;
  const chunks = line.match(/[^]{1,333}/g);
  assert.deepEqual(parse(chunks), values({ id: 1, event: "change", data }));
});
