const { initials } = require("./initials");

test("two names", () => {
  expect(initials("Ada Lovelace")).toBe("AL");
});

test("extra spaces between and around the names", () => {
  expect(initials("  Grace  Brewster Hopper ")).toBe("GBH");
});

test("lowercase names", () => {
  expect(initials("alan turing")).toBe("AT");
});
