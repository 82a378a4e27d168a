// The dashboard: asks for a token when the server wants one, opens the admin stream,
// fetches a snapshot, then keeps every view current from the stream. The Objects table is
// a live query of the page's own observer (objects-query.js). Figures the
// stream does not carry (open streams, backlogs, leases) are refreshed from
// /v1/stats and /v1/observers every POLL_MS. Streams are the client's (/client/obs.js):
// they resume with Last-Event-ID by themselves after any disconnect.

import { Api, ApiError, readable, segment } from "./api.js";
import { el, schedule } from "./frame.js";
import { Model } from "./model.js";
import { ObjectsQuery } from "./objects-query.js";
import { fetchSnapshot } from "./snapshot.js";
import { CountersView } from "./views/counters.js";
import { FeedView, describe } from "./views/feed.js";
import { FormsView } from "./views/forms.js";
import { GraphView } from "./views/graph.js";
import { ObjectsView } from "./views/objects.js";
import { ObserversView } from "./views/observers.js";
import { PresenceView } from "./views/presence.js";
import { QueryFormView } from "./views/query-form.js";
import { TokenFormView } from "./views/token-form.js";
import { TokensView } from "./views/tokens.js";

const POLL_MS = 1000;
const WATCH_KEEP = 200;

const $ = (id) => document.getElementById(id);
const api = new Api();
const model = new Model();

const counters = new CountersView($("counters"), model);
const feed = new FeedView({
  list: $("feed"), object: $("feed-object"), observer: $("feed-observer"), kind: $("feed-kind"), pause: $("feed-pause"),
});
const forms = new FormsView(document, api, { onClassesChanged: () => loadClasses() });
new GraphView($("graph"), $("graph-note"), model);
const queryForm = new QueryFormView($("query-form"), { onApply: (definition) => objectsQuery.apply(definition) });
const objects = new ObjectsView(
  { head: $("objects-head"), body: $("objects-body"), total: $("objects-total"), datalist: $("object-ids") },
  model, { onSelect: (id) => forms.select(id), onSort: (keyPath) => queryForm.sortBy(keyPath) });
const objectsQuery = new ObjectsQuery(api, {
  onWindow: (query) => objects.show(query),
  onStatus: (status) => queryForm.showStatus(status),
});
new ObserversView($("observers-body"), model, { onWatch: watch, onDelete: deleteObserver });
const presence = new PresenceView({ form: $("presence-form"), count: $("presence-count"), list: $("presence-members") }, model, api);
new TokenFormView($("token-create-form"), $("token-secret"), api);
new TokensView($("tokens-body"), model, api);

let adminStream = null;
let watched = null; // {id, stream}: the observer whose own stream the page shows
let buffered = null; // admin events that arrive while a snapshot is being fetched
let generation = 0;
let pollTimer = null;
let liveFrom = 0; // the revision when the page started: older events are history, not events/s

// ---- connection state and errors -------------------------------------------------------

function setConnection(state, text) {
  $("connection").dataset.state = state;
  $("connection").textContent = text;
}

function showAlert(message) {
  $("alert").hidden = !message;
  $("alert").textContent = message ?? "";
}

// ---- token ---------------------------------------------------------------------------------

function askForToken(message) {
  stopAll();
  $("dashboard").hidden = true;
  $("token-panel").hidden = false;
  $("token-message").textContent = message;
  $("token-input").focus();
  setConnection("error", "token needed");
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  api.token = $("token-input").value.trim();
  $("token-input").value = "";
  start();
});

$("forget-token").addEventListener("click", () => {
  api.token = null;
  askForToken("The token was forgotten. Enter it again to continue.");
});

/** The message for an answer that says the token is missing or not enough. */
function tokenProblem(error) {
  if (error.status === 401) {
    return api.token
      ? "401 unauthorized: the server did not accept this token. Enter the service token (--token / OBS_TOKEN)."
      : "This server requires a token (401 unauthorized). It is kept for this tab only.";
  }
  if (error.status === 403) {
    return "403 forbidden: this is an observer's or a scoped token. The dashboard needs the service token.";
  }
  return null;
}

// ---- start, snapshot and the admin stream -------------------------------------------------

async function start() {
  showAlert(null);
  setConnection("connecting", "connecting…");
  try {
    const stats = await api.get("/v1/stats");
    liveFrom = stats.revision;
    counters.update(stats);
  } catch (error) {
    const problem = error instanceof ApiError ? tokenProblem(error) : null;
    if (problem) return askForToken(problem);
    showAlert(`The server cannot be reached: ${readable(error)}. Retrying…`);
    setConnection("error", "offline");
    setTimeout(start, 2000);
    return;
  }
  $("token-panel").hidden = true;
  $("dashboard").hidden = false;
  $("forget-token").hidden = !api.token;
  adminStream = api.stream("/v1/events", {
    commits: false, // the admin events are applied one by one
    onEvent: onAdminEvent,
    onReset: () => refetch(),
    onState: showStreamState,
    onError: adminStreamRefused,
  });
  refetch();
  loadClasses();
  objectsQuery.start(queryForm.definition());
  clearInterval(pollTimer);
  pollTimer = setInterval(poll, POLL_MS);
}

function stopAll() {
  adminStream?.close();
  adminStream = null;
  objectsQuery.stop();
  presence.stop();
  stopWatching();
  clearInterval(pollTimer);
}

function onAdminEvent(kind, data, id) {
  feed.add(kind, data, id);
  if (!(data.revision <= liveFrom)) counters.count();
  if (buffered) buffered.push([kind, data]);
  else model.apply(kind, data);
}

/** A fresh snapshot; events that arrive meanwhile are applied over it in order. */
async function refetch() {
  const mine = ++generation;
  buffered = [];
  $("dashboard").setAttribute("aria-busy", "true");
  try {
    const snapshot = await fetchSnapshot(api);
    if (mine !== generation) return;
    model.replace(snapshot);
    const queued = buffered;
    buffered = null;
    for (const [kind, data] of queued) model.apply(kind, data);
    // Not busy once the views have drawn the snapshot: their redraws are already scheduled
    // for the next frame, and this runs after them in that same frame.
    schedule(markLoaded);
  } catch (error) {
    if (mine !== generation) return;
    const problem = error instanceof ApiError ? tokenProblem(error) : null;
    if (problem) return askForToken(problem);
    showAlert(`Loading the state failed: ${readable(error)}. Retrying…`);
    setTimeout(() => mine === generation && refetch(), 2000);
  }
}

function markLoaded() {
  $("dashboard").setAttribute("aria-busy", "false");
}

function showStreamState(state) {
  if (state === "live") {
    objectsQuery.nudge(); // the server is back: the query's stream need not wait out its backoff
    presence.nudge();
  }
  if (state === "live") setConnection("live", "live");
  else if (state === "connecting") setConnection("connecting", "connecting…");
  else if (state === "reconnecting") setConnection("error", "reconnecting…");
}

/** The admin stream was refused (the client retries anything else): a 401/403 asks for the token. */
function adminStreamRefused(error) {
  const problem = tokenProblem(error);
  if (problem) return askForToken(problem);
  setConnection("error", "offline");
  showAlert(`The admin stream was refused: ${readable(error)}. Retrying…`);
  setTimeout(() => adminStream?.open(), 2000);
}

async function poll() {
  try {
    const [stats, list] = await Promise.all([api.get("/v1/stats"), api.get("/v1/observers")]);
    counters.update(stats);
    model.updateObserverFigures(list.observers);
    showAlert(null);
  } catch (error) {
    const problem = error instanceof ApiError ? tokenProblem(error) : null;
    if (problem) askForToken(problem);
    else showAlert(`Refreshing the figures failed: ${readable(error)}`);
  }
}

/** An object whose change could not be applied locally is fetched again. */
model.on("stale", async (id) => {
  try {
    const object = await api.get(`/v1/objects/${segment(id)}`);
    model.apply("objectCreated", { object });
  } catch (error) {
    if (error.status === 404) model.removeObject(id);
  }
});

async function loadClasses() {
  try {
    const answer = await api.get("/v1/classes");
    const names = (answer.classes ?? []).map((c) => (typeof c === "string" ? c : c.name));
    $("class-names").replaceChildren(...names.map((name) => el("option", { value: name })));
  } catch (error) {
    showAlert(`Loading the classes failed: ${readable(error)}`);
  }
}

// ---- one observer's own stream ------------------------------------------------------------

function watch(observerID) {
  stopWatching();
  const list = $("watch-list");
  list.replaceChildren();
  $("watch-panel").hidden = false;
  $("watch-title").textContent = `Stream of ${observerID}`;
  const add = (kind, data, id) => {
    // A transaction's records and notifications say which (contract 15: `tx`).
    list.prepend(el("li", { dataset: data.tx ? { kind, tx: data.tx } : { kind } },
      el("span", { class: "eid" }, id ? `#${id}` : ""), el("span", { class: "kind" }, kind), describe(kind, data),
      data.tx ? el("span", { class: "tx" }, `  tx ${data.tx}`) : ""));
    while (list.childElementCount > WATCH_KEEP) list.lastElementChild.remove();
  };
  const stream = api.stream(`/v1/observers/${segment(observerID)}/events`, {
    onEvent: add,
    onReset: (data) => add("reset", data, null),
    onError: (error) => {
      const reason = model.observers.has(observerID) ? readable(error) : "the observer is gone";
      add("closed", { reason }, null);
    },
  });
  watched = { id: observerID, stream };
  $("watch-close").focus();
}

function stopWatching() {
  watched?.stream.close();
  watched = null;
  $("watch-panel").hidden = true;
}

$("watch-close").addEventListener("click", stopWatching);

async function deleteObserver(id) {
  if (!window.confirm(`Delete observer ${id} and everything it observes and subscribes to?`)) return;
  try {
    await api.delete(`/v1/observers/${segment(id)}`);
    if (watched?.id === id) stopWatching();
  } catch (error) {
    showAlert(`Deleting ${id} failed: ${readable(error)}`);
  }
}

start();
