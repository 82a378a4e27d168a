// The presence view (contract 14): who is in a room. A class ("Presence"), a room key ("room") and a
// room make a live query (objects-query.js, on an observer of its own) of the objects of that class
// whose room key equals the room: its members, ordered by `user` when the class has one, each with
// its values and the observer that owns it (whose lease ends its presence), and the head count.

import { readable, segment } from "../api.js";
import { brief, el, schedule } from "../frame.js";
import { ObjectsQuery } from "../objects-query.js";
import { shortValue } from "./value.js";

const LIMIT = 100;
const MAX_SELECT = 32;

export class PresenceView {
  /**
   * @param {{form: HTMLFormElement, count: HTMLElement, list: HTMLElement}} elements  the form has the
   *   fields `class`, `key`, `room` and the status `.result`
   */
  constructor({ form, count, list }, model, api) {
    Object.assign(this, { form, count, list, model, api });
    this.status = form.querySelector(".result");
    this.query = null;
    this.shown = null; // {className, key, room} of the query being shown
    this.ids = new Set();
    this.render = this.render.bind(this);
    this.live = new ObjectsQuery(api, {
      local: false, // who is in a room, as the server has it: edits of the Objects table are not shown here
      onWindow: (query) => {
        this.query = query;
        schedule(this.render);
      },
      onStatus: ({ state, message }) => this.say(state === "error" ? message : "", state === "error"),
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.show();
    });
    // An owner is known once the admin stream has told the object (it may come after the query's record).
    model.on("object", (id) => this.ids.has(id) && schedule(this.render));
    model.on("observers", () => this.ids.size && schedule(this.render)); // an owner's streams (polled)
    model.on("reset", () => schedule(this.render));
  }

  /** Shows the room the form names: the class's keys (but the room key) are the members' values. */
  async show() {
    const fields = this.form.elements;
    const className = fields.class.value.trim() || "Presence";
    const key = fields.key.value.trim() || "room";
    const room = fields.room.value;
    let properties;
    try {
      properties = (await this.api.get(`/v1/classes/${segment(className)}`)).properties ?? {};
    } catch (error) {
      return this.say(readable(error), true);
    }
    if (!(key in properties)) return this.say(`class ${className} has no key '${key}'`, true);
    const select = Object.entries(properties).filter(([name, property]) => name !== key && !property.computed)
      .map(([name]) => name).slice(0, MAX_SELECT);
    const definition = { class: className, where: [[key, "==", room]], limit: LIMIT, select };
    if ("user" in properties && key !== "user") definition.orderBy = [["user", "asc"]];
    this.say("");
    this.shown = { className, key, room };
    this.query = null;
    schedule(this.render);
    await this.live.start(definition);
  }

  say(message, error = false) {
    this.status.textContent = message;
    this.status.classList.toggle("error", error);
  }

  /** Stops the query (the token is gone); the form stays as it was. */
  stop() {
    this.live.stop();
  }

  /** The server is back: a query stream waiting out its backoff reconnects now. */
  nudge() {
    this.live.nudge();
  }

  render() {
    const members = this.query?.members ?? [];
    this.ids = new Set(members.map((member) => member.id));
    if (!this.shown) return;
    const { className, key, room } = this.shown;
    const total = this.query?.total ?? 0;
    this.count.dataset.total = this.query ? String(total) : "";
    this.count.textContent = this.query
      ? `${total} ${total === 1 ? "member" : "members"} in ${className} ${key} == ${brief(room)}`
        + (total > members.length ? `; the first ${members.length} are shown` : "")
      : "loading…";
    this.list.replaceChildren(...members.map((member) => this.member(member)));
  }

  member({ id, values }) {
    const owner = this.model.objects.get(id)?.owner ?? null;
    const observer = owner ? this.model.observers.get(owner) : null;
    const others = Object.entries(values).filter(([name]) => name !== "user");
    return el("li", { dataset: { object: id, owner: owner ?? "" } },
      el("strong", {}, values.user != null ? String(values.user) : id), " ",
      others.map(([name, value]) => el("span", { class: "mono" }, `${name}: `, shortValue(value, 40, `${id}.${name}`), " ")),
      el("div", { class: "hint" }, el("span", { class: "mono" }, id),
        owner ? [" · owner ", el("span", { class: "mono" }, owner),
          observer && observer.streams === 0 ? " (no stream: leaves when its lease runs out)" : ""] : " · no owner"));
  }
}
