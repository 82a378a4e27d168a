// The dashboard's full picture, fetched over the API: every object (paged), every
// observer, each observer's observations, subscriptions and queries, and the scoped tokens.

import { segment } from "./api.js";

const PAGE = 1000;
const PARALLEL = 6;

export async function fetchSnapshot(api) {
  const [objects, observerList, stats, tokens] = await Promise.all([
    fetchObjects(api), api.get("/v1/observers"), api.get("/v1/stats"), api.client.tokens.list(),
  ]);
  const observers = observerList.observers;
  const details = await mapLimited(observers, PARALLEL, async (observer) => {
    try {
      return await api.get(`/v1/observers/${segment(observer.id)}`);
    } catch (error) {
      if (error.status === 404) return null; // removed meanwhile: the stream says so too
      throw error;
    }
  });
  const observations = [];
  const subscriptions = [];
  const queries = [];
  for (const detail of details) {
    if (!detail) continue;
    for (const observation of detail.observations) observations.push({ ...observation, observer: detail.id });
    for (const subscription of detail.subscriptions) subscriptions.push({ ...subscription, observer: detail.id });
    for (const query of detail.queries ?? []) queries.push({ ...query, observer: detail.id });
  }
  return { objects, observers, observations, subscriptions, queries, tokens, revision: stats.revision };
}

async function fetchObjects(api) {
  const objects = [];
  let after = null;
  do {
    const query = new URLSearchParams({ limit: String(PAGE) });
    if (after) query.set("after", after);
    const page = await api.get(`/v1/objects?${query}`);
    objects.push(...page.objects);
    after = page.next;
  } while (after);
  return objects;
}

/** `Promise.all(items.map(work))` with at most `limit` requests in flight. */
async function mapLimited(items, limit, work) {
  const results = new Array(items.length);
  let next = 0;
  async function worker() {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
