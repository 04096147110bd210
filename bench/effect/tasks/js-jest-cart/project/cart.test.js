const { subtotal, total } = require("./cart");

test("subtotal", () => {
  expect(subtotal([{ price: 5, qty: 2 }, { price: 10, qty: 1 }])).toBe(20);
});

test("shipping under 50", () => {
  expect(total([{ price: 10, qty: 1 }])).toBe(15);
});

test("free shipping from 50", () => {
  expect(total([{ price: 25, qty: 2 }])).toBe(50);
});
