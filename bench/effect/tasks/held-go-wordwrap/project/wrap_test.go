package wrap

import (
	"reflect"
	"testing"
)

func TestWrapExtraSpaces(t *testing.T) {
	got := Wrap("the quick  brown fox", 10)
	if want := []string{"the quick", "brown fox"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Wrap = %q, want %q", got, want)
	}
}

func TestWrapLongWord(t *testing.T) {
	got := Wrap("a extraordinary b", 5)
	if want := []string{"a", "extraordinary", "b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Wrap = %q, want %q", got, want)
	}
}

func TestWrapEmpty(t *testing.T) {
	if got := Wrap("", 5); len(got) != 0 {
		t.Errorf("Wrap(\"\") = %q, want no lines", got)
	}
}
