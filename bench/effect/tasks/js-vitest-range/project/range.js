// The numbers from start up to (not including) end.
export function range(start, end, step = 1) {
  const out = [];
  for (let i = start; i < end; i += 1) {
    out.push(i);
  }
  return out;
}
