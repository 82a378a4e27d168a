// What a context's change does to the objects as the context shows them: its effects, absolute
// values computed once when the change is made (so applying them again, or after the server has
// them, changes nothing). Pure: ./context.js makes them, ./overlay.js applies them.
//
//   {object, key, value}                 a top-level key's new value
//   {object, path, value}                a key path's new value, when what leads to it is not known
//   {object, created: true, class, values}
//   {object, deleted: true}

import { referencedID } from "./evaluate.js";

/** A deep copy of JSON. */
const copy = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

/**
 * The effects of one operation (a transaction operation of contract 15: set, patch, create,
 * delete, mutate), given `doc(id)`: the object as the context shows it now (`{values, partial,
 * deleted}`, see applyEffects), or null. A set through a reference changes the object referred
 * to, as setValue:forKeyPath: does.
 */
export function effectsOf(operation, doc) {
  switch (operation.op) {
    case "create":
      return [{ object: operation.id, created: true, class: operation.class ?? null, values: copy(operation.values ?? {}) }];
    case "delete":
      return [{ object: operation.object, deleted: true }];
    case "patch":
      return Object.entries(operation.values ?? {}).map(([key, value]) => ({ object: operation.object, key, value: copy(value) }));
    case "set":
      return setEffects(operation.object, operation.keyPath.split("."), copy(operation.value), doc);
    case "mutate": {
      const array = valueAt(operation.object, operation.keyPath.split("."), doc);
      if (!Array.isArray(array)) return []; // not known here: the server's value shows until its records come
      return setEffects(operation.object, operation.keyPath.split("."), mutated(array, operation), doc);
    }
    default:
      return [];
  }
}

/** The array after a to-many mutation (section 4: indexes sorted; an insertion's are positions after). */
export function mutated(array, { kind, indexes, values = [] }) {
  const result = array.slice();
  if (kind === "insertion") indexes.forEach((index, n) => result.splice(index, 0, copy(values[n])));
  else if (kind === "removal") [...indexes].reverse().forEach((index) => result.splice(index, 1));
  else if (kind === "replacement") indexes.forEach((index, n) => { result[index] = copy(values[n]); });
  return result;
}

/** The value at `segments` of object `id` as shown, or undefined when it is not known here. */
function valueAt(id, segments, doc) {
  const state = doc(id);
  if (!state || state.deleted) return undefined;
  let current = state.values;
  for (const [n, segment] of segments.entries()) {
    if (n === 0 && state.partial && !Object.hasOwn(current, segment)) return undefined;
    const next = current?.[segment];
    const target = referencedID(next);
    if (target !== null && n < segments.length - 1) return valueAt(target, segments.slice(n + 1), doc);
    if (n < segments.length - 1 && (next === null || typeof next !== "object" || Array.isArray(next))) return undefined;
    current = next;
  }
  return current;
}

function setEffects(id, segments, value, doc) {
  if (segments.length === 1) return [{ object: id, key: segments[0], value }];
  const state = doc(id);
  const [top] = segments;
  if (!state || (state.partial && !Object.hasOwn(state.values, top))) {
    return [{ object: id, path: segments.join("."), value }]; // what leads there is not known here
  }
  const root = copy(state.values[top]);
  const target = referencedID(root);
  if (target !== null) return setEffects(target, segments.slice(1), value, doc);
  let parent = root;
  for (let n = 1; n < segments.length - 1; n++) {
    const next = parent?.[segments[n]];
    const through = referencedID(next);
    if (through !== null) return setEffects(through, segments.slice(n + 1), value, doc);
    parent = next;
  }
  if (parent === null || typeof parent !== "object" || Array.isArray(parent)) {
    return [{ object: id, path: segments.join("."), value }]; // the server refuses it (400): shown until then
  }
  parent[segments.at(-1)] = value;
  return [{ object: id, key: top, value: root }];
}

/** The objects an operation's effects change (a set through a reference changes another). */
export function objectsOf(effects) {
  return [...new Set(effects.map((effect) => effect.object))];
}
