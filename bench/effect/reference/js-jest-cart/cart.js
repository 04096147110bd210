const { shipping } = require("./shipping");

function subtotal(items) {
  return items.reduce((sum, item) => sum + item.price * item.qty, 0);
}

function total(items) {
  const sub = subtotal(items);
  return sub + shipping(sub);
}

module.exports = { subtotal, total };
