package inventory

import "testing"

func TestTotal(t *testing.T) {
	items := []Item{{"bolt", 3}, {"nut", 4}}
	if got := Total(items); got != 7 {
		t.Errorf("Total = %d, want 7", got)
	}
}

func TestTotalEmpty(t *testing.T) {
	if got := Total(nil); got != 0 {
		t.Errorf("Total(nil) = %d, want 0", got)
	}
}
