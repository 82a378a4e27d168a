// A value in a table cell or a list: compact JSON cut at a few dozen characters, so one long
// value (a 900 KB string is valid) never widens the page; a cut value has a button that shows
// it whole in a dialog.

import { brief, el } from "../frame.js";

const PRETTY_UP_TO = 100_000; // characters of compact JSON above which the dialog shows it compact

let dialog = null;

/** `value` as at most `max` characters, with "show all" when it was cut. `what` names it in the dialog. */
export function shortValue(value, max, what) {
  const text = value === undefined ? "" : JSON.stringify(value);
  if (text.length <= max) return el("span", { class: "value" }, text);
  return el("span", { class: "value cut" }, brief(value, max), " ",
    el("button", {
      type: "button", class: "secondary show-all", "aria-label": `Show all of ${what} (${size(text)})`,
      onclick: () => showWhole(what, value, text),
    }, `all ${size(text)}`));
}

/** "912 KB", "1.2 MB", "340 B": the length of the JSON text (UTF-16 units, near enough). */
export function size(text) {
  const n = text.length;
  if (n < 1000) return `${n} B`;
  if (n < 1_000_000) return `${Math.round(n / 1000)} KB`;
  return `${(n / 1_000_000).toFixed(1)} MB`;
}

function showWhole(what, value, compact) {
  dialog ??= makeDialog();
  dialog.querySelector("h2").textContent = what;
  dialog.querySelector("textarea").value = compact.length <= PRETTY_UP_TO ? JSON.stringify(value, null, 2) : compact;
  dialog.showModal();
  dialog.querySelector("textarea").scrollTop = 0;
}

function makeDialog() {
  const made = el("dialog", { class: "value-dialog", "aria-labelledby": "value-dialog-title" },
    el("h2", { id: "value-dialog-title" }),
    el("textarea", { readonly: true, rows: "16", "aria-label": "The whole value (JSON)", spellcheck: "false" }),
    el("form", { method: "dialog" }, el("button", { type: "submit" }, "Close")));
  document.body.append(made);
  return made;
}
