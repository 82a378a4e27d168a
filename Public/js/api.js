// The HTTP API, as the dashboard uses it: JSON in and out, the token on every request,
// and every error turned into an ApiError with a readable message.

const TOKEN_KEY = "obs-server.token";

/** An answer that was not 2xx, or a request that never got one. */
export class ApiError extends Error {
  constructor(status, code, message, details = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** What a person reads: "404 notFound: no object 'x'". */
  get readable() {
    return this.status ? `${this.status} ${this.code}: ${this.message}` : this.message;
  }
}

export class Api {
  constructor(base = "") {
    this.base = base;
  }

  /** The token kept for this tab (sessionStorage), or null. */
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  }

  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  }

  /** One request; resolves to the decoded JSON (null for 204), rejects with ApiError. */
  async request(method, path, body) {
    const headers = { Accept: "application/json" };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(this.base + path, {
        method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store",
      });
    } catch (error) {
      throw new ApiError(0, "network", `the server cannot be reached (${error.message})`);
    }
    const text = await response.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      if (response.ok) throw new ApiError(response.status, "invalidResponse", "the answer is not JSON");
    }
    if (response.ok) return json;
    const error = json?.error;
    throw new ApiError(
      response.status,
      error?.code ?? "httpError",
      error?.message ?? (text.trim() || response.statusText),
      error?.details ?? {},
    );
  }

  get(path) { return this.request("GET", path); }
  post(path, body) { return this.request("POST", path, body ?? {}); }
  put(path, body) { return this.request("PUT", path, body); }
  patch(path, body) { return this.request("PATCH", path, body); }
  delete(path) { return this.request("DELETE", path); }

  /** The URL of an event stream: EventSource cannot set headers, so the token rides in the query. */
  streamURL(path, lastEventId) {
    const query = new URLSearchParams();
    if (this.token) query.set("access_token", this.token);
    if (lastEventId != null) query.set("lastEventId", String(lastEventId));
    const text = query.toString();
    return this.base + path + (text ? `?${text}` : "");
  }
}

/** `encodeURIComponent` for ids, keeping the dots of key paths readable. */
export function segment(text) {
  return encodeURIComponent(text).replaceAll("%2E", ".");
}
