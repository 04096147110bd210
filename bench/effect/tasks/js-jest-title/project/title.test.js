const { titleCase } = require("./title");

test("capitalizes every word", () => {
  expect(titleCase("hello big world")).toBe("Hello Big World");
});

test("lowercases the rest", () => {
  expect(titleCase("hELLO wORLD")).toBe("Hello World");
});

test("one word", () => {
  expect(titleCase("  x ")).toBe("X");
});
