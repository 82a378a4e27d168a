// The SSE parser of Public/client/wire.js against the WHATWG rules for EventSource ("Parsing an
// event stream", "Interpreting an event stream"), fed whole and in chunks split anywhere.

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { SSEParser } from "../../Public/client/wire.js";

const utf8 = new TextEncoder();

/** Every event that `chunks` (strings or bytes) give, fed one by one to a fresh parser. */
function parse(chunks, parser = new SSEParser()) {
  return chunks.flatMap((chunk) => parser.push(chunk));
}

const message = (data, fields = {}) => ({ event: "message", data, id: null, lastEventId: "", ...fields });

// A stream like the server's (contract 7 and 7.2) with every feature the parser knows: a BOM,
// retry, comments, ids, control events without one, multi-line data, every line end, and
// characters of 2, 3 and 4 UTF-8 bytes (one of them two UTF-16 units).
const SAMPLE = "\uFEFFretry: 2500\n"
  + ": keep-alive\r\n"
  + "id: 57\nevent: change\ndata: {\"object\":\"acct-é\",\"new\":\"€ 😀\"}\n\n"
  + "event: synced\r\ndata: {\"lastEventId\":57}\r\n\r\n"
  + "data: first\rdata:second\r: between\rdata:  third\r\r"
  + "id: 58\nevent: notification\ndata\ndata: ü\n\n"
  + "event: commit\ndata: {\"revision\":9}\n\n";

const SAMPLE_EVENTS = [
  { event: "change", data: "{\"object\":\"acct-é\",\"new\":\"€ 😀\"}", id: "57", lastEventId: "57" },
  { event: "synced", data: "{\"lastEventId\":57}", id: null, lastEventId: "57" },
  { event: "message", data: "first\nsecond\n third", id: null, lastEventId: "57" },
  { event: "notification", data: "\nü", id: "58", lastEventId: "58" },
  { event: "commit", data: "{\"revision\":9}", id: null, lastEventId: "58" },
];

describe("a whole stream", () => {
  test("gives its events in order, with retry and the last event id", () => {
    const parser = new SSEParser();
    assert.deepEqual(parse([SAMPLE], parser), SAMPLE_EVENTS);
    assert.equal(parser.retry, 2500);
    assert.equal(parser.lastEventId, "58");
  });

  test("as bytes gives the same events as text", () => {
    assert.deepEqual(parse([utf8.encode(SAMPLE)]), SAMPLE_EVENTS);
  });

  test("as an ArrayBuffer too", () => {
    assert.deepEqual(parse([utf8.encode(SAMPLE).buffer]), SAMPLE_EVENTS);
  });
});

describe("chunks split anywhere", () => {
  const bytes = utf8.encode(SAMPLE);

  test("two byte chunks, split at every byte (multibyte characters cut in two included)", () => {
    for (let cut = 0; cut <= bytes.length; cut++) {
      const parser = new SSEParser();
      assert.deepEqual(parse([bytes.subarray(0, cut), bytes.subarray(cut)], parser), SAMPLE_EVENTS, `cut at byte ${cut}`);
      assert.equal(parser.retry, 2500);
    }
  });

  test("three byte chunks, split at every pair of bytes", () => {
    for (let first = 0; first <= bytes.length; first++) {
      for (let second = first; second <= bytes.length; second++) {
        const chunks = [bytes.subarray(0, first), bytes.subarray(first, second), bytes.subarray(second)];
        assert.deepEqual(parse(chunks), SAMPLE_EVENTS, `cuts at bytes ${first} and ${second}`);
      }
    }
  });

  test("one byte at a time", () => {
    assert.deepEqual(parse(Array.from(bytes, (byte) => Uint8Array.of(byte))), SAMPLE_EVENTS);
  });

  test("text split at every UTF-16 unit (a surrogate pair cut in two included)", () => {
    for (let cut = 0; cut <= SAMPLE.length; cut++) {
      assert.deepEqual(parse([SAMPLE.slice(0, cut), SAMPLE.slice(cut)]), SAMPLE_EVENTS, `cut at unit ${cut}`);
    }
  });

  test("one UTF-16 unit at a time, with empty chunks between", () => {
    assert.deepEqual(parse([...SAMPLE].flatMap((character) => ["", ...character.split(""), ""])), SAMPLE_EVENTS);
  });

  test("an event is given as soon as its blank line arrives, not with the next chunk", () => {
    const parser = new SSEParser();
    assert.deepEqual(parser.push("data: a\n"), []);
    assert.deepEqual(parser.push("\n"), [message("a")]);
    assert.deepEqual(parser.push("data: b\r"), []);
    assert.deepEqual(parser.push("\r"), [message("b")], "a CR ends its line without waiting for a possible LF");
  });
});

describe("line ends", () => {
  const lines = ["id: 1", "event: change", "data: a", "data: b", "", "data: c", "", ""];
  const expected = [
    { event: "change", data: "a\nb", id: "1", lastEventId: "1" },
    { event: "message", data: "c", id: null, lastEventId: "1" },
  ];

  for (const [name, end] of [["LF", "\n"], ["CRLF", "\r\n"], ["CR", "\r"]]) {
    test(`${name} alone`, () => assert.deepEqual(parse([lines.join(end)]), expected));
  }

  test("all three mixed in one stream", () => {
    assert.deepEqual(parse(["id: 1\r\nevent: change\rdata: a\ndata: b\r\n\rdata: c\n\r\n"]), expected);
  });

  test("CRLF cut between its CR and its LF is one line end", () => {
    assert.deepEqual(parse(["data: a\r", "\ndata: b\r", "\n\r", "\n"]), [message("a\nb")]);
  });

  test("CR cut from an LF by empty chunks is still one line end with it", () => {
    assert.deepEqual(parse(["data: a\r", "", "\ndata: b\n\n"]), [message("a\nb")]);
  });

  test("LF CR is two line ends (a blank line)", () => {
    assert.deepEqual(parse(["data: a\n\rdata: b\n\n"]), [message("a"), message("b")]);
  });

  test("CR CR is two line ends", () => {
    assert.deepEqual(parse(["data: a\r\r"]), [message("a")]);
  });
});

describe("fields", () => {
  test("one space after the colon is dropped, no more", () => {
    assert.deepEqual(parse(["data:x\n\ndata: x\n\ndata:  x\n\ndata:\tx\n\n"]),
      [message("x"), message("x"), message(" x"), message("\tx")]);
  });

  test("a line without a colon is a field with an empty value", () => {
    assert.deepEqual(parse(["data\n\n", "data\ndata\n\n"]), [message(""), message("\n")]);
  });

  test("only the first colon separates the value", () => {
    assert.deepEqual(parse(["data: a: b:c\n\n"]), [message("a: b:c")]);
  });

  test("field names are case-sensitive; unknown fields are ignored", () => {
    assert.deepEqual(parse(["Data: no\nDATA: no\nfoo: bar\ndata : no\ndata: yes\n\n"]), [message("yes")]);
  });

  test("comments are ignored wherever they are, the keep-alive included", () => {
    assert.deepEqual(parse([": keep-alive\n:\n::\ndata: a\n: inside\ndata: b\n\n: after\n\n"]), [message("a\nb")]);
  });

  test("a comment alone between blank lines dispatches nothing", () => {
    assert.deepEqual(parse([": keep-alive\n\n: keep-alive\n\n"]), []);
  });

  test("an event without data is not dispatched, and its type does not carry over", () => {
    assert.deepEqual(parse(["event: change\n\ndata: a\n\n"]), [message("a")]);
  });

  test("the event type is per event; an empty one is message; the last one in an event wins", () => {
    assert.deepEqual(parse(["event: reset\ndata: 1\n\ndata: 2\n\nevent:\ndata: 3\n\nevent: a\nevent: b\ndata: 4\n\n"]), [
      { ...message("1"), event: "reset" }, message("2"), message("3"), { ...message("4"), event: "b" },
    ]);
  });

  test("data keeps its text as sent: no trimming, no JSON", () => {
    assert.deepEqual(parse(["data: {\"a\": 1}  \ndata:\ndata: \u0000\u2028\n\n"]), [message("{\"a\": 1}  \n\n\u0000\u2028")]);
  });
});

describe("id", () => {
  test("is the event's own, or null; lastEventId carries over to later events", () => {
    assert.deepEqual(parse(["id: 7\ndata: a\n\ndata: b\n\n"]), [
      message("a", { id: "7", lastEventId: "7" }),
      message("b", { lastEventId: "7" }),
    ]);
  });

  test("an id holding NUL is ignored, as if the line were not there", () => {
    const parser = new SSEParser();
    assert.deepEqual(parse(["id: 7\ndata: a\n\nid: 8\u00009\ndata: b\n\nid: \u0000\ndata: c\n\n"], parser), [
      message("a", { id: "7", lastEventId: "7" }),
      message("b", { lastEventId: "7" }),
      message("c", { lastEventId: "7" }),
    ]);
    assert.equal(parser.lastEventId, "7");
  });

  test("a NUL id does not undo an earlier id of the same event", () => {
    assert.deepEqual(parse(["id: 7\nid: 8\u0000\ndata: a\n\n"]), [message("a", { id: "7", lastEventId: "7" })]);
  });

  test("an empty id resets the last event id", () => {
    const parser = new SSEParser();
    assert.deepEqual(parse(["id: 7\ndata: a\n\nid\ndata: b\n\n"], parser), [
      message("a", { id: "7", lastEventId: "7" }),
      message("b", { id: "", lastEventId: "" }),
    ]);
    assert.equal(parser.lastEventId, "");
  });

  test("an id in an event without data still sets the last event id, at its blank line", () => {
    const parser = new SSEParser();
    parser.push("id: 9\n");
    assert.equal(parser.lastEventId, "", "not before the event is complete");
    parser.push("\n");
    assert.equal(parser.lastEventId, "9");
    assert.deepEqual(parser.push("data: x\n\n"), [message("x", { lastEventId: "9" })]);
  });

  test("is text: not required to be a number, spaces after the first kept", () => {
    assert.deepEqual(parse(["id: abc  \ndata: a\n\n"]), [message("a", { id: "abc  ", lastEventId: "abc  " })]);
  });
});

describe("retry", () => {
  test("takes ASCII digits only, in ms; anything else is ignored", () => {
    const parser = new SSEParser();
    assert.equal(parser.retry, null);
    for (const [line, expected] of [
      ["retry: 3000", 3000], ["retry: x", 3000], ["retry: -1", 3000], ["retry: 1.5", 3000], ["retry: 12a", 3000],
      ["retry:", 3000], ["retry", 3000], ["retry:  100", 3000], ["retry: \u0661\u0662", 3000], ["retry: 1e3", 3000],
      ["retry:250", 250], ["retry: 0", 0], ["retry: 007", 7],
    ]) {
      parser.push(`${line}\n`);
      assert.equal(parser.retry, expected, line);
    }
  });

  test("dispatches nothing and leaves the event being read alone", () => {
    const parser = new SSEParser();
    assert.deepEqual(parse(["data: a\nretry: 10\ndata: b\n\nretry: 20\n\n"], parser), [message("a\nb")]);
    assert.equal(parser.retry, 20);
  });
});

describe("byte-order mark", () => {
  test("one at the start of the stream is dropped, as text or as bytes", () => {
    assert.deepEqual(parse(["\uFEFFdata: a\n\n"]), [message("a")]);
    assert.deepEqual(parse([utf8.encode("\uFEFFdata: a\n\n")]), [message("a")]);
  });

  test("one cut over byte chunks, or after empty chunks, is dropped too", () => {
    const bytes = utf8.encode("\uFEFFdata: a\n\n");
    assert.deepEqual(parse([new Uint8Array(0), bytes.subarray(0, 1), bytes.subarray(1, 2), bytes.subarray(2)]), [message("a")]);
    assert.deepEqual(parse(["", "\uFEFF", "data: a\n\n"]), [message("a")]);
  });

  test("only one: a second makes the first line's field unknown", () => {
    assert.deepEqual(parse(["\uFEFF\uFEFFdata: a\n\ndata: b\n\n"]), [message("b")]);
  });

  test("one after the start is text", () => {
    assert.deepEqual(parse(["data: a\n\n", "\uFEFFdata: b\n\ndata: \uFEFFc\n\n"]), [message("a"), message("\uFEFFc")]);
  });
});

describe("bytes that are not UTF-8", () => {
  test("become U+FFFD, as EventSource decodes them", () => {
    const bytes = Uint8Array.of(...utf8.encode("data: "), 0xff, 0xc3, 0x28, ...utf8.encode("\n\n"));
    assert.deepEqual(parse([bytes]), [message("\uFFFD\uFFFD(")]);
  });
});

describe("the end of a stream", () => {
  test("discards an event without its blank line, and a line not ended", () => {
    const parser = new SSEParser();
    assert.deepEqual(parse(["id: 1\ndata: a\n\nid: 2\ndata: cut off\n", "data: half"], parser), [message("a", { id: "1", lastEventId: "1" })]);
    assert.deepEqual(parser.end(), []);
    assert.equal(parser.lastEventId, "1", "the id of the discarded event never counted");
  });

  test("keeps lastEventId and retry for the next connection, which starts afresh", () => {
    const parser = new SSEParser();
    parse(["retry: 4000\nid: 5\ndata: a\n\ndata: b\r"], parser);
    parser.end();
    assert.deepEqual(parse(["\nevent: x\n", "\uFEFFdata: c\n\n"], parser), [], "the LF is not a CRLF's, the BOM not first");
    parser.end();
    assert.deepEqual(parse(["\uFEFFdata: d\n\n"], parser), [message("d", { lastEventId: "5" })]);
    assert.equal(parser.retry, 4000);
  });

  test("drops a character cut off by the end", () => {
    const parser = new SSEParser();
    parser.push(Uint8Array.of(...utf8.encode("data: "), 0xe2, 0x82));
    parser.end();
    assert.deepEqual(parser.push(utf8.encode("data: €\n\n")), [message("€")]);
  });
});
