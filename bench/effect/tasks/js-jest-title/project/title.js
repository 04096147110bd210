// "hello big world" -> "Hello Big World"
function titleCase(text) {
  const words = text.trim().split(/\s+/);
  return words
    .map((word, i) => (i === 0 ? word[0].toUpperCase() + word.slice(1).toLowerCase() : word.toLowerCase()))
    .join(" ");
}

module.exports = { titleCase };
