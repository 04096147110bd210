import { describe, expect, test } from "vitest";
import { chunk } from "./chunk.js";

describe("chunk", () => {
  test("keeps the last, shorter chunk", () => {
    expect(chunk([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
  });

  test("an even split", () => {
    expect(chunk(["a", "b", "c", "d"], 2)).toEqual([["a", "b"], ["c", "d"]]);
  });

  test("fewer items than the size", () => {
    expect(chunk([1, 2], 5)).toEqual([[1, 2]]);
  });

  test("a size below 1 throws", () => {
    expect(() => chunk([1], 0)).toThrow(RangeError);
  });
});
