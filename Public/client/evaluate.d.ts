// Types for /client/evaluate.js: section 12's rules, the client's one query evaluator.

import type { JSONValue, QueryDefinition } from "./obs.js";
import type { QueryMember } from "./query-window.js";

/** What a reader does not know. */
export const UNKNOWN: unique symbol;
/** On values: only their own keys are known. */
export const PARTIAL: unique symbol;

export type Lookup = (id: string) => Record<string, JSONValue> | null | typeof UNKNOWN;
export function referencedID(value: JSONValue): string | null;
export function readKeyPath(values: Record<string, JSONValue>, keyPath: string | string[], lookup?: Lookup): JSONValue | typeof UNKNOWN;
export function jsonEqual(a: JSONValue, b: JSONValue): boolean;
export function compareStrings(a: string, b: string): -1 | 0 | 1;
export function holds(condition: [string, string, JSONValue], value: JSONValue): boolean;
export function canonicalText(value: JSONValue): string;
export function compareValues(a: JSONValue | undefined, b: JSONValue | undefined): number;
export function memberOrder(orderBy?: [string, "asc" | "desc"][]): (a: { id: string; key: JSONValue[] }, b: { id: string; key: JSONValue[] }) => number;
export function keyPathsRead(definition: QueryDefinition): string[];
/** `POST /v1/query` over every object: the window and the total. */
export function evaluateQuery(
  definition: QueryDefinition, objects: { id: string; class?: string | null; values: Record<string, JSONValue> }[],
): { objects: QueryMember[]; total: number };
