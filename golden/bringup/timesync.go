package bringup

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// MaxPPM bounds an oscillator error the model accepts (10%): anything
// beyond is a typo, not a crystal.
const MaxPPM = 1e5

// TimeSync figures of Aquila App. B.2.
const (
	// IntervalUS: TimeSync ordered sets go out "at a fixed interval
	// (typically, about 100us)".
	IntervalUS = 100.0
	// WaitNS: "the ordered set can wait up to 128ns to get onto the wire".
	WaitNS = 128.0
	// TxErrNS: the ordered set "indicates the actual time of transmission
	// (+/- 2.5ns)".
	TxErrNS = 2.5
)

// Sync describes a TimeSync deployment (Aquila App. B): the paper's
// figures, and the lab's for what the paper leaves open. Times in ns
// unless the name says µs.
type Sync struct {
	IntervalUS float64 // between TimeSync ordered sets (App. B.2: about 100 µs)
	WaitNS     float64 // longest wait for a gap between cells (App. B.2: 128 ns)
	TxErrNS    float64 // error of the carried transmission time (App. B.2: ±2.5 ns)
	// MeasErrNS is the error of the round-trip link-delay measurement and
	// of the receiver's on-chip delay compensation, per hop. The paper
	// gives none; the model's default takes the carried time's ±2.5 ns.
	MeasErrNS float64
	// AsymMaxNS is the largest asymmetry per link the lab does not
	// declare: the round trip cannot see it, so it costs half of it per hop.
	AsymMaxNS float64
	// DriftPPM bounds every oscillator whose error the lab does not
	// declare (the paper gives none; the default is Ethernet's ±100 ppm).
	DriftPPM float64
	ChipNS   float64 // on-chip flight from the clock to the wire, beyond the wait
	PhyNS    float64 // PHY/PCS latency the latency-measurement mode adds per direction
	// ReadErrNS is the error of the runner's reading of a board's offset
	// from the primary; it widens every offset band.
	ReadErrNS float64
	// InvalidCount is how many invalid (or missing) messages in a row make
	// a client signal failure ("if enough invalid messages are seen").
	InvalidCount int
	// ValidThresholdNS is the "configurable threshold" a message's time may
	// differ from the client's current time and still be valid.
	ValidThresholdNS float64
}

// DefaultSync returns the paper's figures and the model's defaults for the
// rest (see Sync).
func DefaultSync() Sync {
	return Sync{
		IntervalUS: IntervalUS, WaitNS: WaitNS, TxErrNS: TxErrNS,
		MeasErrNS: TxErrNS, DriftPPM: 100, InvalidCount: 3, ValidThresholdNS: 500,
	}
}

func (s Sync) check() error {
	for _, f := range []struct {
		name string
		v    float64
		max  float64
	}{
		{"interval_us", s.IntervalUS, 1e9}, {"wait_ns", s.WaitNS, 1e9}, {"tx_err_ns", s.TxErrNS, 1e9},
		{"meas_err_ns", s.MeasErrNS, 1e9}, {"asym_max_ns", s.AsymMaxNS, 2 * MaxLinkNS}, {"drift_ppm", s.DriftPPM, MaxPPM},
		{"chip_ns", s.ChipNS, 1e9}, {"phy_ns", s.PhyNS, 1e9}, {"read_err_ns", s.ReadErrNS, 1e9},
		{"valid_threshold_ns", s.ValidThresholdNS, 1e12},
	} {
		if !(f.v >= 0 && f.v <= f.max) {
			return fmt.Errorf("%s %v: want 0..%g", f.name, f.v, f.max)
		}
	}
	if s.IntervalUS == 0 {
		return fmt.Errorf("interval_us 0: TimeSync needs a positive interval (App. B.2: about 100 µs)")
	}
	if s.InvalidCount < 1 || s.InvalidCount > 1e6 {
		return fmt.Errorf("invalid_count %d: want 1..1000000", s.InvalidCount)
	}
	return nil
}

// HopNS is the time error one hop of the time-distribution tree adds, with
// rho the relative rate error (a fraction, not ppm) of the two clocks and
// linkNS the hop's one-way delay:
//
//	tx + meas + asym/2 + rho·(wait + chip + link + phy)
//
// The wait for a gap is counted into the carried time (App. B.2), so it
// costs only what the clocks drift apart while it lasts; likewise the
// link delay the receiver adds is counted on its own clock.
func (s Sync) HopNS(rho, linkNS float64) float64 {
	return s.TxErrNS + s.MeasErrNS + s.AsymMaxNS/2 + rho*(s.WaitNS+s.ChipNS+linkNS+s.PhyNS)
}

// gapNS is the longest time between two updates of a client at depth d:
// the interval, stretched by the sender's clock error, plus the jitter of
// up to one wait per hop the update crossed. A client forwards each update
// at once (App. B.2), so the gap does not grow with the interval per hop.
func (s Sync) gapNS(depth int, primaryPPM float64) float64 {
	return s.IntervalUS*1e3*(1+primaryPPM*1e-6) + float64(depth)*s.WaitNS
}

// OffsetBoundNS bounds |offset from the primary| of a client at depth d of
// the tree when every oscillator is within ±DriftPPM (relative rate error
// up to 2·DriftPPM) and no cable is longer than linkNS one way:
//
//	d·HopNS(2·ppm, link) + 2·ppm·gap(d) + read
//
// Errors of the d hops add up (a bound, not a typical figure); the drift
// since the last update is the client's own. Depth 0 is the primary: 0.
func (s Sync) OffsetBoundNS(depth int, linkNS float64) (float64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if depth < 0 || depth > MaxBoards {
		return 0, fmt.Errorf("depth %d: want 0..%d", depth, MaxBoards)
	}
	if depth == 0 {
		return 0, nil
	}
	rho := 2 * s.DriftPPM * 1e-6
	return float64(depth)*s.HopNS(rho, linkNS) + rho*s.gapNS(depth, s.DriftPPM) + s.ReadErrNS, nil
}

// AsymmetryOffsetNS is the offset from its parent a client gets from an
// asymmetric cable the round-trip measurement cannot see: the receiver adds
// half the round trip, so it is off by half the difference of the two
// directions, behind when the parent-to-client direction is the slow one:
// -(down - up)/2.
func AsymmetryOffsetNS(l Link, parent string) float64 {
	return -(l.delay(parent) - l.delay(l.other(parent))) / 2
}

// MeasuredDelayNS is what the latency-measurement mode reports for a cable
// (half its round trip, PHY included): latency + asymmetry/2 + phy.
func (s Sync) MeasuredDelayNS(l Link) float64 {
	return l.LatencyNS + l.AsymmetryNS/2 + s.PhyNS
}

// SyncState is a board's state in the time-distribution tree.
type SyncState string

const (
	Primary SyncState = "primary"
	Synced  SyncState = "synced" // within its offset band
	// Invalid: the board's clock drifts so far in one interval that every
	// message fails the validity threshold; it signals failure after
	// InvalidCount of them and its offset is not bounded.
	Invalid SyncState = "invalid"
	// Unsynced: not in the tree (no live path from the primary), or below
	// an Invalid board (it follows a free-running parent and reports no
	// failure); no bound applies.
	Unsynced SyncState = "unsynced"
	// Down: the board is not up (failed or died in the bootstrap, or failed
	// afterwards).
	Down SyncState = "down"
	// Uncertain: the state depends on which parent the runner chose or
	// lies within the model's error of the validity threshold; no
	// expectation is made.
	Uncertain SyncState = "uncertain"
)

// SyncNode is one board of the tree.
type SyncNode struct {
	Board   string
	State   SyncState
	Depth   int      // -1 outside the tree
	Parents []string // acceptable parents: live neighbours at Depth-1, over a working cable
	// The board's offset from the primary lies in
	// [SysMinNS - BoundNS, SysMaxNS + BoundNS]: SysMin/SysMax are the
	// systematic offsets of the declared cable asymmetries along its
	// possible paths, BoundNS the rest (HopNS per hop, drift, read error).
	BoundNS, SysMinNS, SysMaxNS float64
	Why                         string
}

// Band returns the interval the board's offset from the primary must lie in.
func (n SyncNode) Band() (lo, hi float64) { return n.SysMinNS - n.BoundNS, n.SysMaxNS + n.BoundNS }

// Failure names the boards and cables that fail after the calibration.
type Failure struct {
	Boards []string
	// Links are link names ("a=b" for every cable between a and b,
	// "a:p0=b:p1" for one).
	Links []string
}

func (f Failure) empty() bool { return len(f.Boards) == 0 && len(f.Links) == 0 }

// ParseFailure reads a comma-separated list of boards and cables:
// "p0t0,p0t1=p0t2".
func ParseFailure(s string) (Failure, error) {
	var f Failure
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	seen := map[string]bool{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if seen[e] {
			return Failure{}, fmt.Errorf("%q is listed twice", e)
		}
		seen[e] = true
		if strings.Contains(e, "=") {
			l, err := parseLink(e)
			if err != nil {
				return Failure{}, fmt.Errorf("cable %q: %w", e, err)
			}
			if l.LatencyNS != 0 || l.AsymmetryNS != 0 || strings.Contains(e, "/") {
				return Failure{}, fmt.Errorf("cable %q: name the cable only (a=b or a:p0=b:p1), without figures", e)
			}
			f.Links = append(f.Links, l.Name())
			continue
		}
		if !validName(e) {
			return Failure{}, fmt.Errorf("board name %q is not usable (%s)", e, nameHelp)
		}
		f.Boards = append(f.Boards, e)
	}
	return f, nil
}

// resolve maps the failure onto the topology: failed boards and failed
// cables by index.
func (f Failure) resolve(g *graph) (boards, links []bool, err error) {
	boards = make([]bool, len(g.Boards))
	links = make([]bool, len(g.Links))
	for _, b := range f.Boards {
		i, ok := g.index[b]
		if !ok {
			return nil, nil, fmt.Errorf("failed board: %s", g.unknown(b))
		}
		boards[i] = true
	}
	for _, name := range f.Links {
		ref, err := parseLink(name)
		if err != nil {
			return nil, nil, fmt.Errorf("failed cable %q: %w", name, err)
		}
		hit := false
		for k, l := range g.Links {
			same := l.A == ref.A && l.B == ref.B && portMatch(l.PortA, ref.PortA) && portMatch(l.PortB, ref.PortB)
			swapped := l.A == ref.B && l.B == ref.A && portMatch(l.PortA, ref.PortB) && portMatch(l.PortB, ref.PortA)
			if same || swapped {
				links[k] = true
				hit = true
			}
		}
		if !hit {
			return nil, nil, fmt.Errorf("failed cable %s: no such cable in the topology", name)
		}
	}
	return boards, links, nil
}

func portMatch(have, want string) bool { return want == "" || have == want }

// Tree is the golden time-distribution tree of a rack and the offset band
// of each board (Aquila App. B).
type Tree struct {
	Primary string // "" when no candidate is up
	Nodes   []SyncNode
	Depth   int // the deepest board in the tree
	Sync    Sync
	g       *graph
	node    []SyncNode
	depth   []int
	// parentLinks[i] lists, per acceptable parent, the working cables.
	parentLinks [][]int
	failedLink  []bool
}

// TimeTree builds the time-distribution tree software sets up (App. B.2:
// "The protocol relies on software to set up this time distribution
// tree"): rooted at the first of primaries that is up, spanning the live
// boards breadth-first (shortest hop count, so that the deepest board is
// as shallow as it can be), each client receiving on one port from a
// neighbour one level up. exclude removes boards and cables that failed
// (re-rooting); ppm gives the oscillator errors the lab declares (others
// are within ±s.DriftPPM).
//
// Each client's offset band comes from its possible paths (any acceptable
// parent at each level): HopNS per hop, the drift since its last update,
// the read error, and the systematic offset of the declared cable
// asymmetries (AsymmetryOffsetNS). A client whose clock provably drifts
// past s.ValidThresholdNS in one interval is Invalid, and its subtree
// Unsynced.
func TimeTree(t Topology, live, primaries []string, s Sync, ppm map[string]float64, exclude Failure) (*Tree, error) {
	g, err := build(t)
	if err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	n := len(g.Boards)
	up := make([]bool, n)
	for _, b := range live {
		i, ok := g.index[b]
		if !ok {
			return nil, fmt.Errorf("live board: %s", g.unknown(b))
		}
		up[i] = true
	}
	failedB, failedL, err := exclude.resolve(g)
	if err != nil {
		return nil, err
	}
	for i := range up {
		up[i] = up[i] && !failedB[i]
	}
	known := make([]bool, n)
	rate := make([]float64, n)
	for b, v := range ppm {
		i, ok := g.index[b]
		if !ok {
			return nil, fmt.Errorf("clock_ppm: %s", g.unknown(b))
		}
		if !(math.Abs(v) <= MaxPPM) {
			return nil, fmt.Errorf("clock_ppm of %s: %v ppm is outside ±%g", b, v, float64(MaxPPM))
		}
		known[i], rate[i] = true, v
	}
	tr := &Tree{Sync: s, g: g, failedLink: failedL}
	root := -1
	for _, b := range primaries {
		i, ok := g.index[b]
		if !ok {
			return nil, fmt.Errorf("primary candidate: %s", g.unknown(b))
		}
		if up[i] {
			root = i
			break
		}
	}
	tr.depth = make([]int, n)
	tr.parentLinks = make([][]int, n)
	tr.node = make([]SyncNode, n)
	for i := range tr.depth {
		tr.depth[i] = -1
	}
	if root >= 0 {
		tr.Primary = g.Boards[root]
		tr.bfs(root, up)
	}
	// Relative rate error of each board to the primary, as a fraction.
	primPPM := s.DriftPPM
	rel := func(i int) float64 {
		switch {
		case root >= 0 && known[i] && known[root]:
			return math.Abs(rate[i]-rate[root]) * 1e-6
		case known[i]:
			return (math.Abs(rate[i]) + s.DriftPPM) * 1e-6
		case root >= 0 && known[root]:
			return (math.Abs(rate[root]) + s.DriftPPM) * 1e-6
		}
		return 2 * s.DriftPPM * 1e-6
	}
	if root >= 0 && known[root] {
		primPPM = math.Max(primPPM, math.Abs(rate[root]))
	}
	order := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if tr.depth[i] >= 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return tr.depth[order[a]] < tr.depth[order[b]] })
	static := make([]float64, n)
	for _, i := range order {
		nd := SyncNode{Board: g.Boards[i], Depth: tr.depth[i]}
		if i == root {
			nd.State = Primary
			tr.node[i] = nd
			continue
		}
		first := true
		parentStates := map[SyncState]bool{}
		for _, pk := range tr.parentLinks[i] {
			p := g.index[g.Links[pk].other(g.Boards[i])]
			l := g.Links[pk]
			hop := s.HopNS(math.Max(rel(p), rel(i)), l.delay(g.Boards[p]))
			sys := AsymmetryOffsetNS(l, g.Boards[p])
			st, lo, hi := static[p]+hop, tr.node[p].SysMinNS+sys, tr.node[p].SysMaxNS+sys
			if first {
				static[i], nd.SysMinNS, nd.SysMaxNS = st, lo, hi
				first = false
			} else {
				static[i] = math.Max(static[i], st)
				nd.SysMinNS = math.Min(nd.SysMinNS, lo)
				nd.SysMaxNS = math.Max(nd.SysMaxNS, hi)
			}
			parentStates[tr.node[p].State] = true
			if !contains(nd.Parents, g.Boards[p]) {
				nd.Parents = append(nd.Parents, g.Boards[p])
			}
		}
		d := tr.depth[i]
		drift := rel(i) * s.gapNS(d, primPPM)
		nd.BoundNS = static[i] + drift + s.ReadErrNS
		nd.State = Synced
		switch {
		case len(parentStates) == 1 && (parentStates[Invalid] || parentStates[Unsynced]):
			nd.State = Unsynced
			nd.Why = "its parent's clock is not synchronised to the primary; it follows it without signalling a failure"
		case parentStates[Uncertain] || parentStates[Invalid] || parentStates[Unsynced]:
			nd.State = Uncertain
			nd.Why = "depends on which parent receives for it: " + strings.Join(nd.Parents, ", ")
		default:
			// Validity: the message's time and the client's differ by the
			// drift since the last update plus the error of the two
			// updates (systematic offsets cancel).
			hiDiff := drift + 2*static[i]
			if known[i] && root >= 0 && known[root] {
				minGap := s.IntervalUS*1e3*(1-primPPM*1e-6) - float64(d)*s.WaitNS
				loDiff := math.Abs(rate[i]-rate[root])*1e-6*minGap - 2*static[i]
				if loDiff > s.ValidThresholdNS {
					nd.State = Invalid
					nd.Why = fmt.Sprintf("drifts %.4g ns from the primary per interval (%.4g ppm against %.4g ppm), past the validity threshold of %g ns",
						math.Abs(rate[i]-rate[root])*1e-6*s.IntervalUS*1e3, rate[i], rate[root], s.ValidThresholdNS)
					break
				}
			}
			if hiDiff > s.ValidThresholdNS {
				nd.State = Uncertain
				nd.Why = fmt.Sprintf("its clock may drift up to %.4g ns per interval, against the validity threshold of %g ns", hiDiff, s.ValidThresholdNS)
			}
		}
		tr.node[i] = nd
		if d > tr.Depth {
			tr.Depth = d
		}
	}
	for i := 0; i < n; i++ {
		switch {
		case tr.depth[i] >= 0:
		case !up[i]:
			tr.node[i] = SyncNode{Board: g.Boards[i], State: Down, Depth: -1, Why: "the board is not up"}
		case root < 0:
			tr.node[i] = SyncNode{Board: g.Boards[i], State: Unsynced, Depth: -1, Why: "no primary candidate is up"}
		default:
			tr.node[i] = SyncNode{Board: g.Boards[i], State: Unsynced, Depth: -1, Why: "no working cable path from the primary " + tr.Primary}
		}
	}
	tr.Nodes = tr.node
	return tr, nil
}

// bfs sets depths and the working cables to each acceptable parent.
func (tr *Tree) bfs(root int, up []bool) {
	g := tr.g
	tr.depth[root] = 0
	frontier := []int{root}
	for d := 1; len(frontier) > 0; d++ {
		var next []int
		for _, i := range frontier {
			for _, k := range g.adj[i] {
				if tr.failedLink[k] {
					continue
				}
				j := g.index[g.Links[k].other(g.Boards[i])]
				if !up[j] {
					continue
				}
				if tr.depth[j] < 0 {
					tr.depth[j] = d
					next = append(next, j)
				}
				if tr.depth[j] == d {
					tr.parentLinks[j] = append(tr.parentLinks[j], k)
				}
			}
		}
		sort.Ints(next)
		frontier = next
	}
	// Parents in topology order.
	for j := range tr.parentLinks {
		pl := tr.parentLinks[j]
		sort.SliceStable(pl, func(a, b int) bool {
			return g.index[g.Links[pl[a]].other(g.Boards[j])] < g.index[g.Links[pl[b]].other(g.Boards[j])]
		})
	}
}

// Node returns the tree's view of one board.
func (tr *Tree) Node(board string) (SyncNode, bool) {
	i, ok := tr.g.index[board]
	if !ok {
		return SyncNode{}, false
	}
	return tr.node[i], true
}

// Detect says whether a board notices a failure.
type Detect int

const (
	DetectNo Detect = iota
	DetectYes
	// DetectMaybe: some of the board's possible paths from the primary
	// cross the failure and some do not; it depends on the parents the
	// runner chose.
	DetectMaybe
)

// Detects returns, per board of the tree that stays up, whether it stops
// receiving valid TimeSync messages when f fails: it does when the failure
// lies on its path from the primary (the failed board is upstream, or
// every cable to the parent it receives from failed). Boards outside the
// tree and failed boards are left out.
func (tr *Tree) Detects(f Failure) (map[string]Detect, error) {
	g := tr.g
	fb, fl, err := f.resolve(g)
	if err != nil {
		return nil, err
	}
	n := len(g.Boards)
	must := make([]bool, n)
	may := make([]bool, n)
	order := make([]int, 0, n)
	for i := 0; i < n; i++ {
		if tr.depth[i] >= 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return tr.depth[order[a]] < tr.depth[order[b]] })
	out := map[string]Detect{}
	for _, i := range order {
		if tr.depth[i] == 0 {
			must[i], may[i] = fb[i], fb[i]
			continue
		}
		// Group the working cables by parent.
		byParent := map[int][]int{}
		var parents []int
		for _, k := range tr.parentLinks[i] {
			p := g.index[g.Links[k].other(g.Boards[i])]
			if _, ok := byParent[p]; !ok {
				parents = append(parents, p)
			}
			byParent[p] = append(byParent[p], k)
		}
		allMust := true
		for _, p := range parents {
			allCut, someCut := true, false
			for _, k := range byParent[p] {
				allCut = allCut && fl[k]
				someCut = someCut || fl[k]
			}
			allMust = allMust && (must[p] || allCut)
			may[i] = may[i] || may[p] || someCut
		}
		must[i] = fb[i] || allMust
		may[i] = may[i] || fb[i]
		if fb[i] {
			continue
		}
		switch {
		case must[i]:
			out[g.Boards[i]] = DetectYes
		case may[i]:
			out[g.Boards[i]] = DetectMaybe
		default:
			out[g.Boards[i]] = DetectNo
		}
	}
	return out, nil
}

// DetectUS bounds the time from a failure to a client at depth d signalling
// it, when every interval without a valid message counts as an invalid one
// (App. B.2: "if enough invalid messages are seen, the client node signals
// that a failure is detected"): the last valid message came at most one
// interval before the failure, so the InvalidCount-th missing one is due
// (N-1)·I to N·I after it, plus the jitter of the path (a wait, the chip
// and the cable per hop). Value is the middle, (N - 1/2)·I.
func (s Sync) DetectUS(depth int, linkNS float64) Estimate {
	N := float64(s.InvalidCount)
	I := s.IntervalUS
	jitter := float64(depth) * (s.WaitNS + s.ChipNS + linkNS + s.PhyNS) / 1e3
	return Estimate{Min: (N - 1) * I, Value: (N - 0.5) * I, Max: N*I*(1+s.DriftPPM*1e-6) + jitter}
}

// DriftDetectUS bounds the time from the first TimeSync update of an
// Invalid client to its failure signal: InvalidCount invalid messages, the
// first at most an interval after the update that set its clock.
func (s Sync) DriftDetectUS(depth int, linkNS float64) Estimate {
	N := float64(s.InvalidCount)
	I := s.IntervalUS
	jitter := float64(depth) * (s.WaitNS + s.ChipNS + linkNS + s.PhyNS) / 1e3
	return Estimate{Min: (N - 1) * I, Value: N * I, Max: (N+1)*I*(1+s.DriftPPM*1e-6) + jitter}
}

// ConvergeUS bounds the time from the primary starting TimeSync to every
// client of a tree of the given depth holding a valid time: the primary's
// first message goes out within an interval, and each client forwards it at
// once (App. B.2), so it crosses the tree within a wait, the chip and the
// cable per hop.
func (s Sync) ConvergeUS(depth int, linkNS float64) Estimate {
	I := s.IntervalUS * (1 + s.DriftPPM*1e-6)
	path := float64(depth) * (s.WaitNS + s.ChipNS + linkNS + s.PhyNS) / 1e3
	return Estimate{Min: 0, Value: I/2 + path, Max: I + path}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
