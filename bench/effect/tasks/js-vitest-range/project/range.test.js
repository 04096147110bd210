import { describe, expect, test } from "vitest";
import { range } from "./range.js";

describe("range", () => {
  test("counts up by one", () => {
    expect(range(0, 4)).toEqual([0, 1, 2, 3]);
  });

  test("takes a step", () => {
    expect(range(0, 10, 3)).toEqual([0, 3, 6, 9]);
  });

  test("counts down", () => {
    expect(range(5, 0, -2)).toEqual([5, 3, 1]);
  });

  test("a zero step throws", () => {
    expect(() => range(0, 3, 0)).toThrow(RangeError);
  });
});
