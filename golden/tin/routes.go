package tin

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Virtual channels (Aquila §3.2): 32 VCs, 10 traffic classes with 3 routing
// VCs each, and 2 escape VCs for failure avoidance.
const (
	VCs            = 32
	TrafficClasses = 10
	RoutingVCs     = 3
	EscapeVCs      = VCs - TrafficClasses*RoutingVCs
)

// Candidate tables of the adaptive modes (Aquila §3.2): two minimal routes
// drawn at random from eight supplied by the routing table, and three
// non-minimal routes from 24 candidates.
const (
	MinimalTable     = 8
	MinimalSample    = 2
	NonMinimalTable  = 24
	NonMinimalSample = 3
)

// Mode is one of the four principal routing modes (Aquila §3.2).
type Mode int

// The routing modes.
const (
	FullyAdaptive        Mode = iota // minimal and non-minimal candidates, weighed by queue depth
	MinimalAdaptive                  // minimal candidates only, weighed by queue depth
	Deterministic                    // one route of all candidates, chosen by a hash of the addresses
	MinimalDeterministic             // one minimal route, chosen by a hash of the addresses
)

// Modes lists the routing modes in the paper's order.
var Modes = []Mode{FullyAdaptive, MinimalAdaptive, Deterministic, MinimalDeterministic}

var modeNames = [...]string{"fully-adaptive", "minimal-adaptive", "deterministic", "minimal-deterministic"}

// String returns the mode's parameter spelling ("fully-adaptive").
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return "mode(" + strconv.Itoa(int(m)) + ")"
	}
	return modeNames[m]
}

// Minimal reports whether the mode uses minimal routes only.
func (m Mode) Minimal() bool { return m == MinimalAdaptive || m == MinimalDeterministic }

// Hashed reports whether the mode picks one route per source and
// destination address by hash.
func (m Mode) Hashed() bool { return m == Deterministic || m == MinimalDeterministic }

// ParseMode reads a mode name as String writes it.
func ParseMode(s string) (Mode, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for i, n := range modeNames {
		if t == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("tin: routing mode %q: want one of %s", s, strings.Join(modeNames[:], ", "))
}

// LinkKind tells local (intra-pod, copper) from global (inter-pod, optical)
// links (Aquila §3.2).
type LinkKind uint8

// The link kinds.
const (
	Local LinkKind = iota
	Global
)

func (k LinkKind) String() string {
	if k == Global {
		return "global"
	}
	return "local"
}

// Hop is one link of a path: the TiN it reaches, the kind of link and the VC
// the cell travels on over it.
type Hop struct {
	To   Node
	Kind LinkKind
	VC   int
}

// Path is the route of a cell from its source TiN to its destination TiN.
type Path struct {
	From Node
	Hops []Hop
}

// String renders the path in the text form of the package documentation:
// "p0t1->p0t0[vc0]->p1t0[vc0]->p1t2[vc1]".
func (p Path) String() string {
	var b strings.Builder
	b.WriteString(p.From.String())
	for _, h := range p.Hops {
		b.WriteString("->")
		b.WriteString(h.To.String())
		b.WriteString("[vc")
		b.WriteString(strconv.Itoa(h.VC))
		b.WriteByte(']')
	}
	return b.String()
}

// To returns the TiN the path ends at.
func (p Path) To() Node {
	if len(p.Hops) == 0 {
		return p.From
	}
	return p.Hops[len(p.Hops)-1].To
}

// Count returns the number of local and global hops.
func (p Path) Count() (local, global int) {
	for _, h := range p.Hops {
		if h.Kind == Global {
			global++
		} else {
			local++
		}
	}
	return local, global
}

// Equal reports whether two paths have the same hops and VCs.
func (p Path) Equal(q Path) bool {
	if p.From != q.From || len(p.Hops) != len(q.Hops) {
		return false
	}
	for i := range p.Hops {
		if p.Hops[i] != q.Hops[i] {
			return false
		}
	}
	return true
}

// MaxPathHops bounds a parsed path: a fault-free route has at most five hops
// (local, global, local, global, local), and a trace of a misbehaving
// design is still a path to judge, so the parser allows more but not
// without limit.
const MaxPathHops = 64

// ParsePath reads the text form String writes. A hop between TiNs of one
// pod is local, between pods global. Whether the path is a route of some
// Clique is for RouteSet.Contains to say.
func ParsePath(s string) (Path, error) {
	parts := strings.Split(strings.TrimSpace(s), "->")
	if len(parts)-1 > MaxPathHops {
		return Path{}, fmt.Errorf("tin: path %q has %d hops, more than %d", clip(s), len(parts)-1, MaxPathHops)
	}
	from, err := ParseNode(parts[0])
	if err != nil {
		return Path{}, fmt.Errorf("tin: path %q, first TiN: %w", clip(s), err)
	}
	p := Path{From: from}
	prev := from
	for i, f := range parts[1:] {
		f = strings.TrimSpace(f)
		open := strings.IndexByte(f, '[')
		if open < 0 || !strings.HasSuffix(f, "]") {
			return Path{}, fmt.Errorf("tin: path %q, hop %d %q: want p<pod>t<tin>[vc<n>]", clip(s), i+1, f)
		}
		n, err := ParseNode(f[:open])
		if err != nil {
			return Path{}, fmt.Errorf("tin: path %q, hop %d: %w", clip(s), i+1, err)
		}
		vcs := strings.TrimPrefix(strings.ToLower(f[open+1:len(f)-1]), "vc")
		vc, _, err := number(vcs, "VC", VCs)
		if err != nil || len(vcs) != len(strconv.Itoa(vc)) {
			return Path{}, fmt.Errorf("tin: path %q, hop %d %q: VC must be vc0..vc%d", clip(s), i+1, f, VCs-1)
		}
		if n == prev {
			return Path{}, fmt.Errorf("tin: path %q, hop %d goes from %s to itself", clip(s), i+1, n)
		}
		kind := Local
		if n.Pod != prev.Pod {
			kind = Global
		}
		p.Hops = append(p.Hops, Hop{To: n, Kind: kind, VC: vc})
		prev = n
	}
	return p, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// ParitySign reports whether the intra-pod two-hop route s -> i -> d (TiN
// numbers inside one pod) is allowed by the turn rule.
//
// Aquila §3.2 applies "turn rules similar to the parity-sign approach" of
// García et al. (ICPP 2013, its reference [20]) within a pod, without giving
// them. The model takes that work's restricted local misrouting rule: with
// even(x, y) true when x and y have the same parity,
//
//	i < s and i < d:  allowed when i and s differ in parity
//	i > d:            allowed when i and d share parity
//	s < i < d:        allowed when d and s share parity, or i and s do
//
// Local hops of one VC then never form a cycle in the channel dependency
// graph of a fully connected pod (checked for pods of 2..16 TiNs by the
// tests), and about half of the two-hop detours remain.
func ParitySign(s, i, d int) bool {
	same := func(x, y int) bool { return x%2 == y%2 }
	ok := false
	if s > i {
		ok = !same(i, s)
	}
	if i > d {
		ok = same(i, d)
	}
	if s < i && i < d {
		ok = same(d, s) || same(i, s)
	}
	return ok
}

// RouteSet is every path a routing mode may give a cell from Src to Dst.
type RouteSet struct {
	Src, Dst Addr
	Mode     Mode
	Class    int
	// Minimal and NonMinimal are the candidate routes, sorted by text. A
	// minimal mode leaves NonMinimal empty.
	Minimal, NonMinimal []Path
	// Hashed: the mode picks one route per (Src, Dst) by hash, so every cell
	// of the pair takes the same path (§3.2, "used for cell types requiring
	// ordering").
	Hashed bool
	// The adaptive modes draw MinimalSampled of (up to MinimalTable)
	// minimal and NonMinimalSampled of (up to NonMinimalTable) non-minimal
	// candidates per decision; zero for the hashed modes.
	MinimalSampled, NonMinimalSampled int
}

// All returns the minimal then the non-minimal routes.
func (r RouteSet) All() []Path {
	out := make([]Path, 0, len(r.Minimal)+len(r.NonMinimal))
	return append(append(out, r.Minimal...), r.NonMinimal...)
}

// Contains reports whether p is one of the set's routes, VCs included.
func (r RouteSet) Contains(p Path) bool {
	for _, set := range [][]Path{r.Minimal, r.NonMinimal} {
		i := sort.Search(len(set), func(i int) bool { return set[i].String() >= p.String() })
		if i < len(set) && set[i].Equal(p) {
			return true
		}
	}
	return false
}

// PathInSet parses an observed path (the text form, as a runner stitches it
// from traced cells) and reports whether it lies in the route set.
func PathInSet(observed string, set RouteSet) (bool, error) {
	p, err := ParsePath(observed)
	if err != nil {
		return false, err
	}
	return set.Contains(p), nil
}

// Routes returns the routes mode may give cells of traffic class class from
// src to dst. Minimal routes cross one global link directly between the two
// pods, with at most one local hop before and one after it; within a pod the
// minimal route is the direct local link. Non-minimal routes detour through
// an intermediate TiN of the pod (allowed by ParitySign) for intra-pod
// traffic, and through an intermediate pod (local, global, local, global,
// local at most) for inter-pod traffic (Valiant routing in a Dragonfly, §3.2
// and Kim et al., its reference [30]).
//
// VCs: a hop travels on routing VC class·3 + g, where g is the number of
// global links the cell has already crossed. So the VC goes up by one when a
// cell turns from a global link to a local one, as §3.2 says, and the worst
// fault-free route, the non-minimal route through an intermediate pod, uses
// the three VCs §3.2 counts. The model also steps the VC when a global link
// follows a global link directly (the TiN a cell reaches in the intermediate
// pod may own the onward link itself): without it the global links of three
// pods could close a cycle on one VC (see the package documentation).
func (c *Clique) Routes(src, dst Addr, mode Mode, class int) (RouteSet, error) {
	if !c.Contains(src.Node()) || !c.Contains(dst.Node()) {
		return RouteSet{}, fmt.Errorf("tin: route %s -> %s: an address is outside the %s Clique", src, dst, c.Param())
	}
	if mode < FullyAdaptive || mode > MinimalDeterministic {
		return RouteSet{}, fmt.Errorf("tin: routing mode %d is not one of the four of Aquila §3.2", int(mode))
	}
	if class < 0 || class >= TrafficClasses {
		return RouteSet{}, fmt.Errorf("tin: traffic class %d: want 0..%d (Aquila §3.2: 10 classes)", class, TrafficClasses-1)
	}
	rs := RouteSet{Src: src, Dst: dst, Mode: mode, Class: class, Hashed: mode.Hashed()}
	if !rs.Hashed {
		rs.MinimalSampled = MinimalSample
		if !mode.Minimal() {
			rs.NonMinimalSampled = NonMinimalSample
		}
	}
	rs.Minimal = c.minimal(src.Node(), dst.Node(), class)
	if !mode.Minimal() {
		rs.NonMinimal = c.nonMinimal(src.Node(), dst.Node(), class)
	}
	return rs, nil
}

// builder accumulates a path hop by hop with the VC rule of Routes.
type builder struct {
	p     Path
	level int // routing VC of the next hop, within the class
	class int
	// literal applies §3.2's sentence word for word (step the VC only on a
	// global-to-local turn); the tests use it to show why the model does not.
	literal bool
}

func (b *builder) to(n Node) {
	cur := b.p.To()
	if n == cur {
		return
	}
	kind := Local
	if n.Pod != cur.Pod {
		kind = Global
	}
	if len(b.p.Hops) > 0 && b.p.Hops[len(b.p.Hops)-1].Kind == Global && (kind == Local || !b.literal) {
		b.level++
	}
	b.p.Hops = append(b.p.Hops, Hop{To: n, Kind: kind, VC: b.class*RoutingVCs + b.level})
}

func (c *Clique) minimal(s, d Node, class int) []Path {
	return c.minimalRule(s, d, class, false)
}

func (c *Clique) minimalRule(s, d Node, class int, literal bool) []Path {
	if s == d {
		return []Path{{From: s}}
	}
	var out []Path
	if s.Pod == d.Pod {
		b := builder{p: Path{From: s}, class: class, literal: literal}
		b.to(d)
		return []Path{b.p}
	}
	for _, l := range c.between[s.Pod][d.Pod] {
		b := builder{p: Path{From: s}, class: class, literal: literal}
		b.to(l.A)
		b.to(l.B)
		b.to(d)
		out = append(out, b.p)
	}
	return dedupe(out)
}

func (c *Clique) nonMinimal(s, d Node, class int) []Path {
	return c.nonMinimalRule(s, d, class, false)
}

func (c *Clique) nonMinimalRule(s, d Node, class int, literal bool) []Path {
	if s == d {
		return nil
	}
	var out []Path
	if s.Pod == d.Pod {
		for i := 0; i < c.TiNs; i++ {
			if i == s.TiN || i == d.TiN || !ParitySign(s.TiN, i, d.TiN) {
				continue
			}
			b := builder{p: Path{From: s}, class: class, literal: literal}
			b.to(Node{s.Pod, i})
			b.to(d)
			out = append(out, b.p)
		}
		// Through another pod, leaving on one of s's own global links and
		// coming back on a link that does not land on s (reading A25).
		for mid := 0; mid < c.Pods; mid++ {
			if mid == s.Pod {
				continue
			}
			for _, away := range c.between[s.Pod][mid] {
				if away.A != s {
					continue
				}
				for _, back := range c.between[mid][s.Pod] {
					if back.B == s {
						continue
					}
					b := builder{p: Path{From: s}, class: class, literal: literal}
					b.to(away.B)
					b.to(back.A)
					b.to(back.B)
					b.to(d)
					out = append(out, b.p)
				}
			}
		}
		return dedupe(out)
	}
	for mid := 0; mid < c.Pods; mid++ {
		if mid == s.Pod || mid == d.Pod {
			continue
		}
		for _, in := range c.between[s.Pod][mid] {
			for _, on := range c.between[mid][d.Pod] {
				b := builder{p: Path{From: s}, class: class, literal: literal}
				b.to(in.A)
				b.to(in.B)
				b.to(on.A) // no hop when the arrival TiN owns the onward link
				b.to(on.B)
				b.to(d)
				out = append(out, b.p)
			}
		}
	}
	return dedupe(out)
}

// dedupe sorts paths by text and drops repeats (parallel links between the
// same TiNs give the same path).
func dedupe(ps []Path) []Path {
	sort.Slice(ps, func(i, j int) bool { return ps[i].String() < ps[j].String() })
	out := ps[:0]
	for i, p := range ps {
		if i == 0 || !p.Equal(out[len(out)-1]) {
			out = append(out, p)
		}
	}
	return out
}
