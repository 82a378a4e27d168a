// Compiled, never run (`tsc -p Tests/js/types`, in make test-js): the client's types (Public/client/*.d.ts)
// hold together under strict TypeScript, and say what the code does. `@ts-expect-error` lines must fail.

import { ObsClient, ObsError } from "../../../Public/client/obs.js";
import type { TransactionAnswer, TransactionErrorDetails, TransactionOperation } from "../../../Public/client/obs.js";
import "../../../Public/client/presence.js";
import "../../../Public/client/query-window.js";
import "../../../Public/client/wire.js";

declare const client: ObsClient;

// Transactions (contract 15): each result typed by its operation.
export async function transfer(): Promise<void> {
  const answer = await client.transaction([
    { op: "set", object: "acct-1", keyPath: "balance", value: 70 },
    { op: "create", id: "order-9", class: "Order", values: { total: 10 } },
    { op: "post", name: "OrderPlaced", object: "order-9" },
    { op: "delete", object: "cart-3" },
    { op: "mutate", object: "order-9", keyPath: "items", kind: "insertion", indexes: [0], values: ["sku-1"] },
  ], {
    id: "tx-7f3a",
    expect: [
      { object: "acct-1", where: [["balance", ">=", 30]] },
      { object: "order-9", exists: false },
      { object: "acct-1", ifRevision: 1041 },
    ],
  });
  const revision: number = answer.revision;
  const id: string | undefined = answer.id;
  const created: string = answer.results[1].id;
  const delivered: number = answer.results[2].delivered;
  const deleted = answer.results[3];
  const retained: string[] | undefined = "state" in deleted ? deleted.retainedBy : undefined;
  // @ts-expect-error a set's result is {}
  answer.results[0].id;
  // @ts-expect-error a post's result has no object id
  answer.results[2].id;
  void [revision, id, created, delivered, retained];

  // @ts-expect-error an unknown op
  await client.transaction([{ op: "frob", object: "a" }]);
  // @ts-expect-error a set needs its keyPath
  await client.transaction([{ op: "set", object: "a", value: 1 }]);
  // @ts-expect-error only "now" posts in a transaction
  await client.transaction([{ op: "post", name: "N", posting: "idle" }]);
  // @ts-expect-error an expectation is about an object
  await client.transaction([{ op: "delete", object: "a" }], { expect: [{ exists: true }] });

  const operations: TransactionOperation[] = [{ op: "notify", object: "a", keyPaths: ["balance"] }];
  const any: TransactionAnswer = await client.transaction(operations);
  void any.results.map((result) => result);
  try {
    await client.transaction(operations, { id: "tx-1" });
  } catch (error) {
    const details = (error as ObsError).details as TransactionErrorDetails;
    const at: number | undefined = details.operation ?? details.expect;
    const current: number | null | undefined = details.revision;
    void [at, current];
  }
}
