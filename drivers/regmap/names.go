package regmap

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
)

// ref is a parsed symbolic name: NAME, NAME[i], NAME.FIELD or NAME[i].FIELD.
type ref struct {
	reg   string
	index int // -1 when no index was written
	field string
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// parseRef parses a symbolic register name. It checks the syntax only;
// whether the names exist is the map's business.
func parseRef(s string) (ref, error) {
	r := ref{index: -1}
	in := strings.TrimSpace(s)
	i := 0
	ident := func(what string) (string, error) {
		if i >= len(in) || !isIdentStart(in[i]) {
			return "", fmt.Errorf("%q: expected a %s name at offset %d (names are letters, digits and '_': NAME, NAME[i], NAME.FIELD, NAME[i].FIELD)", s, what, i)
		}
		j := i
		for i < len(in) && isIdent(in[i]) {
			i++
		}
		return in[j:i], nil
	}
	var err error
	if r.reg, err = ident("register"); err != nil {
		return r, err
	}
	if i < len(in) && in[i] == '[' {
		j := i + 1
		k := j
		for k < len(in) && in[k] >= '0' && in[k] <= '9' {
			k++
		}
		if k == j || k >= len(in) || in[k] != ']' {
			return r, fmt.Errorf("%q: an array index is a decimal number in brackets, as in %s[0]", s, r.reg)
		}
		n, err := strconv.Atoi(in[j:k])
		if err != nil || n > 1<<20 {
			return r, fmt.Errorf("%q: array index %s is out of any range", s, in[j:k])
		}
		r.index = n
		i = k + 1
	}
	if i < len(in) && in[i] == '.' {
		i++
		if r.field, err = ident("field"); err != nil {
			return r, err
		}
	}
	if i != len(in) {
		return r, fmt.Errorf("%q: unexpected %q after %q", s, in[i:], in[:i])
	}
	return r, nil
}

// parseBits parses a field's bit range: "hi:lo" or a single bit "n", bits
// 0..31 with hi >= lo.
func parseBits(bits string) (lo, hi uint, err error) {
	num := func(s string) (uint, error) {
		s = strings.TrimSpace(s)
		if s == "" {
			return 0, fmt.Errorf("bits %q: empty bit number", bits)
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return 0, fmt.Errorf("bits %q: %q is not a bit number", bits, s)
			}
		}
		n, err := strconv.ParseUint(s, 10, 8)
		if err != nil || n > 31 {
			return 0, fmt.Errorf("bits %q: bit %s is beyond a 32-bit register", bits, s)
		}
		return uint(n), nil
	}
	h, l, ranged := strings.Cut(bits, ":")
	if hi, err = num(h); err != nil {
		return 0, 0, err
	}
	if !ranged {
		return hi, hi, nil
	}
	if lo, err = num(l); err != nil {
		return 0, 0, err
	}
	if hi < lo {
		return 0, 0, fmt.Errorf("bits %q: write the high bit first (hi:lo)", bits)
	}
	return lo, hi, nil
}

// fieldBits returns a field's range, from Bits when given (the loader may
// not have filled Lo/Hi yet), checked against the register's width.
func fieldBits(reg *bitstreams.Register, f *bitstreams.Field) (lo, hi uint, err error) {
	if f.Bits == "" {
		lo, hi = f.Lo, f.Hi
		if hi < lo || hi > 31 {
			return 0, 0, fmt.Errorf("field %s.%s has no bits", reg.Name, f.Name)
		}
	} else if lo, hi, err = parseBits(f.Bits); err != nil {
		return 0, 0, fmt.Errorf("field %s.%s: %w", reg.Name, f.Name, err)
	}
	if w := regWidth(reg); hi >= uint(w) {
		return 0, 0, fmt.Errorf("field %s.%s: bits %d:%d do not fit the register's %d bits", reg.Name, f.Name, hi, lo, w)
	}
	return lo, hi, nil
}

// regWidth is a register's width in bits; 32 when the manifest leaves it out.
func regWidth(reg *bitstreams.Register) int {
	if reg.Width <= 0 || reg.Width > 32 {
		return 32
	}
	return reg.Width
}

// suggest returns up to three names close to want: the same name in other
// case, names that contain it or that it contains, and names a few edits
// away.
func suggest(want string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	w := strings.ToUpper(want)
	var cs []cand
	for _, n := range names {
		u := strings.ToUpper(n)
		d := editDistance(w, u)
		switch {
		case u == w:
			d = 0
		case len(w) >= 3 && (strings.Contains(u, w) || strings.Contains(w, u)):
			d = min(d, 1)
		}
		if d <= max(2, len(w)/3) {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func didYouMean(want string, names []string) string {
	s := suggest(want, names)
	if len(s) == 0 {
		return ""
	}
	return "did you mean " + strings.Join(s, ", ") + "?"
}

// editDistance is the Levenshtein distance, bounded in cost by the short
// names registers have.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
