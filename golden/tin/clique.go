package tin

import (
	"fmt"
	"sort"
	"strings"
)

// Port counts of a TiN (Aquila §3.1, §3.2): a 50-port cell switch with 24
// pod-local and 8 inter-pod GNet ports; the other 18 are intra-chip.
const (
	SwitchPorts       = 50
	LocalPortsPerTiN  = 24
	GlobalPortsPerTiN = 8
)

// GlobalLink is one inter-pod (optical) link between two TiNs of different
// pods. Links are undirected; NewClique and ParseWiring keep A.Pod < B.Pod.
type GlobalLink struct{ A, B Node }

// String renders the link as in the wiring parameter: "p0t0-p1t0".
func (g GlobalLink) String() string { return g.A.String() + "-" + g.B.String() }

// Clique is a configurable Aquila-style Dragonfly (Aquila §2, §3.2): Pods
// pods of TiNs TiNs each; the TiNs of a pod are fully connected by local
// links, and pods are connected to each other by global links.
//
// Local links: the model keeps one logical local link per TiN pair. The full
// Clique has 24 local ports for 11 peers (§3.2), so some pairs have parallel
// links; parallel links do not change a path's text form (TiN hops), which
// is all the route set is about.
type Clique struct {
	Pods, TiNs int
	Globals    []GlobalLink // sorted, each A.Pod < B.Pod
	// between[a][b] lists the global links from pod a to pod b as (TiN in a,
	// TiN in b) pairs, for every ordered pair of different pods.
	between [][][]GlobalLink
}

// NewClique builds a Clique whose global links follow the "consecutive"
// arrangement of Dragonfly literature: global port k of pod a (k = tin·g + j
// for the j-th global port of TiN tin) goes to pod a+1+(k mod (P-1)) (mod P);
// each pod pair gets floor(T·g/(P-1)) links and any remaining ports stay
// unused. For the full Clique (48 pods, 12 TiNs, 8 global ports) that is the
// "two optical GNet global links between any pod pair" of Aquila App. A with
// 2 of 96 ports per pod unused; for the small Clique (2 pods of 4 TiNs, one
// global port each) TiN t of pod 0 is wired to TiN t of pod 1.
func NewClique(pods, tins, globalPerTiN int) (*Clique, error) {
	if err := checkSize(pods, tins); err != nil {
		return nil, err
	}
	if globalPerTiN < 0 || globalPerTiN > GlobalPortsPerTiN {
		return nil, fmt.Errorf("tin: %d global ports per TiN: want 0..%d (Aquila §3.2: 8 global links per TiN)", globalPerTiN, GlobalPortsPerTiN)
	}
	var links []GlobalLink
	if pods > 1 {
		ports := tins * globalPerTiN
		perPair := ports / (pods - 1)
		if perPair == 0 {
			return nil, fmt.Errorf("tin: %d pods of %d TiNs with %d global ports each: %d global ports per pod cannot reach the %d other pods; raise the global ports per TiN",
				pods, tins, globalPerTiN, ports, pods-1)
		}
		for a := 0; a < pods; a++ {
			for k := 0; k < perPair*(pods-1); k++ {
				r, m := k%(pods-1), k/(pods-1)
				b := (a + 1 + r) % pods
				if b < a {
					continue // added from b's side
				}
				kb := m*(pods-1) + (pods - 2 - r)
				links = append(links, GlobalLink{Node{a, k / globalPerTiN}, Node{b, kb / globalPerTiN}})
			}
		}
	}
	return NewCliqueWired(pods, tins, links)
}

// NewCliqueWired builds a Clique with the given global links, for a lab whose
// cabling differs from NewClique's arrangement. Every pair of pods must be
// joined by at least one global link (else no minimal route exists, §3.2).
func NewCliqueWired(pods, tins int, links []GlobalLink) (*Clique, error) {
	if err := checkSize(pods, tins); err != nil {
		return nil, err
	}
	c := &Clique{Pods: pods, TiNs: tins}
	c.between = make([][][]GlobalLink, pods)
	for a := range c.between {
		c.between[a] = make([][]GlobalLink, pods)
	}
	perTiN := map[Node]int{}
	for _, l := range links {
		for _, n := range []Node{l.A, l.B} {
			if n.Pod < 0 || n.Pod >= pods || n.TiN < 0 || n.TiN >= tins {
				return nil, fmt.Errorf("tin: global link %s: TiN %s is outside the %dx%d Clique", l, n, pods, tins)
			}
		}
		if l.A.Pod == l.B.Pod {
			return nil, fmt.Errorf("tin: global link %s joins two TiNs of pod %d; TiNs of a pod are joined by local links (Aquila §3.2)", l, l.A.Pod)
		}
		if l.A.Pod > l.B.Pod {
			l.A, l.B = l.B, l.A
		}
		perTiN[l.A]++
		perTiN[l.B]++
		c.Globals = append(c.Globals, l)
	}
	for n, k := range perTiN {
		if k > GlobalPortsPerTiN {
			return nil, fmt.Errorf("tin: TiN %s has %d global links, more than its %d global ports (Aquila §3.2)", n, k, GlobalPortsPerTiN)
		}
	}
	sort.Slice(c.Globals, func(i, j int) bool { return lessLink(c.Globals[i], c.Globals[j]) })
	for _, l := range c.Globals {
		c.between[l.A.Pod][l.B.Pod] = append(c.between[l.A.Pod][l.B.Pod], l)
		c.between[l.B.Pod][l.A.Pod] = append(c.between[l.B.Pod][l.A.Pod], GlobalLink{l.B, l.A})
	}
	for a := 0; a < pods; a++ {
		for b := 0; b < pods; b++ {
			if a != b && len(c.between[a][b]) == 0 {
				return nil, fmt.Errorf("tin: pods %d and %d have no global link between them; a Dragonfly joins every pod pair (Aquila §2)", a, b)
			}
		}
	}
	return c, nil
}

func checkSize(pods, tins int) error {
	if pods < 1 || pods > MaxPods {
		return fmt.Errorf("tin: %d pods: want 1..%d", pods, MaxPods)
	}
	if tins < 1 || tins > MaxTiNs {
		return fmt.Errorf("tin: %d TiNs per pod: want 1..%d", tins, MaxTiNs)
	}
	if tins-1 > LocalPortsPerTiN {
		return fmt.Errorf("tin: %d TiNs per pod need %d local ports per TiN, more than %d (Aquila §3.2)", tins, tins-1, LocalPortsPerTiN)
	}
	return nil
}

func lessLink(x, y GlobalLink) bool {
	if x.A != y.A {
		return lessNode(x.A, y.A)
	}
	return lessNode(x.B, y.B)
}

func lessNode(x, y Node) bool {
	if x.Pod != y.Pod {
		return x.Pod < y.Pod
	}
	return x.TiN < y.TiN
}

// Nodes lists every TiN, pod by pod.
func (c *Clique) Nodes() []Node {
	out := make([]Node, 0, c.Pods*c.TiNs)
	for p := 0; p < c.Pods; p++ {
		for t := 0; t < c.TiNs; t++ {
			out = append(out, Node{p, t})
		}
	}
	return out
}

// Contains reports whether n is a TiN of the Clique.
func (c *Clique) Contains(n Node) bool {
	return n.Pod >= 0 && n.Pod < c.Pods && n.TiN >= 0 && n.TiN < c.TiNs
}

// Between returns the global links from pod a to pod b, each oriented with
// A in pod a.
func (c *Clique) Between(a, b int) []GlobalLink {
	if a < 0 || b < 0 || a >= c.Pods || b >= c.Pods {
		return nil
	}
	return c.between[a][b]
}

// Param renders the Clique as the model's parameters: "2x4".
func (c *Clique) Param() string { return fmt.Sprintf("%dx%d", c.Pods, c.TiNs) }

// ParseWiring reads an explicit list of global links, comma-separated, each
// "p<pod>t<tin>-p<pod>t<tin>": "p0t0-p1t0,p0t1-p1t1". A link listed twice
// (in either direction) is an error: two cables between the same TiNs would
// be two links, which the model cannot tell apart in a path.
func ParseWiring(s string) ([]GlobalLink, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("tin: empty wiring (list links as p0t0-p1t0,p0t1-p1t1)")
	}
	seen := map[GlobalLink]bool{}
	var out []GlobalLink
	for _, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(f, "-")
		if !ok {
			return nil, fmt.Errorf("tin: wiring entry %q: want p<pod>t<tin>-p<pod>t<tin>", strings.TrimSpace(f))
		}
		na, err := ParseNode(a)
		if err != nil {
			return nil, fmt.Errorf("tin: wiring entry %q: %w", strings.TrimSpace(f), err)
		}
		nb, err := ParseNode(b)
		if err != nil {
			return nil, fmt.Errorf("tin: wiring entry %q: %w", strings.TrimSpace(f), err)
		}
		if na.Pod == nb.Pod {
			return nil, fmt.Errorf("tin: wiring entry %q joins two TiNs of pod %d; a global link joins pods (Aquila §3.2)", strings.TrimSpace(f), na.Pod)
		}
		l := GlobalLink{na, nb}
		if lessNode(nb, na) {
			l = GlobalLink{nb, na}
		}
		if seen[l] {
			return nil, fmt.Errorf("tin: wiring lists link %s twice", l)
		}
		seen[l] = true
		out = append(out, l)
	}
	return out, nil
}
