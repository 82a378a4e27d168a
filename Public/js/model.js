// What the dashboard knows of the server: objects, observers, observations,
// subscriptions, queries and scoped tokens, kept current by the admin stream's events. Views subscribe to
// topics and redraw (batched per frame) when told.
//
// Events may be applied over a snapshot taken after them (the stream is opened
// before the snapshot is fetched, so nothing falls between the two): applying
// the ordered suffix of events always ends at the current state, and revisions
// keep an old objectCreated or valueChanged from undoing a newer snapshot.

export class Model {
  constructor() {
    this.listeners = new Map();
    this.clear();
  }

  clear() {
    /** id → {id, class, revision, createdAt, values, retainedBy, releasePending, owner?} */
    this.objects = new Map();
    /** id → observer summary (name, streams, expiresAt, lastEventId, backlog, dropped, …) */
    this.observers = new Map();
    /** registration id → {id, observer, object, keyPath, options, context} */
    this.observations = new Map();
    /** subscription id → {id, observer, name, object} */
    this.subscriptions = new Map();
    /** query id → {id, observer, class, where, orderBy, limit, select, options} */
    this.queries = new Map();
    /** token id → {id, name, scopes, expiresAt, client, createdAt, observers} (never the secret) */
    this.tokens = new Map();
    this.revision = 0;
  }

  /** Calls `listener(payload)` whenever `topic` happens: object, objectRemoved, observers, topology, flash, tokens. */
  on(topic, listener) {
    if (!this.listeners.has(topic)) this.listeners.set(topic, new Set());
    this.listeners.get(topic).add(listener);
  }

  emit(topic, payload) {
    for (const listener of this.listeners.get(topic) ?? []) listener(payload);
  }

  /** Replaces everything with a snapshot (see snapshot.js), then tells every view. */
  replace(snapshot) {
    this.clear();
    for (const object of snapshot.objects) this.objects.set(object.id, object);
    for (const observer of snapshot.observers) this.observers.set(observer.id, observer);
    for (const observation of snapshot.observations) this.observations.set(observation.id, observation);
    for (const subscription of snapshot.subscriptions) this.subscriptions.set(subscription.id, subscription);
    for (const query of snapshot.queries) this.queries.set(query.id, query);
    for (const token of snapshot.tokens) this.tokens.set(token.id, token);
    this.revision = snapshot.revision ?? 0;
    this.emit("reset");
    this.emit("topology");
    this.emit("observers");
    this.emit("tokens");
  }

  /** Applies one admin stream event (its `event:` name and decoded data). */
  apply(kind, data) {
    if (typeof data.revision === "number" && data.revision > this.revision) this.revision = data.revision;
    const handler = this.handlers[kind];
    if (handler) handler.call(this, data);
  }

  /** Live figures from `GET /v1/observers` for observers already known (removals come from the stream). */
  updateObserverFigures(list) {
    for (const summary of list) {
      const known = this.observers.get(summary.id);
      if (known) Object.assign(known, summary);
    }
    this.emit("observers");
  }

  removeObject(id) {
    const object = this.objects.get(id);
    if (!object) return;
    this.objects.delete(id);
    this.emit("objectRemoved", id);
    this.emit("topology");
    if (object.owner) this.emit("observers"); // its owner's row lists it
  }

  removeObserver(id) {
    this.observers.delete(id);
    for (const [regID, observation] of this.observations) if (observation.observer === id) this.observations.delete(regID);
    for (const [subID, subscription] of this.subscriptions) if (subscription.observer === id) this.subscriptions.delete(subID);
    for (const [queryID, query] of this.queries) if (query.observer === id) this.queries.delete(queryID);
    this.emit("observers");
    this.emit("topology");
  }
}

Model.prototype.handlers = {
  objectCreated({ object }) {
    const known = this.objects.get(object.id);
    if (known && known.revision > object.revision) return;
    this.objects.set(object.id, { ...object });
    this.emit("object", object.id);
    this.emit("topology");
    if (object.owner) this.emit("observers"); // its owner's row lists it
  },

  objectDeleted({ object }) {
    for (const [regID, observation] of this.observations) if (observation.object === object) this.observations.delete(regID);
    this.removeObject(object);
  },

  objectReleasePending({ object, retainedBy }) {
    const known = this.objects.get(object);
    if (!known) return;
    known.releasePending = true;
    known.retainedBy = retainedBy;
    this.emit("object", object);
    this.emit("topology");
  },

  valueChanged({ object, keyPath, value, revision }) {
    const known = this.objects.get(object);
    if (!known || known.revision > revision) return;
    if (!setAtPath(known.values, keyPath.split("."), value)) {
      this.emit("stale", object);
      return;
    }
    known.revision = revision;
    this.emit("object", object);
    this.emit("flash", { object, keyPath });
  },

  observerCreated({ observer }) {
    this.observers.set(observer.id, { ...observer });
    this.emit("observers");
    this.emit("topology");
  },

  observerRemoved({ observer }) {
    this.removeObserver(observer);
  },

  observationAdded({ observer, observation }) {
    this.observations.set(observation.id, { ...observation, observer });
    this.emit("observers");
    this.emit("topology");
  },

  observationRemoved({ observation }) {
    if (!this.observations.delete(observation)) return;
    this.emit("observers");
    this.emit("topology");
  },

  subscriptionAdded({ observer, subscription }) {
    this.subscriptions.set(subscription.id, { ...subscription, observer });
    this.emit("observers");
    this.emit("topology");
  },

  subscriptionRemoved({ subscription }) {
    if (!this.subscriptions.delete(subscription)) return;
    this.emit("observers");
    this.emit("topology");
  },

  queryAdded({ observer, query }) {
    this.queries.set(query.id, { ...query, observer });
    this.emit("observers");
    this.emit("topology");
  },

  queryRemoved({ query }) {
    if (!this.queries.delete(query)) return;
    this.emit("observers");
    this.emit("topology");
  },

  notificationPosted({ name, object }) {
    this.emit("flash", { notification: name, object });
  },

  tokenCreated({ token }) {
    this.tokens.set(token.id, { ...token });
    this.emit("tokens");
  },

  tokenChanged({ token }) {
    // A change replayed over a newer snapshot in which the token is gone must not bring it back.
    if (!this.tokens.has(token.id)) return;
    this.tokens.set(token.id, { ...token });
    this.emit("tokens");
  },

  tokenRevoked({ token }) {
    // Also a JWT's jti that was never listed: nothing to remove then.
    if (this.tokens.delete(token)) this.emit("tokens");
  },
};

/** Sets `value` at `keys` inside plain JSON objects; false when the path is not there. */
function setAtPath(values, keys, value) {
  let container = values;
  for (const key of keys.slice(0, -1)) {
    container = container?.[key];
    if (container === null || typeof container !== "object" || Array.isArray(container)) return false;
  }
  container[keys[keys.length - 1]] = value;
  return true;
}

/** Whether a subscription receives a posting (GNUstep's rules: an object-bound one only hears that object). */
export function subscriptionMatches(subscription, name, object) {
  const nameMatches = subscription.name == null || subscription.name === name;
  const objectMatches = subscription.object == null || subscription.object === object;
  return nameMatches && objectMatches;
}
