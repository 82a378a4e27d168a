// The HTTP API, as the dashboard uses it: the JavaScript client (/client/obs.js) with the
// token kept for this tab, and errors shown as readable messages.

import { EventStream, ObsClient, ObsError, randomID } from "../client/obs.js";

export { ObsError as ApiError };
/** The one path-segment encoder, the client's: ids, names and key paths in URLs (contract 1). */
export { segment } from "../client/wire.js";

const TOKEN_KEY = "obs-server.token";

/** What a person reads for any error: "404 notFound: no object 'x'" for an API error. */
export function readable(error) {
  return error instanceof ObsError ? String(error) : error.message;
}

export class Api {
  constructor(base = "") {
    // Each tab is its own client: its writes say `"by": "dashboard-…"` in records.
    this.client = new ObsClient({ base, name: `dashboard-${randomID(8)}`, token: () => this.token });
  }

  /** The token kept for this tab (sessionStorage), or null. */
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
    this.client.renewToken(); // the client holds what its token function gave: it asks again
  }

  /** One request; resolves to the decoded JSON (null for 204), rejects with ApiError. */
  request(method, path, body) {
    return this.client.request(method, path, body);
  }

  get(path) { return this.request("GET", path); }
  post(path, body) { return this.request("POST", path, body ?? {}); }
  put(path, body) { return this.request("PUT", path, body); }
  patch(path, body) { return this.request("PATCH", path, body); }
  delete(path) { return this.request("DELETE", path); }

  /** An event stream with resume (see EventStream), opened. */
  stream(path, options) {
    return new EventStream(this.client, path, options).open();
  }
}
