// Package param reads the values of golden-model parameters (the strings of
// `labrunner golden predict --set` and of a plan's params): one number in a
// range, or a comma-separated list of distinct ones. Every model reads its
// parameters the same way and says the same thing when one is wrong.
package param

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Int reads one whole number in [lo, hi].
func Int(s string, lo, hi int) (int, error) {
	f := strings.TrimSpace(s)
	n, err := strconv.Atoi(f)
	if err != nil {
		return 0, fmt.Errorf("%q is not a whole number", f)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d is outside %d..%d", n, lo, hi)
	}
	return n, nil
}

// Float reads one finite number in [lo, hi].
func Float(s string, lo, hi float64) (float64, error) {
	f := strings.TrimSpace(s)
	v, err := strconv.ParseFloat(f, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a number", f)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%g is outside %g..%g", v, lo, hi)
	}
	return v, nil
}

// Ints reads a comma-separated list of whole numbers in [lo, hi], in the
// order given. An empty string is an empty list; a repeated value is an
// error (it would make two expectations with one key).
func Ints(s string, lo, hi int) ([]int, error) {
	return list(s, func(f string) (int, error) { return Int(f, lo, hi) }, func(n int) string { return strconv.Itoa(n) })
}

// Floats is Ints for finite numbers.
func Floats(s string, lo, hi float64) ([]float64, error) {
	return list(s, func(f string) (float64, error) { return Float(f, lo, hi) }, func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) })
}

func list[T comparable](s string, parse func(string) (T, error), show func(T) string) ([]T, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []T
	seen := map[T]bool{}
	for _, f := range strings.Split(s, ",") {
		v, err := parse(f)
		if err != nil {
			return nil, err
		}
		if seen[v] {
			return nil, fmt.Errorf("%s is listed twice", show(v))
		}
		seen[v] = true
		out = append(out, v)
	}
	return out, nil
}
