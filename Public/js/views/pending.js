// The Objects table's pending changes (a context of the page's client, /client/context.js): how
// many there are, Save (one transaction), Discard, Undo (the last edit), what a save did, and a
// conflict (412: the object changed on the server since it was edited) as both values side by
// side, with Keep mine (saved again over the server's revision) or Take theirs (discarded).

import { readable } from "../api.js";
import { el } from "../frame.js";
import { shortValue } from "./value.js";

export class PendingView {
  constructor({ count, save, discard, undo, result, conflict }, context) {
    Object.assign(this, { count, saveButton: save, discardButton: discard, undoButton: undo, result, conflict, context });
    save.addEventListener("click", () => this.save());
    discard.addEventListener("click", () => {
      context.rollback();
      this.say("Discarded.", "ok");
    });
    undo.addEventListener("click", () => context.undo());
    context.on("change", () => this.update());
    context.on("saved", (event) => {
      this.say(`Saved as one transaction: revision ${event.revision}.`, "ok");
      this.update();
    });
    context.on("queued", () => {
      this.say("The server cannot be reached: the changes are kept and saved once it can be.", "error");
      this.update();
    });
    context.on("error", ({ error }) => this.say(`Not saved: ${readable(error)}. The changes are pending again.`, "error"));
    context.on("conflict", (conflict) => this.showConflict(conflict));
    this.update();
  }

  update() {
    const pending = this.context.pending.length;
    const queued = this.context.queued.length;
    this.count.textContent = pending
      ? `${pending} ${pending === 1 ? "change" : "changes"} pending`
      : queued ? `${queued} saved, waiting for the server` : "No pending changes.";
    this.saveButton.disabled = !pending;
    this.discardButton.disabled = !pending;
    this.undoButton.disabled = !this.context.canUndo;
    if (!pending) this.conflict.hidden = true;
  }

  async save() {
    this.conflict.hidden = true;
    this.say("Saving…");
    try {
      await this.context.save();
    } catch (error) {
      if (!error.conflict) this.say(`Not saved: ${readable(error)}`, "error");
    }
  }

  say(text, kind = "") {
    this.result.className = `result ${kind}`;
    this.result.textContent = text;
  }

  /** Both values of every key the refused transaction changed, and the choice. */
  showConflict(conflict) {
    const rows = [];
    for (const [id, ours] of conflict.ours) {
      const server = conflict.serverObjects.get(id);
      for (const [key, value] of Object.entries(ours ?? {})) {
        rows.push(el("tr", { dataset: { object: id, key } },
          el("td", { class: "mono" }, `${id}.${key}`),
          el("td", { class: "mono mine" }, shortValue(value, 60, `${id}.${key}.mine`)),
          el("td", { class: "mono theirs" }, server ? shortValue(server.values[key] ?? null, 60, `${id}.${key}.theirs`) : "deleted")));
      }
    }
    this.say(`Conflict: changed on the server since you edited (${readable(conflict.error)}).`, "error");
    this.conflict.replaceChildren(
      el("table", { class: "grid" },
        el("thead", {}, el("tr", {}, el("th", {}, "value"), el("th", {}, "yours"), el("th", {}, "server's"))),
        el("tbody", {}, rows)),
      el("div", { class: "inline" },
        el("button", { type: "button", class: "keep-mine", onclick: () => this.save() }, "Keep mine"),
        el("button", {
          type: "button", class: "secondary take-theirs",
          onclick: () => {
            this.context.rollback();
            this.conflict.hidden = true;
            this.say("The server's values are kept.", "ok");
          },
        }, "Take theirs")));
    this.conflict.hidden = false;
    this.update();
    this.conflict.hidden = false;
  }
}
