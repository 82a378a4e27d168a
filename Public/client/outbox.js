// Where a context keeps the transactions it has not sent yet (./context.js): IndexedDB in a page,
// one queue per server and token, so that a reload (offline too) finds them; memory where there is
// no IndexedDB (Node) or when the app asks for it. An entry is plain JSON:
// `{id, seq, operations, revisions, effects, createdAt, firstSentAt}`.

const DATABASE = "obs-client";
const STORE = "outbox";

/** A short digest (53 bits, cyrb53) naming a token's queue without writing the token down. */
function digest(text) {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let n = 0; n < text.length; n++) {
    const code = text.charCodeAt(n);
    h1 = Math.imul(h1 ^ code, 2654435761);
    h2 = Math.imul(h2 ^ code, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

/** The queue of a server (its URL, "" for the page's origin) and a token (null: none). */
export function queueName(base, token) {
  const server = base || globalThis.location?.origin || "";
  return `${server} ${typeof token === "string" ? digest(token) : "-"}`;
}

/** A queue in memory: gone with the page. */
export class MemoryOutbox {
  constructor() { this.entries = new Map(); }
  async load() { return [...this.entries.values()].sort((a, b) => a.seq - b.seq).map((entry) => structuredClone(entry)); }
  async put(entry) { this.entries.set(entry.id, structuredClone(entry)); }
  async remove(id) { this.entries.delete(id); }
}

/** A queue in the page's IndexedDB (database "obs-client", store "outbox", keyed by queue and id). */
export class IndexedDBOutbox {
  constructor(queue, indexedDB = globalThis.indexedDB) {
    this.queue = queue;
    this.indexedDB = indexedDB;
    this.database = null;
  }

  open() {
    this.database ??= new Promise((resolve, reject) => {
      const request = this.indexedDB.open(DATABASE, 1);
      request.onupgradeneeded = () => {
        const store = request.result.createObjectStore(STORE, { keyPath: ["queue", "id"] });
        store.createIndex("queue", "queue");
      };
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    return this.database;
  }

  async run(mode, work) {
    const database = await this.open();
    return new Promise((resolve, reject) => {
      const transaction = database.transaction(STORE, mode);
      const result = work(transaction.objectStore(STORE));
      transaction.oncomplete = () => resolve(result?.result);
      transaction.onerror = () => reject(transaction.error);
      transaction.onabort = () => reject(transaction.error);
    });
  }

  async load() {
    const entries = await this.run("readonly", (store) => store.index("queue").getAll(this.queue));
    return entries.sort((a, b) => a.seq - b.seq).map(({ queue, ...entry }) => entry);
  }

  put(entry) { return this.run("readwrite", (store) => store.put({ ...entry, queue: this.queue })); }
  remove(id) { return this.run("readwrite", (store) => store.delete([this.queue, id])); }
}

/** The outbox of a context: IndexedDB when the page has it, else memory. */
export function openOutbox(base, token, indexedDB = globalThis.indexedDB) {
  return indexedDB ? new IndexedDBOutbox(queueName(base, token), indexedDB) : new MemoryOutbox();
}
