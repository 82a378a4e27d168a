// Batches DOM work per animation frame: however many events arrive, each view
// redraws at most once per frame.

const pending = new Set();
let requested = false;

/** Runs `task` in the next animation frame (once, however often it is scheduled). */
export function schedule(task) {
  pending.add(task);
  if (requested) return;
  requested = true;
  requestAnimationFrame(flush);
}

function flush() {
  requested = false;
  const tasks = [...pending];
  pending.clear();
  for (const task of tasks) {
    try {
      task();
    } catch (error) {
      console.error("dashboard view failed", error);
    }
  }
}

/** A tiny element builder: el("td", {class: "x"}, "text", child). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

/** Compact JSON for one line of text, cut at `max` characters. */
export function brief(value, max = 80) {
  const text = value === undefined ? "" : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
