package tin

import (
	"fmt"
	"strconv"
	"strings"
)

// Bounds of a GNet address. Aquila §3.1 gives the address 16 bits and §3.2
// three components (pod id, TiN id, endpoint id) without the split; the model
// takes 6 + 4 + 6 bits, which holds the full Clique (48 pods of 12 TiNs, §2)
// and the 18 intra-chip switch ports of a TiN (§3.1).
const (
	MaxPods      = 64 // pods in a Clique
	MaxTiNs      = 16 // TiNs per pod
	MaxEndpoints = 64 // endpoints per TiN
)

// Node is one TiN chip of a Clique: its pod and its number inside the pod.
type Node struct{ Pod, TiN int }

// String renders the node as in a path: "p0t1".
func (n Node) String() string { return "p" + strconv.Itoa(n.Pod) + "t" + strconv.Itoa(n.TiN) }

// Addr is a GNet address (Aquila §3.2): pod id, TiN id and endpoint id. An
// endpoint is a protocol engine of the TiN (IP, 1RMA, CPU).
type Addr struct{ Pod, TiN, EP int }

// Node returns the TiN the address belongs to.
func (a Addr) Node() Node { return Node{a.Pod, a.TiN} }

// String renders the address: "p0t1e2".
func (a Addr) String() string { return a.Node().String() + "e" + strconv.Itoa(a.EP) }

// ParseNode reads "p<pod>t<tin>" ("p0t1"), case-insensitive, surrounding
// spaces allowed.
func ParseNode(s string) (Node, error) {
	a, hasEP, err := parseAddr(s)
	if err != nil {
		return Node{}, fmt.Errorf("TiN %q: %w (write p<pod>t<tin>, e.g. p0t1)", s, err)
	}
	if hasEP {
		return Node{}, fmt.Errorf("TiN %q: an endpoint is not a TiN (write p<pod>t<tin>, e.g. p0t1)", s)
	}
	return a.Node(), nil
}

// ParseAddr reads "p<pod>t<tin>e<endpoint>" ("p0t1e2"); "p0t1" alone is
// endpoint 0 of that TiN.
func ParseAddr(s string) (Addr, error) {
	a, _, err := parseAddr(s)
	if err != nil {
		return Addr{}, fmt.Errorf("GNet address %q: %w (write p<pod>t<tin>e<endpoint>, e.g. p0t1e0)", s, err)
	}
	return a, nil
}

func parseAddr(s string) (Addr, bool, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	var a Addr
	var err error
	if t, err = expect(t, 'p'); err != nil {
		return a, false, err
	}
	if a.Pod, t, err = number(t, "pod", MaxPods); err != nil {
		return a, false, err
	}
	if t, err = expect(t, 't'); err != nil {
		return a, false, err
	}
	if a.TiN, t, err = number(t, "TiN", MaxTiNs); err != nil {
		return a, false, err
	}
	if t == "" {
		return a, false, nil
	}
	if t, err = expect(t, 'e'); err != nil {
		return a, false, err
	}
	if a.EP, t, err = number(t, "endpoint", MaxEndpoints); err != nil {
		return a, false, err
	}
	if t != "" {
		return a, false, fmt.Errorf("unexpected %q at the end", t)
	}
	return a, true, nil
}

func expect(s string, c byte) (string, error) {
	if s == "" || s[0] != c {
		if s == "" {
			return s, fmt.Errorf("missing %q", string(c))
		}
		return s, fmt.Errorf("want %q, found %q", string(c), s[:1])
	}
	return s[1:], nil
}

// number reads the decimal digits at the start of s (no sign, no leading
// zeros other than "0" itself, so every number has one spelling).
func number(s, what string, limit int) (int, string, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, fmt.Errorf("missing the %s number", what)
	}
	if i > 1 && s[0] == '0' {
		return 0, s, fmt.Errorf("%s number %q has a leading zero", what, s[:i])
	}
	if i > 4 {
		return 0, s, fmt.Errorf("%s number %s is too large (below %d)", what, s[:i], limit)
	}
	n, _ := strconv.Atoi(s[:i])
	if n >= limit {
		return 0, s, fmt.Errorf("%s number %d is too large (below %d)", what, n, limit)
	}
	return n, s[i:], nil
}
