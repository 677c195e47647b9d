// Package param reads golden-model parameters (the strings of `labrunner
// golden predict --set` and of a plan's params): which keys a model takes
// (Settings: an unknown key is refused with the closest allowed name), and
// their values — one number in a range, a run length, a seed, a list or a
// set of numbers, a choice among names. It is the one parameter reader of
// every golden model, so that they all say the same thing when a parameter
// is wrong.
package param

import (
	"fmt"
	"math"
	"slices"
	"sort"
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

// List reads a comma-separated list of distinct items, each read by parse
// (which gets the item trimmed), in the order given; an empty string is an
// empty list, an item listed twice an error.
func List[T comparable](s string, parse func(string) (T, error)) ([]T, error) {
	return list(s, func(f string) (T, error) { return parse(strings.TrimSpace(f)) }, func(v T) string { return fmt.Sprintf("%v", v) })
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

// Count reads a whole number in [lo, hi] written plainly or in exponent
// form ("30000", "3e4"): run lengths are easier to read that way.
func Count(s string, lo, hi int) (int, error) {
	f := strings.TrimSpace(s)
	if n, err := strconv.Atoi(f); err == nil {
		if n < lo || n > hi {
			return 0, fmt.Errorf("%d is outside %d..%d", n, lo, hi)
		}
		return n, nil
	}
	v, err := strconv.ParseFloat(f, 64)
	if err != nil || v != math.Trunc(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a whole number (e.g. 100000 or 1e5)", f)
	}
	if v < float64(lo) || v > float64(hi) {
		return 0, fmt.Errorf("%g is outside %d..%d", v, lo, hi)
	}
	return int(v), nil
}

// Uint64 reads an unsigned 64-bit whole number (a seed).
func Uint64(s string) (uint64, error) {
	f := strings.TrimSpace(s)
	v, err := strconv.ParseUint(f, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an unsigned 64-bit whole number", f)
	}
	return v, nil
}

// IntSet reads a comma-separated set of whole numbers in [lo, hi]: sorted,
// a value listed twice counted once. An empty string is an empty set.
func IntSet(s string, lo, hi int) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range splitItems(s) {
		if f == "" {
			return nil, fmt.Errorf("an empty item in %q", s)
		}
		n, err := Int(f, lo, hi)
		if err != nil {
			return nil, err
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

// Names reads a comma-separated choice among known names, returned in the
// order of known whatever the order given, each once; the item all (when
// all is not "") stands for every known name. An unknown name is an error
// listing the known ones, with the closest when it looks like a slip.
func Names(s string, known []string, all string) ([]string, error) {
	chosen := map[string]bool{}
	for _, f := range splitItems(s) {
		switch {
		case f == "":
			return nil, fmt.Errorf("an empty item in %q", s)
		case all != "" && f == all:
			for _, k := range known {
				chosen[k] = true
			}
			continue
		}
		if !slices.Contains(known, f) {
			want := strings.Join(known, ", ")
			if all != "" {
				want += " or " + all
			}
			msg := fmt.Sprintf("%q is not one of %s", f, want)
			if c := Closest(f, known); c != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", c)
			}
			return nil, fmt.Errorf("%s", msg)
		}
		chosen[f] = true
	}
	var out []string
	for _, k := range known {
		if chosen[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// splitItems splits a comma list into trimmed items; a blank string is no
// items.
func splitItems(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
