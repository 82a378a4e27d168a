// The scoped tokens table (contract 13): name and id, scopes, expiry (a countdown), how many
// observers it made, and per row a new ttl and Revoke. Kept current by the admin stream's
// tokenCreated, tokenChanged and tokenRevoked; the observers count follows observerCreated/Removed.

import { readable } from "../api.js";
import { el, schedule } from "../frame.js";

export class TokensView {
  constructor(body, model, api) {
    this.body = body;
    this.model = model;
    this.api = api;
    this.entries = new Map(); // token id → {row, cells, token}
    this.render = this.render.bind(this);
    model.on("tokens", () => schedule(this.render));
    model.on("observers", () => schedule(this.render)); // the observers column
    model.on("reset", () => schedule(this.render));
    setInterval(() => this.tick(), 1000);
  }

  render() {
    const tokens = [...this.model.tokens.values()]
      .sort((a, b) => (a.name ?? a.id).localeCompare(b.name ?? b.id) || a.id.localeCompare(b.id));
    const made = new Map();
    for (const observer of this.model.observers.values()) {
      if (observer.tokenId) made.set(observer.tokenId, (made.get(observer.tokenId) ?? 0) + 1);
    }
    const ids = new Set(tokens.map((token) => token.id));
    for (const id of this.entries.keys()) if (!ids.has(id)) this.entries.delete(id);
    // Rows are kept (not rebuilt) so that a ttl being typed in survives the redraws.
    for (const token of tokens) {
      if (!this.entries.has(token.id)) this.entries.set(token.id, this.build(token));
      this.fill(this.entries.get(token.id), token, made.get(token.id) ?? 0);
    }
    const rows = tokens.map((token) => this.entries.get(token.id).row);
    if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: "5", class: "hint" }, "No scoped tokens.")));
    const current = [...this.body.children];
    if (rows.length !== current.length || rows.some((row, index) => row !== current[index])) this.body.replaceChildren(...rows);
  }

  build(token) {
    const label = token.name ?? token.id;
    const ttl = el("input", {
      type: "number", name: "ttl", min: "1", max: "31536000", placeholder: "ttl (s)",
      title: "seconds from now; empty: never expires", "aria-label": `New ttl of ${label} in seconds`,
    });
    const status = el("span", { class: "result", role: "status" });
    const cells = {
      name: el("td", {}),
      scopes: el("td", {}),
      expires: el("td", { class: "mono" }),
      observers: el("td", { class: "mono" }),
    };
    const row = el("tr", { dataset: { token: token.id } },
      cells.name, cells.scopes, cells.expires, cells.observers,
      el("td", { class: "token-actions" },
        el("span", { class: "inline" }, ttl,
          el("button", { type: "button", class: "secondary", "aria-label": `Change the ttl of ${label}`, onclick: () => this.changeTTL(token.id, ttl, status) }, "Set ttl")),
        " ",
        el("button", { type: "button", class: "danger", "aria-label": `Revoke ${label}`, onclick: () => this.revoke(token.id, status) }, "Revoke"),
        status));
    return { row, cells, token: null };
  }

  fill(entry, token, observers) {
    const { cells } = entry;
    setText(cells.observers, String(observers));
    if (entry.token === token) return this.showExpiry(entry); // unchanged: a selection in its cells stays
    entry.token = token;
    const client = token.client ? [el("div", { class: "hint" }, `client ${token.client}`)] : [];
    cells.name.replaceChildren(el("strong", {}, token.name ?? "—"), el("div", { class: "mono hint" }, token.id), ...client);
    cells.scopes.replaceChildren(el("ul", { class: "values" }, token.scopes.map((scope) => el("li", {}, scopeSummary(scope)))));
    this.showExpiry(entry);
  }

  showExpiry({ cells, token }) {
    if (!token.expiresAt) return setText(cells.expires, "never");
    const left = Math.round((Date.parse(token.expiresAt) - Date.now()) / 1000);
    setText(cells.expires, left > 0 ? `in ${duration(left)}` : "expiring…");
    cells.expires.title = token.expiresAt;
  }

  tick() {
    for (const entry of this.entries.values()) this.showExpiry(entry);
  }

  async changeTTL(id, input, status) {
    const ttl = input.value === "" ? null : Number(input.value);
    if (ttl === null && !window.confirm(`Make token ${id} never expire?`)) return;
    try {
      await this.api.client.tokens.change(id, { ttl });
      input.value = "";
      say(status, "ttl changed", true);
    } catch (error) {
      say(status, readable(error), false);
    }
  }

  async revoke(id, status) {
    const label = this.model.tokens.get(id)?.name ?? id;
    if (!window.confirm(`Revoke token ${label}? Its requests then answer 401 and its streams end; its observers stay until their leases end.`)) return;
    try {
      await this.api.client.tokens.revoke(id); // the row goes with the stream's tokenRevoked
    } catch (error) {
      say(status, readable(error), false);
    }
  }
}

/** One line for a scope: "read, observe · class Doc · ids room1-*". */
export function scopeSummary(scope) {
  const parts = [scope.allow.join(", ")];
  if (scope.class) parts.push(`class ${scope.class}`);
  if (scope.ids) parts.push(`ids ${scope.ids}`);
  if (scope.owned) parts.push("owned");
  if (scope.names) parts.push(`names ${scope.names}`);
  return parts.join(" · ");
}

/** "59 s", "12 min", "3 h", "2 d". */
function duration(seconds) {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
}

function say(status, text, ok) {
  status.className = `result ${ok ? "ok" : "error"}`;
  status.textContent = ` ${text}`;
}

function setText(cell, text) {
  if (cell.textContent !== text) cell.textContent = text;
}
