// How often each word occurs, ignoring case.
export function wordCounts(text) {
  const count = new Map();
  for (const word of text.toLowerCase().match(/[a-z']+/g) ?? []) {
    count.set(word, (count.get(word) ?? 0) + 1);
    counts.total = (counts.total ?? 0) + 1;
  }
  return count;
}
