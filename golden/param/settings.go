package param

import (
	"fmt"
	"sort"
	"strings"
)

// Spec is one parameter a model accepts: its name and its default ("" for
// an optional parameter without one).
type Spec struct{ Name, Default string }

// Settings checks set against a model's parameters and returns the effective
// values: every parameter with a default gets it unless set overrides it;
// optional parameters without a default appear only when set. A key that is
// not a parameter is refused (so that --set payload=64 for payloads is never
// silently ignored), with the closest allowed name when one is close and the
// whole list: "exanet: unknown parameter "payload" (allowed: ..., payloads,
// ...); did you mean "payloads"?". model names the model in the error.
func Settings(model string, specs []Spec, set map[string]string) (map[string]string, error) {
	allowed := make(map[string]bool, len(specs))
	names := make([]string, 0, len(specs))
	out := make(map[string]string, len(specs))
	for _, p := range specs {
		allowed[p.Name] = true
		names = append(names, p.Name)
		if p.Default != "" {
			out[p.Name] = p.Default
		}
	}
	var unknown []string
	for k, v := range set {
		if !allowed[k] {
			unknown = append(unknown, k)
			continue
		}
		out[k] = v
	}
	if len(unknown) == 0 {
		return out, nil
	}
	sort.Strings(unknown)
	sort.Strings(names)
	q := make([]string, len(unknown))
	for i, u := range unknown {
		q[i] = fmt.Sprintf("%q", u)
	}
	msg := fmt.Sprintf("%s: unknown parameter %s (allowed: %s)", model, strings.Join(q, ", "), strings.Join(names, ", "))
	var hints []string
	for _, u := range unknown {
		if c := Closest(u, names); c != "" {
			hints = append(hints, fmt.Sprintf("%q for %q", c, u))
		}
	}
	switch {
	case len(hints) == 1 && len(unknown) == 1:
		msg += fmt.Sprintf("; did you mean %q?", Closest(unknown[0], names))
	case len(hints) > 0:
		msg += "; did you mean " + strings.Join(hints, ", ") + "?"
	}
	return nil, fmt.Errorf("%s", msg)
}

// Closest returns the name of names nearest to s when it is near enough to
// be a slip (an edit distance of at most a third of the longer word, at
// least 1, or one word the other's prefix), else "".
func Closest(s string, names []string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	best, bestD := "", -1
	for _, n := range names {
		ln := strings.ToLower(n)
		d := editDistance(s, ln)
		limit := max(1, max(len(s), len(ln))/3)
		if d > limit && !(len(s) >= 3 && (strings.HasPrefix(ln, s) || strings.HasPrefix(s, ln))) {
			continue
		}
		if bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
