// Section 12's rules as pure code: reading a key path (through references, over arrays, with
// collection operators), `where` conditions, the order of values and of members, and a query's
// window. The one evaluator of the client: a live query's window under a context's pending
// changes (./overlay.js, ./query.js) and the tests (Tests/js/evaluate.test.mjs, against answers
// of the real server's POST /v1/query) use it. No DOM, no fetch, no globals.
//
//   readKeyPath(values, "customer.country", lookup)  // lookup(id): that object's values, null, or UNKNOWN
//   holds(["total", ">=", 100], value)
//   evaluateQuery({class, where, orderBy, limit, select}, objects)  // {objects: [{id, values}], total}

/** What a reader does not know (an object it never saw): not `null`, which is a value. */
export const UNKNOWN = Symbol("unknown");
/** On an object's values: it knows only the keys it has, any other reads UNKNOWN (not `null`). */
export const PARTIAL = Symbol("partial");

const OPERATORS = new Set(["@count", "@sum", "@avg", "@min", "@max", "@distinctUnionOfObjects", "@unionOfObjects"]);

/** The id a value refers to (`{"$ref": id}`, and nothing else in it), or null. */
export function referencedID(value) {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === "$ref" && typeof value.$ref === "string" ? value.$ref : null;
}

/**
 * The value of `keyPath` (a string or its segments) from an object's `values`, as the server reads
 * it: plain objects are walked, a reference continues on the object it names (`lookup(id)` gives
 * its values, null when it does not exist, UNKNOWN when the reader does not know), a key applied
 * to an array maps over it, `@op` aggregates. A missing key or `null` on the way reads `null`; a
 * failed aggregate (not an array, not numbers) reads `null` too, as a query sees it.
 */
export function readKeyPath(values, keyPath, lookup = () => UNKNOWN) {
  const segments = typeof keyPath === "string" ? keyPath.split(".") : keyPath;
  try {
    return walk({ object: values, ref: null }, segments, 0, lookup);
  } catch (error) {
    if (error === NOT_A_NUMBER) return null;
    throw error;
  }
}

const NOT_A_NUMBER = new Error("the aggregate's operands are not numbers or strings");

/** A node is `{object: values}` (an object's values: its keys are read as members) or `{value}`. */
function node(value, lookup) {
  const id = referencedID(value);
  if (id === null) return { value };
  const target = lookup(id);
  if (target === UNKNOWN) return UNKNOWN;
  return target == null ? { value: null } : { object: target, ref: value };
}

function walk(start, segments, index, lookup) {
  let current = start;
  for (let at = index; at < segments.length; at++) {
    const segment = segments[at];
    if (segment.startsWith("@") && OPERATORS.has(segment)) return aggregate(segment, current, segments, at + 1, lookup);
    if (current.object) {
      if (current.object[PARTIAL] && !Object.hasOwn(current.object, segment)) return UNKNOWN;
      current = node(current.object[segment] ?? null, lookup);
    } else if (isPlainObject(current.value)) {
      current = node(current.value[segment] ?? null, lookup);
    } else if (Array.isArray(current.value)) {
      const mapped = [];
      for (const element of current.value) {
        const start = node(element, lookup);
        if (start === UNKNOWN) return UNKNOWN;
        const value = walk(start, segments, at, lookup);
        if (value === UNKNOWN) return UNKNOWN;
        mapped.push(value);
      }
      return mapped;
    } else {
      return null;
    }
    if (current === UNKNOWN) return UNKNOWN;
  }
  return current.object ? current.ref : current.value;
}

function aggregate(operator, current, segments, next, lookup) {
  const collection = current.object ? current.ref : current.value;
  let elements;
  if (Array.isArray(collection)) elements = collection;
  else if (collection === null) elements = [];
  else throw NOT_A_NUMBER;
  if (operator === "@count") return elements.length;
  const operands = [];
  for (const element of elements) {
    const start = node(element, lookup);
    if (start === UNKNOWN) return UNKNOWN;
    const value = walk(start, segments, next, lookup);
    if (value === UNKNOWN) return UNKNOWN;
    if (value !== null) operands.push(value);
  }
  switch (operator) {
    case "@sum":
      return sum(operands);
    case "@avg":
      return operands.length ? sum(operands) / operands.length : null;
    case "@min":
    case "@max":
      return extreme(operands, operator === "@min" ? -1 : 1);
    case "@unionOfObjects":
      return operands;
    default: {
      const distinct = [];
      for (const value of operands) if (!distinct.some((seen) => jsonEqual(seen, value))) distinct.push(value);
      return distinct;
    }
  }
}

function sum(operands) {
  let total = 0;
  for (const value of operands) {
    if (typeof value !== "number") throw NOT_A_NUMBER;
    total += value;
  }
  return total;
}

function extreme(operands, sign) {
  let best = null;
  for (const value of operands) {
    const order = best === null ? scalarOrder(value, value) : scalarOrder(value, best);
    if (order === null) throw NOT_A_NUMBER;
    if (best === null || order * sign > 0) best = value;
  }
  return best;
}

function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** JSON equality (`1 == 1.0`; objects whatever their keys' order). */
export function jsonEqual(a, b) {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, n) => jsonEqual(item, b[n]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && jsonEqual(a[key], b[key]));
  }
  return false;
}

/** Strings by Unicode scalar values (their UTF-8 bytes' order), as the server orders them. */
export function compareStrings(a, b) {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const x = left.next();
    const y = right.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    if (x.value !== y.value) return x.value.codePointAt(0) < y.value.codePointAt(0) ? -1 : 1;
  }
}

/** -1, 0, 1 for two numbers or two strings; null for any other pair (it never matches). */
function scalarOrder(a, b) {
  if (typeof a === "number" && typeof b === "number") return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === "string" && typeof b === "string") return compareStrings(a, b);
  return null;
}

/** Whether `value` (the key path's value on an object) satisfies `[keyPath, op, operand]`. */
export function holds([, op, operand], value) {
  switch (op) {
    case "==": return jsonEqual(value, operand);
    case "!=": return !jsonEqual(value, operand);
    case "in": return operand.some((choice) => jsonEqual(value, choice));
    case "exists": return (value !== null) === (operand === true);
    case "prefix": return typeof value === "string" && typeof operand === "string" && value.startsWith(operand);
    default: {
      const order = scalarOrder(value, operand);
      if (order === null) return false;
      return op === "<" ? order < 0 : op === "<=" ? order <= 0 : op === ">" ? order > 0 : order >= 0;
    }
  }
}

/** The text a value of another type orders by: JSON, keys sorted by their scalars, no white space. */
export function canonicalText(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalText).join(",")}]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value).sort(compareStrings);
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalText(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

function rank(value) {
  if (value === null || value === undefined) return 0;
  if (value === false) return 1;
  if (value === true) return 2;
  if (typeof value === "number") return 3;
  if (typeof value === "string") return 4;
  return 5;
}

/** Section 12's order of two values: missing/null, false, true, numbers, strings, then canonical text. */
export function compareValues(a, b) {
  const [x, y] = [rank(a), rank(b)];
  if (x !== y) return x < y ? -1 : 1;
  if (x === 3 || x === 4) return scalarOrder(a, b);
  if (x === 5) return compareStrings(canonicalText(a), canonicalText(b));
  return 0;
}

/**
 * The order of members by `orderBy` (`[[keyPath, "asc"|"desc"]]`), then the id ascending; a member
 * is `{id, key}` with `key` its orderBy values in that order.
 */
export function memberOrder(orderBy = []) {
  const descending = orderBy.map(([, direction]) => direction === "desc");
  return (a, b) => {
    for (let n = 0; n < descending.length; n++) {
      const order = compareValues(a.key[n], b.key[n]);
      if (order !== 0) return descending[n] ? -order : order;
    }
    return compareStrings(a.id, b.id);
  };
}

/** The key paths a definition's `where` and `orderBy` read. */
export function keyPathsRead({ where = [], orderBy = [] }) {
  return [...new Set([...where.map(([keyPath]) => keyPath), ...orderBy.map(([keyPath]) => keyPath)])];
}

/**
 * `POST /v1/query` computed here: `objects` is every object (`{id, class, values}`), references
 * resolve among them. Answers `{objects: [{id, values}], total}`: the first `limit` (1000) matches
 * in order, `values` the selected key paths.
 */
export function evaluateQuery(definition, objects) {
  const byID = new Map(objects.map((object) => [object.id, object]));
  const lookup = (id) => byID.get(id)?.values ?? null;
  const { where = [], orderBy = [], limit = 1000, select } = definition;
  const matches = [];
  for (const object of objects) {
    if (definition.class != null && object.class !== definition.class) continue;
    const read = (keyPath) => readKeyPath(object.values, keyPath, lookup);
    if (!where.every((condition) => holds(condition, read(condition[0])))) continue;
    matches.push({ id: object.id, key: orderBy.map(([keyPath]) => read(keyPath)), read });
  }
  matches.sort(memberOrder(orderBy));
  const window = matches.slice(0, limit).map(({ id, read }) => ({
    id, values: Object.fromEntries((select ?? []).map((keyPath) => [keyPath, read(keyPath)])),
  }));
  return { objects: window, total: matches.length };
}
