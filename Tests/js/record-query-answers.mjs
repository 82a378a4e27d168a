// Records the fixture of evaluate.test.mjs: random objects and random query definitions, and the
// real server's `POST /v1/query` answer to each. Regenerate (after a change of section 12's rules):
//
//   swift build --product obs-server && node Tests/js/record-query-answers.mjs [binary] [seed]
//
// It starts the binary (default .build/debug/obs-server) on a free loopback port, without a data
// directory, writes Tests/js/fixtures/query-answers.json and stops the server.

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const binary = process.argv[2] ?? `${root}.build/debug/obs-server`;
const seed = Number(process.argv[3] ?? 44);
const output = fileURLToPath(new URL("./fixtures/query-answers.json", import.meta.url));

/** A small seeded generator (mulberry32): the same seed gives the same data. */
function generator(state) {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = generator(seed);
const pick = (items) => items[Math.floor(random() * items.length)];
const int = (low, high) => low + Math.floor(random() * (high - low + 1));

const STATUSES = ["open", "closed", "draft", "Open", "öffen", "zz", ""];
const COUNTRIES = ["FR", "DE", "IT", "ES", null];
const NAMES = ["ada", "bob", "Cy", "dee", "éva", "abe", "ad"];

/** A value of any type, for the orders across types. */
function anyValue() {
  switch (int(0, 8)) {
    case 0: return null;
    case 1: return random() < 0.5;
    case 2: return int(-5, 5);
    case 3: return int(-20, 20) / 4;
    case 4: return pick(STATUSES);
    case 5: return [int(0, 3), pick(NAMES)];
    case 6: return { b: int(0, 2), a: pick(NAMES) };
    default: return undefined; // missing
  }
}

function makeObjects() {
  const people = Array.from({ length: 12 }, (_, n) => ({
    id: `p${String(n).padStart(2, "0")}`, class: "Person",
    values: { name: pick(NAMES), country: pick(COUNTRIES), age: int(18, 80) },
  }));
  const items = Array.from({ length: 60 }, (_, n) => {
    const values = {
      status: pick(STATUSES), total: random() < 0.1 ? pick(["12", null, true]) : int(0, 40) * 5,
      customer: random() < 0.85 ? { $ref: random() < 0.9 ? pick(people).id : "p-gone" } : null,
      tags: Array.from({ length: int(0, 3) }, () => pick(["a", "b", "c"])),
      lines: Array.from({ length: int(0, 3) }, () => ({ qty: int(1, 4), price: int(1, 9) })),
      misc: anyValue(),
      nested: { level: int(0, 3) },
    };
    if (random() < 0.1) delete values.status;
    return { id: `o${String(int(0, 999)).padStart(3, "0")}-${n}`, class: "Item", values };
  });
  for (const value of Object.values(items)) if (value.values.misc === undefined) delete value.values.misc;
  return [...people, ...items];
}

const ITEM_PATHS = ["status", "total", "customer.country", "customer.name", "customer.age", "tags.@count",
  "lines.@sum.qty", "lines.@max.price", "lines.@avg.price", "misc", "nested.level", "tags", "customer",
  "lines.qty", "lines.@distinctUnionOfObjects.qty", "lines.@unionOfObjects.price"];
const COMPARABLE = ["status", "total", "customer.country", "customer.name", "customer.age", "tags.@count",
  "lines.@sum.qty", "nested.level", "misc"];

function condition() {
  const keyPath = pick(COMPARABLE);
  switch (int(0, 7)) {
    case 0: return [keyPath, "==", pick([...STATUSES, ...COUNTRIES, 10, 15, 2])];
    case 1: return [keyPath, "!=", pick([...STATUSES, null, 20])];
    case 2: return [keyPath, pick(["<", "<=", ">", ">="]), pick([0, 2, 50, 100, 40, "m", "G"])];
    case 3: return [keyPath, "in", [pick(STATUSES), pick(COUNTRIES), int(0, 6) * 5]];
    case 4: return [keyPath, "prefix", pick(["o", "O", "d", "ö", "a", "F"])];
    case 5: return [keyPath, "exists", random() < 0.5];
    default: return [pick(["status", "customer.country"]), "==", pick([...STATUSES, ...COUNTRIES])];
  }
}

function definition() {
  const body = {};
  if (random() < 0.8) body.class = "Item";
  const paths = body.class ? ITEM_PATHS : ["status", "total", "name", "customer.country", "misc"];
  const comparable = body.class ? COMPARABLE : ["status", "total", "name", "misc"];
  if (random() < 0.75) body.where = Array.from({ length: random() < 0.7 ? 1 : 2 }, condition).filter(([keyPath]) => paths.includes(keyPath));
  if (random() < 0.8) body.orderBy = Array.from({ length: int(1, 3) }, () => [pick(comparable), pick(["asc", "desc"])]);
  if (random() < 0.7) body.limit = int(1, 25);
  if (random() < 0.85) body.select = [...new Set(Array.from({ length: int(1, 4) }, () => pick(paths)))];
  return body;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function main() {
  const port = await freePort();
  const child = spawn(binary, ["--host", "127.0.0.1", "--port", String(port), "--log-level", "error"], { stdio: "inherit" });
  const base = `http://127.0.0.1:${port}`;
  const call = async (method, path, body) => {
    const response = await fetch(base + path, {
      method, headers: { "Content-Type": "application/json" }, body: body && JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  try {
    for (let tries = 0; ; tries++) {
      try {
        await call("GET", "/healthz");
        break;
      } catch (error) {
        if (tries > 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const any = { type: "any" };
    await call("PUT", "/v1/classes/Person", { properties: { name: any, country: any, age: any } });
    await call("PUT", "/v1/classes/Item", {
      properties: { status: any, total: any, customer: { type: "ref", class: "Person" }, tags: any, lines: any, misc: any, nested: any },
    });
    const objects = makeObjects();
    // A reference to a deleted object reads as null: p-gone is made for the references, then deleted.
    await call("POST", "/v1/objects", { id: "p-gone", class: "Person", values: { name: "gone" } });
    for (const object of objects) await call("POST", "/v1/objects", object);
    await call("DELETE", "/v1/objects/p-gone");
    const cases = [];
    for (let n = 0; n < 150; n++) {
      const body = definition();
      const answer = await call("POST", "/v1/query", body);
      cases.push({ definition: body, objects: answer.objects, total: answer.total });
    }
    const lines = (items) => items.map((item) => JSON.stringify(item)).join(",\n");
    writeFileSync(output, `{"seed": ${seed},\n"objects": [\n${lines(objects)}\n],\n"cases": [\n${lines(cases)}\n]}\n`);
    console.log(`${cases.length} answers for ${objects.length} objects written to ${output}`);
  } finally {
    child.kill("SIGTERM");
  }
}

await main();
