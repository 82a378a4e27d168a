// A fake ObsServer for the client's node tests: answers requests by "METHOD path" handlers and
// serves event streams the test writes into (shared by query.test.mjs and presence.test.mjs).

const utf8 = new TextEncoder();

/** A JSON answer (`null`: no body). */
export const json = (body, status = 200) => new Response(body === null ? null : JSON.stringify(body),
  { status, headers: { "Content-Type": "application/json" } });

/** A handler's 404 `[status, body]`. */
export const notFound = (message) => [404, { error: { code: "notFound", message } }];

/** A server: answers by "METHOD path" handlers (`[status, body]`), and event streams the test writes into. */
export class FakeServer {
  constructor(handlers = {}) {
    this.handlers = handlers;
    this.calls = [];
    this.streams = [];
    this.fetch = (url, init = {}) => this.answer(url, init);
  }

  async answer(url, init) {
    const method = init.method ?? "GET";
    const [path] = url.split("?");
    const call = { method, path, url, headers: init.headers, body: init.body ? JSON.parse(init.body) : undefined };
    this.calls.push(call);
    // An event stream, unless a handler answers it (a stream refused, an observer gone).
    if (path.endsWith("/events") && !this.handlers[`GET ${path}`]) {
      let controller;
      const body = new ReadableStream({ start: (c) => { controller = c; } });
      // An aborted request ends its body, as a real fetch does.
      init.signal?.addEventListener("abort", () => controller.error(new DOMException("aborted", "AbortError")));
      this.streams.push({ path, controller, headers: init.headers, signal: init.signal });
      return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
    }
    const handler = this.handlers[`${method} ${path}`];
    if (!handler) return json(notFound(`no route ${method} ${path}`)[1], 404);
    const [status, answer] = await handler(call.body, call);
    return json(answer, status);
  }

  /** Writes events to the newest stream: `[name, data, id?]` each. */
  send(...events) {
    const text = events.map(([name, data, id]) => `${id != null ? `id: ${id}\n` : ""}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    this.streams.at(-1).controller.enqueue(utf8.encode(text.join("")));
  }

  /** One revision's events with ids from `firstID`, then its commit. */
  revision(revision, firstID, ...events) {
    this.send(...events.map(([name, data], n) => [name, { revision, ...data }, firstID + n]), ["commit", { revision }]);
  }

  /** The POSTs made to `path`. */
  posts(path) { return this.calls.filter((call) => call.method === "POST" && call.path === path); }
}
