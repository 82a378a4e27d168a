// The feed's id filters: an id matches itself only (`emp-1` is not `emp-10`); a trailing `*`
// asks for the ids that start with what comes before it (`emp-1*`).

/** A predicate on ids (null: no id) for the text of a filter field; null when the field is empty. */
export function idMatcher(text) {
  const wanted = text.trim();
  if (!wanted) return null;
  if (wanted.endsWith("*")) {
    const prefix = wanted.slice(0, -1);
    return (id) => id != null && id.startsWith(prefix);
  }
  return (id) => id === wanted;
}
