// A fake ObsServer with objects for the context's node tests: `GET /v1/objects/{id}` and `POST
// /v1/transactions` (set, patch, create, delete; `expect` ifRevision; the id remembered as the
// idempotency key), over a network that can be taken away (`offline`) or lose one answer after the
// write (`loseNextAnswer`). Everything else goes to a FakeServer (queries, streams).

import { FakeServer, json } from "./fake-server.mjs";

const error = (status, code, details = {}) => json({ error: { code, message: `${code}`, details } }, status);

export class FakeStore {
  constructor(objects = {}, handlers = {}) {
    this.revision = 1;
    this.objects = new Map(Object.entries(objects).map(([id, values]) => [id, { id, class: null, values, revision: 1 }]));
    this.answers = new Map(); // transaction id → [body text, answer]
    this.transactions = []; // the bodies applied, in order
    this.sent = []; // every body received (replays too)
    this.offline = false;
    this.loseNextAnswer = false;
    this.holdAnswers = null; // a promise the answers of transactions wait for (the write is done before)
    this.server = new FakeServer(handlers);
    this.fetch = (url, init = {}) => this.answer(url, init);
  }

  async answer(url, init) {
    if (this.offline) throw new TypeError("Failed to fetch");
    const method = init.method ?? "GET";
    const [path] = url.split("?");
    const object = path.match(/^\/v1\/objects\/([^/]+)$/);
    if (method === "GET" && object) {
      const found = this.objects.get(decodeURIComponent(object[1]));
      return found ? json(structuredClone(found)) : error(404, "notFound");
    }
    if (method === "POST" && path === "/v1/transactions") {
      const response = this.transaction(init.body);
      await this.holdAnswers;
      if (this.loseNextAnswer) {
        this.loseNextAnswer = false;
        throw new TypeError("the connection was reset");
      }
      return response;
    }
    return this.server.fetch(url, init);
  }

  transaction(text) {
    const body = JSON.parse(text);
    this.sent.push(body);
    const remembered = this.answers.get(body.id);
    if (remembered) return remembered[0] === text ? json(remembered[1]) : error(409, "idempotencyKeyReused", { id: body.id });
    for (const [index, condition] of (body.expect ?? []).entries()) {
      const current = this.objects.get(condition.object);
      if (current?.revision !== condition.ifRevision) {
        return error(412, "revisionMismatch", { expect: index, revision: current?.revision ?? null });
      }
    }
    const revision = ++this.revision;
    for (const operation of body.operations) this.apply(operation, revision);
    this.transactions.push(body);
    const answer = { revision, id: body.id, results: body.operations.map(() => ({})) };
    this.answers.set(body.id, [text, answer]);
    return json(answer);
  }

  apply(operation, revision) {
    if (operation.op === "create") {
      this.objects.set(operation.id, { id: operation.id, class: operation.class ?? null, values: operation.values ?? {}, revision });
      return;
    }
    const object = this.objects.get(operation.object);
    if (operation.op === "delete") this.objects.delete(operation.object);
    else if (operation.op === "patch") Object.assign(object.values, operation.values);
    else if (operation.op === "set") object.values[operation.keyPath] = operation.value;
    if (object) object.revision = revision;
  }

  /** Another client's write. */
  write(id, values) {
    const object = this.objects.get(id);
    Object.assign(object.values, values);
    object.revision = ++this.revision;
    return object.revision;
  }

  value(id, key) { return this.objects.get(id)?.values[key]; }
}
