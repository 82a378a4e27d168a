// The form that makes a scoped token (contract 13): name, ttl, client, and a scope builder, one
// row per scope (actions, class, ids glob, owned, names glob). The secret the server answers with
// is shown once, with a copy button, and forgotten by the page when dismissed.

import { readable } from "../api.js";
import { el } from "../frame.js";

export const ACTIONS = ["read", "observe", "write", "create", "delete", "post", "subscribe"];

export class TokenFormView {
  /**
   * @param {HTMLFormElement} form  with `name`, `ttl`, `client`, the list `.scopes`, the button
   *   `.add-scope` and the status `.result`
   * @param {HTMLElement} secret  the panel that shows a new token's secret (`.secret-value`,
   *   `.secret-copy`, `.secret-done`, `.secret-status`)
   */
  constructor(form, secret, api) {
    this.form = form;
    this.secret = secret;
    this.api = api;
    this.list = form.querySelector(".scopes");
    this.status = form.querySelector(".result");
    this.count = 0; // scope rows made so far: each row's labels name it
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.create();
    });
    form.querySelector(".add-scope").addEventListener("click", () => this.addScope().querySelector("input").focus());
    secret.querySelector(".secret-copy").addEventListener("click", () => this.copy());
    secret.querySelector(".secret-done").addEventListener("click", () => this.hideSecret());
    this.addScope({ allow: ["read", "observe"] });
  }

  /** A new scope row; a row with no action checked is left out. */
  addScope({ allow = [] } = {}) {
    const number = ++this.count;
    const boxes = ACTIONS.map((action) => el("label", { class: "check" },
      el("input", { type: "checkbox", name: "allow", value: action, checked: allow.includes(action) }), ` ${action}`));
    const row = el("li", { class: "scope", dataset: { scope: String(number) } },
      el("div", { class: "actions", role: "group", "aria-label": `Actions of scope ${number}` }, boxes),
      el("div", { class: "selectors" },
        el("label", {}, "Class ", el("input", { name: "class", list: "class-names", autocomplete: "off", placeholder: "any" })),
        el("label", {}, "Ids ", el("input", { name: "ids", autocomplete: "off", placeholder: "room1-*" })),
        el("label", { class: "check" }, el("input", { type: "checkbox", name: "owned" }), " owned"),
        el("label", {}, "Names ", el("input", { name: "names", autocomplete: "off", placeholder: "chat.room1.*" })),
        el("button", {
          type: "button", class: "secondary", "aria-label": `Remove scope ${number}`, onclick: () => row.remove(),
        }, "✕")));
    this.list.append(row);
    return row;
  }

  /** The scopes the rows say; the server checks the rest (a selector is needed, globs, …). */
  scopes() {
    const scopes = [];
    for (const row of this.list.children) {
      const allow = [...row.querySelectorAll("input[name=allow]:checked")].map((box) => box.value);
      if (!allow.length) continue;
      const scope = { allow };
      for (const name of ["class", "ids", "names"]) {
        const value = row.querySelector(`[name=${name}]`).value.trim();
        if (value) scope[name] = value;
      }
      if (row.querySelector("[name=owned]").checked) scope.owned = true;
      scopes.push(scope);
    }
    if (!scopes.length) throw new Error("Please give at least one scope with an action.");
    return scopes;
  }

  async create() {
    this.status.className = "result";
    this.status.textContent = "…";
    try {
      const body = { scopes: this.scopes() };
      const { elements } = this.form;
      for (const name of ["name", "client"]) if (elements[name].value.trim()) body[name] = elements[name].value.trim();
      if (elements.ttl.value) body.ttl = Number(elements.ttl.value);
      const token = await this.api.client.tokens.create(body);
      this.status.className = "result ok";
      this.status.textContent = `created ${token.id}${token.expiresAt ? `, expires ${token.expiresAt}` : ""}`;
      this.showSecret(token);
    } catch (error) {
      this.status.className = "result error";
      this.status.textContent = readable(error);
    }
  }

  showSecret(token) {
    this.secret.querySelector(".secret-value").textContent = token.token;
    this.secret.querySelector(".secret-for").textContent = token.name ? `${token.name} (${token.id})` : token.id;
    this.secret.querySelector(".secret-status").textContent = "";
    this.secret.hidden = false;
    this.secret.querySelector(".secret-copy").focus();
  }

  /** The page keeps no copy: once dismissed, the secret is gone (the server keeps only its hash). */
  hideSecret() {
    this.secret.hidden = true;
    this.secret.querySelector(".secret-value").textContent = "";
    this.form.querySelector("button[type=submit]").focus();
  }

  async copy() {
    const value = this.secret.querySelector(".secret-value");
    const status = this.secret.querySelector(".secret-status");
    try {
      await navigator.clipboard.writeText(value.textContent);
      status.textContent = "Copied.";
    } catch {
      // No clipboard (not a secure context, or denied): selected, for the person to copy.
      getSelection().selectAllChildren(value);
      status.textContent = "Selected: copy it with Ctrl+C / ⌘C.";
    }
  }
}
