package inventory

// Item is a line of the inventory.
type Item struct {
	Name  string
	Count int
}

// Total is the number of pieces of all items together.
func Total(items []Item) int {
	total := 0
	for _, it := range items {
		total += it.Count
	}
	return total
}
