// The HTTP side that /client/obs.js and its streams share: the contract's errors as ObsError,
// the decoding of answers, and the backoff between retries. No dependency.

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Exponential backoff from `base` ms, capped, with jitter: never sooner than asked, at most 50% later. */
export const backoff = (base, attempt, cap = 30000) => Math.min(cap, base * 2 ** attempt) * (1 + Math.random() / 2);

/** An answer that was not 2xx (the contract's JSON error), or a request that never got one (status 0). */
export class ObsError extends Error {
  constructor(status, code, message, details = {}) {
    super(message);
    this.name = "ObsError";
    this.status = status;
    this.code = code;
    this.details = details;
  }

  /** What a person reads: "404 notFound: no object 'x'". */
  toString() {
    return this.status ? `${this.status} ${this.code}: ${this.message}` : this.message;
  }
}

/** Milliseconds a 429/503 answer's `Retry-After` (seconds) asks for, or null. */
export function retryAfter(response) {
  const seconds = Number(response.headers.get("Retry-After"));
  return response.headers.has("Retry-After") && Number.isFinite(seconds) ? seconds * 1000 : null;
}

/** The decoded JSON of a 2xx answer (null when empty); an ObsError for any other. */
export async function decode(response) {
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    if (response.ok) throw new ObsError(response.status, "invalidResponse", "the answer is not JSON");
  }
  if (response.ok) return json;
  const error = json?.error;
  const failure = new ObsError(response.status, error?.code ?? "httpError",
    error?.message ?? (text.trim() || response.statusText), error?.details ?? {});
  failure.retryAfter = retryAfter(response);
  throw failure;
}
