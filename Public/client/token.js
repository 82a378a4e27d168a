// The client's credential (contract 13): a token string, or a function that gives one (or a
// Promise of one). A function's token is held and asked for again only when needed: shortly
// before a JWT's `exp`, after a 401 whose `details.reason` is "expired", or when the app says so.
// No dependency but ./http.js.

import { ObsError } from "./http.js";

/** A JWT is asked for again this long before its `exp`… */
const EARLY_MS = 30000;
/** …or, when it had less than EARLY_MS / (1 - SHORT_SHARE) left when it came, after this share of that. */
const SHORT_SHARE = 0.8;
/** A token with less than this left is not renewed by the timer (the next 401 "expired" does it). */
const TOO_LATE_MS = 1000;

/** The `exp` of a JWT in ms since the epoch, read without verifying (the server verifies); null for anything else. */
export function jwtExpiry(token) {
  const parts = typeof token === "string" ? token.split(".") : [];
  if (parts.length !== 3) return null;
  try {
    const base64 = parts[1].replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(parts[1].length / 4) * 4, "=");
    const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
    const { exp } = JSON.parse(new TextDecoder().decode(bytes));
    return Number.isFinite(exp) ? exp * 1000 : null;
  } catch {
    return null; // not a JWT after all: held until a 401 says it expired
  }
}

/** When a token expiring at `expiry` (ms) is asked for again, in ms from `now`; null: not by a timer. */
export function renewDelay(expiry, now = Date.now()) {
  const left = expiry - now;
  if (!(left > TOO_LATE_MS)) return null;
  return left * (1 - SHORT_SHARE) >= EARLY_MS ? left - EARLY_MS : left * SHORT_SHARE;
}

/**
 * The token an ObsClient sends. A string (or null) is sent as it is; a function is called when no
 * token is held, and its token held until `renew()`, which the client calls after a 401 "expired"
 * and a timer calls before a JWT's `exp`. Calls never overlap: a renewal on its way is shared.
 */
export class TokenSource {
  constructor(option) {
    this.option = option ?? null;
    this.value = undefined; // the function's last token (undefined: not asked yet)
    this.pending = null; // the function's answer on its way
    this.timer = null;
  }

  /** Whether a new token can be asked for (the option is a function). */
  get renewable() { return typeof this.option === "function"; }

  /** The token held now, without asking (null when none). */
  get held() { return this.renewable ? this.value ?? null : this.option; }

  /** The token to send: the held one, or the function's answer when none is held yet. */
  current() {
    if (!this.renewable) return Promise.resolve(this.option);
    if (this.pending) return this.pending;
    return this.value === undefined ? this.renew() : Promise.resolve(this.value);
  }

  /**
   * Asks the function for a token. With `stale` (the token that was refused), a newer one held
   * already is the answer: many requests refused at once ask once.
   */
  renew(stale) {
    if (!this.renewable) return Promise.resolve(this.option);
    if (this.pending) return this.pending;
    if (stale !== undefined && this.value !== undefined && this.value !== stale) return Promise.resolve(this.value);
    const asking = (async () => this.option())().then((value) => {
      this.hold(value ?? null);
      return this.value;
    }, (error) => {
      throw error instanceof ObsError ? error : new ObsError(0, "token", `the token function failed (${error?.message ?? error})`);
    }).finally(() => {
      if (this.pending === asking) this.pending = null;
    });
    this.pending = asking;
    return asking;
  }

  hold(value) {
    this.value = value;
    clearTimeout(this.timer);
    this.timer = null;
    if (this.stopped) return;
    const delay = renewDelay(jwtExpiry(value) ?? NaN);
    if (delay === null) return;
    // Renewed before it expires, so requests and stream resumes never wait for it. A failure keeps the
    // old token: it works until its exp, and a 401 "expired" then asks again.
    this.timer = setTimeout(() => this.renew(value).catch(() => {}), delay);
    this.timer.unref?.(); // Node: a held token keeps no process alive
  }

  /** Stops the renewal timer (the token was replaced). */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = null;
  }
}

/** Whether an error is a 401 that a new token can mend (contract 13: the token expired). */
export function expiredError(error) {
  return error?.status === 401 && error.details?.reason === "expired";
}
