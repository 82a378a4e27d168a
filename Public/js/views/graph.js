// The registration graph: observers on the left; queried classes, observed objects and
// notification names on the right; one edge per query, observation or subscription. Drawn as
// SVG, redrawn once per frame when the topology changes; an edge flashes when a change flows
// along it.

import { schedule } from "../frame.js";
import { subscriptionMatches } from "../model.js";
import { conditionsLabel, naturally, queryLabel, targetLabel } from "../queries.js";

const SVG = "http://www.w3.org/2000/svg";
const ROW = 38;
const NODE_WIDTH = 210;
const NODE_HEIGHT = 26;
const LABEL_STEP = 14;
const MAX_NODES = 150;
const ALL_OBJECTS_UP_TO = 40;
const FLASH_MS = 700;

export class GraphView {
  constructor(svg, note, model) {
    this.svg = svg;
    this.note = note;
    this.model = model;
    this.edgesByObject = new Map();
    this.edgesByClass = new Map();
    this.subscriptionEdges = [];
    this.flashes = [];
    const redraw = () => schedule(this.render);
    this.render = this.render.bind(this);
    model.on("topology", redraw);
    model.on("reset", redraw);
    model.on("flash", (flash) => {
      this.flashes.push(flash);
      schedule(this.applyFlashes);
    });
    this.applyFlashes = this.applyFlashes.bind(this);
    window.addEventListener("resize", redraw);
  }

  render() {
    const { model } = this;
    const observers = [...model.observers.values()].sort(byName);
    const shownObservers = observers.slice(0, MAX_NODES);
    const shownObserverIDs = new Set(shownObservers.map((observer) => observer.id));
    const observations = [...model.observations.values()].filter((o) => shownObserverIDs.has(o.observer));
    const subscriptions = [...model.subscriptions.values()].filter((s) => shownObserverIDs.has(s.observer));
    const queries = [...model.queries.values()].filter((q) => shownObserverIDs.has(q.observer));

    const objectIDs = new Set(observations.map((observation) => observation.object));
    if (model.objects.size <= ALL_OBJECTS_UP_TO) for (const id of model.objects.keys()) objectIDs.add(id);
    // Classes, then notification names (few, and easy to miss below a long list of objects),
    // then objects, each in natural order (emp-2 before emp-10).
    const classes = new Map(queries.map((query) => [classKey(query), targetLabel(query)]));
    const targets = [...classes].sort(([a], [b]) => naturally(a, b)).map(([key, label]) => ({ key, kind: "class", label }));
    const notificationKeys = new Map();
    for (const subscription of subscriptions) {
      const key = notificationKey(subscription);
      if (!notificationKeys.has(key)) notificationKeys.set(key, notificationLabel(subscription));
    }
    for (const [key, label] of [...notificationKeys].sort(([a], [b]) => naturally(a, b))) {
      targets.push({ key, kind: "notification", label });
    }
    targets.push(...[...objectIDs].sort(naturally).map((id) => ({ key: `o:${id}`, kind: "object", id, label: id })));
    const shownTargets = targets.slice(0, MAX_NODES);

    // Each edge ends at its own height on the target's left side, its label beside it, so
    // labels stack as a list of the key paths observed there and never overlap.
    const incoming = new Map();
    for (const observation of observations) bump(incoming, `o:${observation.object}`);
    for (const subscription of subscriptions) bump(incoming, notificationKey(subscription));
    for (const query of queries) bump(incoming, classKey(query));
    const right = new Map();
    let bottom = 8;
    for (const target of shownTargets) {
      const height = Math.max(NODE_HEIGHT, (incoming.get(target.key) ?? 0) * LABEL_STEP + 8);
      right.set(target.key, { top: bottom, height, next: 0, count: incoming.get(target.key) ?? 0 });
      bottom += height + (ROW - NODE_HEIGHT);
    }
    const left = new Map(shownObservers.map((observer, index) => [observer.id, rowY(index)]));
    // Drawn at the width it is shown (never scaled down, which left a blank band under it on a
    // narrow page); nodes narrow with it.
    const width = Math.max(this.svg.parentElement.clientWidth, 280);
    const nodeWidth = Math.min(NODE_WIDTH, Math.floor((width - 16) * 0.36));
    const height = Math.max(bottom, rowY(shownObservers.length - 1) + NODE_HEIGHT, 40) + 8;
    this.svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    this.svg.setAttribute("height", String(height));

    const x1 = 8 + nodeWidth;
    const x2 = width - 8 - nodeWidth;
    const edges = svgElement("g", { class: "edges" });
    this.edgesByObject = new Map();
    this.edgesByClass = new Map();
    this.subscriptionEdges = [];

    const addEdge = (fromID, targetKey, attributes, label, title) => {
      const y1 = left.get(fromID);
      const slot = right.get(targetKey);
      if (y1 === undefined || !slot) return null;
      const y2 = slot.top + slot.height / 2 + (slot.next - (slot.count - 1) / 2) * LABEL_STEP;
      slot.next += 1;
      const edge = svgElement("g", attributes);
      const bend = (x2 - x1) / 2;
      edge.append(
        svgElement("path", { d: `M${x1} ${y1} C${x1 + bend} ${y1} ${x2 - bend} ${y2} ${x2} ${y2}` }),
        svgElement("title", {}, title),
      );
      if (label) edge.append(svgElement("text", { x: String(x2 - 6), y: String(y2 - 3), "text-anchor": "end" }, label));
      edges.append(edge);
      return edge;
    };

    for (const observation of observations) {
      const options = observation.options?.length ? ` [${observation.options.join(",")}]` : "";
      const edge = addEdge(
        observation.observer, `o:${observation.object}`,
        { class: "edge observation", "data-registration": observation.id, "data-observer": observation.observer,
          "data-object": observation.object, "data-key-path": observation.keyPath },
        observation.keyPath + options,
        `${observation.id}: ${observation.object}.${observation.keyPath}${options}`,
      );
      if (!edge) continue;
      if (!this.edgesByObject.has(observation.object)) this.edgesByObject.set(observation.object, []);
      this.edgesByObject.get(observation.object).push({ edge, firstKey: observation.keyPath.split(".")[0] });
    }
    for (const query of queries) {
      const edge = addEdge(
        query.observer, classKey(query),
        { class: "edge query", "data-query": query.id, "data-observer": query.observer, "data-class": query.class ?? "" },
        conditionsLabel(query.where),
        `${query.id}: ${queryLabel(query)}`,
      );
      if (!edge) continue;
      if (!this.edgesByClass.has(query.class ?? null)) this.edgesByClass.set(query.class ?? null, []);
      this.edgesByClass.get(query.class ?? null).push(edge);
    }
    for (const subscription of subscriptions) {
      const edge = addEdge(
        subscription.observer, notificationKey(subscription),
        { class: "edge subscription", "data-subscription": subscription.id, "data-observer": subscription.observer },
        null,
        `${subscription.id}: ${notificationLabel(subscription)}`,
      );
      if (edge) this.subscriptionEdges.push({ edge, subscription });
    }

    const nodes = svgElement("g", { class: "nodes" });
    shownObservers.forEach((observer, index) => {
      const label = observer.name && observer.name !== observer.id ? `${observer.name} · ${observer.id}` : observer.id;
      nodes.append(node(8, rowY(index) - NODE_HEIGHT / 2, nodeWidth, NODE_HEIGHT, "observer", label, { "data-observer": observer.id }));
    });
    for (const target of shownTargets) {
      const { top, height: nodeHeight } = right.get(target.key);
      const pending = target.kind === "object" && model.objects.get(target.id)?.releasePending;
      const attributes = target.kind === "object" ? { "data-object": target.id }
        : target.kind === "class" ? { "data-class": target.key.slice(2) } : { "data-notification": target.label };
      nodes.append(node(x2, top, nodeWidth, nodeHeight, target.kind + (pending ? " pending" : ""), target.label, attributes));
    }
    if (!shownObservers.length && !shownTargets.length) {
      nodes.append(svgElement("text", { class: "empty", x: "12", y: "28" }, "No observers or objects yet."));
    }
    this.svg.replaceChildren(edges, nodes);

    const hiddenObservers = observers.length - shownObservers.length;
    const hiddenTargets = targets.length - shownTargets.length;
    const unobserved = model.objects.size > ALL_OBJECTS_UP_TO ? model.objects.size - objectIDs.size : 0;
    const notes = [];
    if (hiddenObservers > 0) notes.push(`${hiddenObservers} more observers`);
    if (hiddenTargets > 0) notes.push(`${hiddenTargets} more objects or names`);
    if (unobserved > 0) notes.push(`${unobserved} objects nobody observes (see Objects)`);
    this.note.textContent = notes.length ? `Not drawn: ${notes.join("; ")}.` : "";
  }

  /** Lights up the edges a change or a posting went along (approximated: same object and first key; a query by class). */
  applyFlashes() {
    const lit = new Set();
    for (const flash of this.flashes) {
      if (flash.notification !== undefined) {
        for (const { edge, subscription } of this.subscriptionEdges) {
          if (subscriptionMatches(subscription, flash.notification, flash.object)) lit.add(edge);
        }
        continue;
      }
      const firstKey = flash.keyPath.split(".")[0];
      for (const { edge, firstKey: observed } of this.edgesByObject.get(flash.object) ?? []) {
        if (observed === firstKey || observed.startsWith("@")) lit.add(edge);
      }
      const objectClass = this.model.objects.get(flash.object)?.class ?? null;
      for (const edge of [...(this.edgesByClass.get(objectClass) ?? []), ...(this.edgesByClass.get(null) ?? [])]) lit.add(edge);
    }
    this.flashes = [];
    for (const edge of lit) {
      edge.classList.add("flash");
      clearTimeout(edge.flashTimer);
      edge.flashTimer = setTimeout(() => edge.classList.remove("flash"), FLASH_MS);
    }
  }
}

function rowY(index) {
  return 8 + index * ROW + NODE_HEIGHT / 2;
}

function node(x, top, width, height, kind, label, attributes) {
  const group = svgElement("g", { class: `node ${kind}`, ...attributes });
  const fits = Math.max(6, Math.floor((width - 12) / 7)); // characters of 12px text
  const shown = label.length > fits ? `${label.slice(0, fits - 1)}…` : label;
  group.append(
    svgElement("rect", { x: String(x), y: String(top), width: String(width), height: String(height) }),
    svgElement("text", { x: String(x + 8), y: String(top + height / 2 + 4) }, shown),
    svgElement("title", {}, label),
  );
  return group;
}

/** The graph's node of a query's class; `c:` alone for a query over every object. */
function classKey(query) {
  return `c:${query.class ?? ""}`;
}

function notificationKey(subscription) {
  return `n:${subscription.name ?? "*"}\u0000${subscription.object ?? "*"}`;
}

function bump(counts, key) {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function notificationLabel(subscription) {
  const name = subscription.name ?? "any name";
  return subscription.object ? `${name} from ${subscription.object}` : `${name} (any object)`;
}

function byName(a, b) {
  return naturally(a.name ?? a.id, b.name ?? b.id) || naturally(a.id, b.id);
}

function svgElement(tag, attributes = {}, text) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (text !== undefined) element.textContent = text;
  return element;
}
