package grades

// Average is the mean of the scores, 0 for none.
func Average(scores []int) float64 {
	if len(scores) == 0 {
		return 0
	}
	sum := 0
	for _, s := range scores {
		sum += s
	}
	return float64(sum / len(scores))
}
