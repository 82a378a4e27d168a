// Types for /client/presence.js: who is in a room (contract section 14), made by ObsClient.presence().

import type { JSONValue, ObsClient, ObsError, Observer, QueryChange, Revision } from "./obs.js";
import type { QueryMember } from "./query-window.js";

/** One patch of `onRemove`: checked when the observer is made, applied when it is removed. */
export interface OnRemovePatch {
  object: string;
  values: Record<string, JSONValue>;
}

export interface PresenceOptions {
  /** The class of the presence objects (default "Presence"); the app defines it, with `room`, `user` and the keys of `info`. */
  className?: string;
  /** The member's `user` value (default: the client's name). */
  user?: string;
  /** The observer's lease in seconds (default 10): how long after its stream stops the member leaves. */
  lease?: number;
  /** The list's size (default 100); `total` counts every member. */
  limit?: number;
  /** The key paths each member carries (default: "user" and the keys of `info`). */
  select?: string[];
  /** Patches applied when the member leaves, passed to the observer (contract 14). */
  onRemove?: OnRemovePatch[];
  /**
   * false (default): at `pagehide` the observer is kept in sessionStorage, so a reload of the tab goes
   * on with it and never leaves, and a closed tab leaves when the lease runs out. true: `pagehide`
   * sends `navigator.sendBeacon(…/remove?access_token=<observer token>)`: a close leaves at once, a
   * reload is a leave and a join.
   */
  beacon?: boolean;
  /** Resume the observer a reload of this tab left (default true). */
  resume?: boolean;
  /** Join again, with a new observer, when the observer is found gone (its lease ran out while away; default true). */
  rejoin?: boolean;
  /** Where `pagehide`, `navigator` and `sessionStorage` come from (default globalThis; tests pass a fake). */
  window?: EventTarget & { navigator?: { sendBeacon?(url: string, data?: BodyInit): boolean }; sessionStorage?: Storage };
  /** Where the observer is kept for a reload (default: the window's sessionStorage). */
  storage?: Pick<Storage, "getItem" | "setItem" | "removeItem"> | null;
  /** The list changed (the first window included): `members` and `total` are the presence's. */
  onChange?(change: QueryChange & { presence: Presence }): void;
  /** The member cannot stay (its token was refused, or rejoining failed): it is no longer kept current. */
  onError?(error: ObsError): void;
}

/** One member of a room, and the room's members, kept current (contract 14). */
export class Presence {
  constructor(client: ObsClient, room: string, info: Record<string, JSONValue>, options?: PresenceOptions);
  readonly client: ObsClient;
  readonly room: string;
  readonly className: string;
  /** The member's observer (a new one after a rejoin). */
  readonly observer: Observer | null;
  /** This member's presence object: the id it has in `members`. */
  readonly id: string | null;
  /** Its values: `{room, user, ...info}` (`update` merges into them). */
  readonly values: Record<string, JSONValue>;
  /** The members, ordered by user (then id), at most `limit`: `[{id, values}]`. */
  readonly members: QueryMember[];
  /** How many are in the room. */
  readonly total: number;
  readonly state: "joining" | "joined" | "left" | "failed";
  /** PATCHes its own presence object (every member's list shows it). */
  update(info: Record<string, JSONValue>): Promise<Revision>;
  /** Leaves now: `POST /v1/observers/{id}/remove`; the presence object goes with the observer. */
  leave(): Promise<void>;
  /** Stops here (stream, handlers, what a reload would resume) without telling the server: the lease ends it. */
  stop(): boolean;
}

/** Joins `room`: what ObsClient.presence() does. */
export function joinPresence(client: ObsClient, room: string, info?: Record<string, JSONValue>, options?: PresenceOptions): Promise<Presence>;
