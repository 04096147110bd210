// "hello big world" -> "Hello Big World"
function titleCase(text) {
  const words = text.trim().split(/\s+/);
  return words.map((word) => word[0].toUpperCase() + word.slice(1).toLowerCase()).join(" ");
}

module.exports = { titleCase };
