// The Objects table's filter: a class, conditions (key path, operator, operand as JSON), a window
// size and the key paths to show as columns; the order comes from the table's headers. Each change
// builds a query definition (contract 12) and hands it to `onApply`, which replaces the live query.

import { el } from "../frame.js";

export const OPERATORS = ["==", "!=", "<", "<=", ">", ">=", "in", "prefix", "exists"];
const DEFAULT_LIMIT = 100;

export class QueryFormView {
  /**
   * @param {HTMLFormElement} form  with the fields `class`, `limit`, `columns`, the list
   *   `.conditions`, the button `.add-condition` and the status `.result`
   * @param {{onApply(definition): void}} handlers
   */
  constructor(form, { onApply }) {
    this.form = form;
    this.list = form.querySelector(".conditions");
    this.status = form.querySelector(".result");
    this.onApply = onApply;
    this.sort = null; // [keyPath, "asc" | "desc"], or null for the id order
    this.count = 0; // conditions made so far: each row's labels name it
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.apply();
    });
    for (const name of ["class", "limit"]) form.elements[name].addEventListener("change", () => this.apply());
    form.querySelector(".add-condition").addEventListener("click", () => this.addCondition().querySelector("input").focus());
  }

  /** A new condition row (empty rows are left out of the query until filled in). */
  addCondition({ keyPath = "", op = "==", operand = "" } = {}) {
    const number = ++this.count;
    const select = el("select", { name: "op" }, OPERATORS.map((name) => el("option", { value: name, selected: name === op }, name)));
    const row = el("li", { class: "condition" },
      el("label", {}, "Key path ", el("input", { name: "keyPath", value: keyPath, autocomplete: "off", placeholder: "total" })),
      el("label", {}, "Operator ", select),
      el("label", {}, "Operand (JSON) ", el("input", { name: "operand", value: operand, autocomplete: "off", placeholder: '"open", 100, ["a", "b"]' })),
      el("button", {
        type: "button", class: "secondary", "aria-label": `Remove condition ${number}`,
        onclick: () => {
          row.remove();
          this.apply();
        },
      }, "✕"));
    this.list.append(row);
    return row;
  }

  /** Orders by `keyPath` (ascending; the other way when it already is), or by id for null. */
  sortBy(keyPath) {
    if (keyPath === null) this.sort = null;
    else if (this.sort?.[0] === keyPath) this.sort = [keyPath, this.sort[1] === "asc" ? "desc" : "asc"];
    else this.sort = [keyPath, "asc"];
    this.apply();
  }

  /** The definition the form says; throws an Error that a person can read for an operand that is not JSON. */
  definition() {
    const where = [];
    [...this.list.children].forEach((row, index) => {
      const keyPath = row.querySelector('[name="keyPath"]').value.trim();
      const op = row.querySelector('[name="op"]').value;
      const text = row.querySelector('[name="operand"]').value.trim();
      if (!keyPath) return;
      where.push([keyPath, op, operandOf(text, op, index + 1)]);
    });
    const columns = this.form.elements.columns.value.split(",").map((keyPath) => keyPath.trim()).filter(Boolean);
    // What the rows are filtered and ordered by is shown too.
    for (const [keyPath] of where) columns.push(keyPath);
    if (this.sort) columns.push(this.sort[0]);
    const definition = { where, limit: Number(this.form.elements.limit.value) || DEFAULT_LIMIT };
    const className = this.form.elements.class.value.trim();
    if (className) definition.class = className;
    if (this.sort) definition.orderBy = [this.sort];
    if (columns.length) definition.select = [...new Set(columns)];
    return definition;
  }

  apply() {
    let definition;
    try {
      definition = this.definition();
    } catch (error) {
      this.showStatus({ state: "error", message: error.message, invalid: true });
      return;
    }
    this.onApply(definition);
  }

  /** What the live query is doing: loading, live (its id), or why it is not. */
  showStatus({ state, message, query }) {
    this.status.classList.toggle("error", state === "error");
    this.status.textContent = state === "live" ? `Live query ${query.id}.`
      : state === "loading" ? "Loading…" : message;
  }
}

/** A condition's operand: JSON, or `true` for an empty `exists`. */
function operandOf(text, op, number) {
  if (op === "exists" && text === "") return true;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`Condition ${number}: the operand must be JSON (such as "open", 100, true or ["a", "b"]).`);
  }
}
