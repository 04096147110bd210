package grades

import "testing"

func TestAverageHalf(t *testing.T) {
	if got := Average([]int{1, 2}); got != 1.5 {
		t.Errorf("Average([1 2]) = %v, want 1.5", got)
	}
}

func TestAverageEmpty(t *testing.T) {
	if got := Average(nil); got != 0 {
		t.Errorf("Average(nil) = %v, want 0", got)
	}
}

func TestAverageWhole(t *testing.T) {
	if got := Average([]int{2, 4, 6}); got != 4 {
		t.Errorf("Average([2 4 6]) = %v, want 4", got)
	}
}
