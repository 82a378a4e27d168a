// The action forms: change an object (set, to-many mutation, delete), create an object,
// a class, an observer with its registrations, and post a notification. Every answer,
// success or error, is shown next to the form that asked.

import { ApiError, readable, segment } from "../api.js";

export class FormsView {
  constructor(root, api, { onClassesChanged }) {
    this.api = api;
    this.onClassesChanged = onClassesChanged;
    const actions = {
      object: (form, op) => this.changeObject(form, op),
      "create-object": (form) => this.createObject(form),
      "create-class": (form) => this.createClass(form),
      "create-observer": (form) => this.createObserver(form),
      post: (form) => this.post(form),
    };
    for (const form of root.querySelectorAll("form[data-action]")) {
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        run(form, () => actions[form.dataset.action](form, event.submitter?.value));
      });
    }
    this.objectForm = root.querySelector("#object-form");
  }

  /** Puts an object's id into the change form, empties what was typed for another object
   * (an old key path and value would write to this one), and moves the focus there. */
  select(id) {
    const { elements } = this.objectForm;
    for (const name of ["keyPath", "value", "indexes", "values"]) elements.namedItem(name).value = "";
    const result = this.objectForm.querySelector(".result");
    result.className = "result";
    result.textContent = `Editing ${id}: give a key path.`;
    elements.namedItem("object").value = id;
    this.objectForm.elements.namedItem("keyPath").focus();
    this.objectForm.scrollIntoView({ block: "nearest" });
  }

  async changeObject(form, op) {
    const { field } = reader(form);
    const id = required(field("object"), "an object id");
    const base = `/v1/objects/${segment(id)}`;
    if (op === "delete") {
      if (!window.confirm(`Delete object ${id}? Its observers get "cancelled".`)) return "not deleted";
      const answer = await this.api.delete(base);
      return answer?.state === "releasePending"
        ? `${id}: release pending, retained by ${answer.retainedBy.join(", ")}`
        : `${id} deleted`;
    }
    const keyPath = required(field("keyPath"), "a key path");
    const path = `${base}/values/${segment(keyPath)}`;
    if (op === "mutate") {
      const body = { kind: field("kind").value, indexes: indexes(field("indexes").value) };
      if (body.kind !== "removal") body.values = json(field("values"), "the values");
      const answer = await this.api.post(`${path}/mutations`, body);
      return `${body.kind} on ${id}.${keyPath}: revision ${answer.revision}`;
    }
    const answer = await this.api.put(path, { value: json(field("value"), "the value") });
    return `${id}.${keyPath} set: revision ${answer.revision}`;
  }

  async createObject(form) {
    const { field, text } = reader(form);
    const body = {};
    if (text("id")) body.id = text("id");
    if (text("class")) body.class = text("class");
    if (text("values")) body.values = json(field("values"), "the values");
    const object = await this.api.post("/v1/objects", body);
    return `created ${object.id} (revision ${object.revision})`;
  }

  async createClass(form) {
    const { field } = reader(form);
    const name = required(field("name"), "a class name");
    await this.api.put(`/v1/classes/${segment(name)}`, { properties: json(field("properties"), "the properties") });
    this.onClassesChanged();
    return `class ${name} saved`;
  }

  async createObserver(form) {
    const { field, text } = reader(form);
    const body = { lease: Number(field("lease").value || 60), retainObserved: field("retainObserved").checked };
    if (text("name")) body.name = text("name");
    const observer = await this.api.post("/v1/observers", body);
    const said = [`observer ${observer.id} created; its token (shown once): ${observer.token}`];
    const keyPaths = field("keyPaths").value.split(",").map((k) => k.trim()).filter(Boolean);
    const object = text("object");
    const base = `/v1/observers/${segment(observer.id)}`;
    try {
      if (object || keyPaths.length) {
        const options = [...form.querySelectorAll("input[name=options]:checked")].map((box) => box.value);
        if (!object || !keyPaths.length) throw new ApiError(0, "invalidRequest", "observing needs an object and a key path");
        const answer = await this.api.post(`${base}/observations`, { object, keyPaths, options });
        said.push(`observing ${answer.observations.map((o) => `${o.object}.${o.keyPath}`).join(", ")}`);
      }
      if (text("subscribe")) {
        await this.api.post(`${base}/subscriptions`, { name: text("subscribe") });
        said.push(`subscribed to ${text("subscribe")}`);
      }
    } catch (error) {
      throw new ApiError(error.status, error.code, `${said.join("; ")}; but: ${readable(error)}`);
    }
    return said.join("; ");
  }

  async post(form) {
    const { field, text } = reader(form);
    const body = { name: required(field("name"), "a notification name"), posting: field("posting").value };
    if (text("object")) body.object = text("object");
    if (text("userInfo")) body.userInfo = json(field("userInfo"), "userInfo");
    if (field("coalesce").value) body.coalesce = field("coalesce").value.split(",");
    const answer = await this.api.post("/v1/notifications", body);
    return answer.queued
      ? `queued (${answer.coalesced} coalesced)`
      : `posted at revision ${answer.revision}, delivered to ${answer.delivered}`;
  }
}

/** Runs one form action and shows its outcome in the form's status line. */
async function run(form, action) {
  const result = form.querySelector(".result");
  result.className = "result";
  result.textContent = "…";
  try {
    const said = await action();
    result.className = "result ok";
    result.textContent = said;
  } catch (error) {
    result.className = "result error";
    result.textContent = readable(error);
  }
}

function required(field, what) {
  const value = field.value.trim();
  if (!value) throw new Error(`Please give ${what}.`);
  return value;
}

function json(field, what) {
  try {
    return JSON.parse(field.value);
  } catch {
    throw new Error(`${what[0].toUpperCase()}${what.slice(1)} must be JSON (text in "quotes"): ${field.value}`);
  }
}

function indexes(text) {
  const list = text.split(",").map((part) => part.trim()).filter(Boolean);
  const numbers = list.map(Number);
  if (!list.length || numbers.some((n) => !Number.isInteger(n) || n < 0)) {
    throw new Error("Indexes must be non-negative integers, separated by commas.");
  }
  return numbers;
}

/** Named access to a form's controls: `field(name)` the element, `text(name)` its trimmed value. */
function reader(form) {
  const field = (name) => form.elements.namedItem(name);
  return { field, text: (name) => field(name).value.trim() };
}
