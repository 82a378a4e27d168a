// A live query's window under pending changes (a context's, ./context.js): the server's window
// with the changes applied, filtered, sorted and refilled here by section 12's rules, with the
// client's one evaluator (./evaluate.js). Pure, but for the registry of a client's contexts and
// live queries, which ./query.js and ./context.js share.
//
// A live query registered while its client has a context (or with `local: true`) asks the server
// for more than the app does (`extendDefinition`): the key paths its where and orderBy read (and
// the first step of those through a reference) are selected too, and `SPARE` more members, the
// ones that refill the window when pending changes take members out of it. The app sees its own
// select and limit (`overlayWindow`).

import { PARTIAL, UNKNOWN, holds, keyPathsRead, memberOrder, readKeyPath } from "./evaluate.js";

/** Members beyond its limit that a local query's server window holds, to refill it here. */
export const SPARE = 25;
const MAX_SELECT = 32;
const MAX_LIMIT = 10000;

const registries = new WeakMap();

/** The contexts and the live queries of `client` (one registry per client object). */
export function registryOf(client) {
  let registry = registries.get(client);
  if (!registry) {
    registry = { contexts: new Set(), queries: new Set() };
    registries.set(client, registry);
  }
  return registry;
}

/** Tells every local live query of `client` that pending changes changed (it recomputes and tells its app). */
export function pendingChanged(client) {
  for (const query of [...registryOf(client).queries]) query.pendingChanged?.();
}

/** The definition a local query registers: its where and orderBy key paths selected too, `SPARE` more members. */
export function extendDefinition(definition) {
  const read = keyPathsRead(definition);
  const firstSteps = [...read, ...(definition.select ?? [])].filter((path) => path.includes(".")).map((path) => path.split(".")[0]);
  const select = [...new Set([...(definition.select ?? []), ...read, ...firstSteps])].slice(0, MAX_SELECT);
  return { ...definition, select, limit: Math.min(MAX_LIMIT, (definition.limit ?? 1000) + SPARE) };
}

/**
 * Applies effects (see ./context.js: `{object, key, value}`, `{object, path, value}`, `{object,
 * created, class, values}`, `{object, deleted}`) in order on the objects' known states; `base(id)`
 * gives `{class, values, partial}` or null. Answers Map id → `{class, values, partial, deleted,
 * created, paths}`: `partial` values know only their own keys (others read UNKNOWN).
 */
export function applyEffects(effects, base = () => null) {
  const docs = new Map();
  const doc = (id) => {
    let state = docs.get(id);
    if (!state) {
      const known = base(id);
      state = known
        ? { class: known.class ?? null, values: { ...known.values }, partial: known.partial === true }
        : { class: undefined, values: {}, partial: true };
      Object.assign(state, { deleted: false, created: false, touched: {}, paths: new Map() });
      docs.set(id, state);
    }
    return state;
  };
  for (const effect of effects) {
    const state = doc(effect.object);
    if (effect.created) {
      const values = { ...(effect.values ?? {}) };
      Object.assign(state, { class: effect.class ?? null, values, touched: { ...values }, partial: false, deleted: false, created: true });
      state.paths.clear();
    } else if (effect.deleted) {
      state.deleted = true;
    } else if (effect.key !== undefined) {
      state.values[effect.key] = effect.value;
      state.touched[effect.key] = effect.value;
      for (const path of state.paths.keys()) if (path.split(".")[0] === effect.key) state.paths.delete(path);
    } else if (effect.path !== undefined) {
      state.paths.set(effect.path, effect.value);
    }
  }
  return docs;
}

/** Values to read key paths from: `PARTIAL` marks values that know only their own keys. */
export function readable(values, partial) {
  return partial ? { ...values, [PARTIAL]: true } : values;
}

/**
 * The window the app sees: `window` (the server's, possibly extended) under `docs` (applyEffects),
 * for the app's `definition`. Server members keep the server's values for what no pending change
 * touches; objects the docs know fully (created, or loaded) enter when they match. Answers
 * `{members, total}`.
 */
export function overlayWindow(window, definition, docs, memo = null) {
  const { where = [], orderBy = [], limit = 1000, select } = definition;
  if (docs.size === 0) {
    // Nothing pending: the server's window as the app asked for it; a member the server did not
    // change stays the same object (`memo`: server member → app's member), so views redraw only what changed.
    const members = window.members.slice(0, limit).map((member) => {
      let mine = memo?.get(member);
      if (!mine) {
        mine = { id: member.id, values: Object.fromEntries((select ?? []).map((keyPath) => [keyPath, member.values[keyPath] ?? null])) };
        memo?.set(member, mine);
      }
      return mine;
    });
    return { members, total: window.total };
  }
  const lookup = (id) => {
    const state = docs.get(id);
    if (!state) return UNKNOWN;
    return state.deleted ? null : readable(state.values, state.partial);
  };
  const candidates = [];
  const inWindow = new Set();
  let total = window.total;
  for (const member of window.members) {
    inWindow.add(member.id);
    const state = docs.get(member.id);
    if (state?.deleted) {
      total -= 1;
      continue;
    }
    const read = reader(member.id, member.values, state, lookup);
    // A member's conditions held on the server: one that cannot be read here still holds.
    const matches = where.every((condition) => {
      const value = read(condition[0]);
      return value === UNKNOWN || holds(condition, value);
    });
    if (!matches) {
      total -= 1;
      continue;
    }
    candidates.push({ id: member.id, read });
  }
  for (const [id, state] of docs) {
    if (inWindow.has(id) || state.deleted || state.partial) continue;
    if (definition.class != null && state.class !== definition.class) continue;
    const read = reader(id, {}, state, lookup);
    const values = where.map((condition) => read(condition[0]));
    if (values.some((value) => value === UNKNOWN)) continue;
    if (!where.every((condition, n) => holds(condition, values[n]))) continue;
    // New to the total: an object made here, or any when the server's window holds every match.
    if (state.created || window.members.length >= window.total) total += 1;
    candidates.push({ id, read });
  }
  for (const candidate of candidates) {
    candidate.key = orderBy.map(([keyPath]) => {
      const value = candidate.read(keyPath);
      return value === UNKNOWN ? null : value;
    });
  }
  candidates.sort(memberOrder(orderBy));
  const members = candidates.slice(0, limit).map(({ id, read }) => ({
    id,
    values: Object.fromEntries((select ?? []).map((keyPath) => {
      const value = read(keyPath);
      return [keyPath, value === UNKNOWN ? null : value];
    })),
  }));
  return { members, total: Math.max(total, members.length) };
}

/**
 * How a key path of object `id` reads under the docs: an exact pending key path first, then a walk
 * from the object's values (the server's selected top-level values, then its pending ones) through
 * pending objects; what that cannot know is the server's selected value.
 */
function reader(id, serverValues, state, lookup) {
  if (!state) {
    const tops = Object.fromEntries(Object.entries(serverValues).filter(([path]) => !path.includes(".")));
    const root = readable(tops, true);
    return (keyPath) => {
      if (!keyPath.includes(".")) return keyPath in serverValues ? serverValues[keyPath] : UNKNOWN;
      const value = readKeyPath(root, keyPath, lookup);
      if (value !== UNKNOWN) return value;
      return keyPath in serverValues ? serverValues[keyPath] : UNKNOWN;
    };
  }
  const tops = {};
  for (const [path, value] of Object.entries(serverValues)) if (!path.includes(".")) tops[path] = value;
  // The server's values are newer than a loaded object's, but not than its pending changes.
  const root = readable({ ...(state.partial ? {} : state.values), ...tops, ...state.touched }, state.partial);
  return (keyPath) => {
    if (state.paths.has(keyPath)) return state.paths.get(keyPath);
    const value = readKeyPath(root, keyPath, lookup);
    if (value !== UNKNOWN) return value;
    return keyPath in serverValues ? serverValues[keyPath] : UNKNOWN;
  };
}
