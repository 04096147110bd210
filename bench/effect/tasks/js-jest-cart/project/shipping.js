// Shipping costs 5, and nothing for an order of 50 or more.
function shipping(subtotal) {
  return subtotal > 50 ? 0 : 5;
}

module.exports = { shipping };
