// How the dashboard writes a query (contract 12) for people: its conditions, its order, its
// target. The graph's edge labels, the feed and the observers table use the same words, and
// the same natural order of ids.

import { brief } from "./frame.js";

/** `status == "open", total >= 100`; "all" for a query without conditions. */
export function conditionsLabel(where) {
  if (!where?.length) return "all";
  return where.map(([keyPath, op, operand]) => `${keyPath} ${op} ${brief(operand, 30)}`).join(", ");
}

/** `total ↓, name ↑`; "" for the default order (by id). */
export function orderLabel(orderBy) {
  return (orderBy ?? []).map(([keyPath, direction]) => `${keyPath} ${direction === "desc" ? "↓" : "↑"}`).join(", ");
}

/** What the query looks at: `class Order`, or every object. */
export function targetLabel(query) {
  return query.class ? `class ${query.class}` : "all objects";
}

/** One line for a whole query: `Order where status == "open" by total ↓ (first 50)`. */
export function queryLabel(query) {
  const order = orderLabel(query.orderBy);
  return `${query.class ?? "any class"} where ${conditionsLabel(query.where)}${order ? ` by ${order}` : ""}`
    + (query.limit ? ` (first ${query.limit})` : "");
}

const collator = new Intl.Collator("en", { numeric: true });

/** Natural order for ids and names: `emp-2` before `emp-10`; equal only when the same text. */
export function naturally(a, b) {
  return collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);
}
