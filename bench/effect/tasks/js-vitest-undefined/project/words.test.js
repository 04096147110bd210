import { expect, test } from "vitest";
import { wordCounts } from "./words.js";

test("counts words, ignoring case", () => {
  const counts = wordCounts("The cat and the hat");
  expect(counts.get("the")).toBe(2);
  expect(counts.get("cat")).toBe(1);
});

test("empty text", () => {
  expect(wordCounts("").size).toBe(0);
});
