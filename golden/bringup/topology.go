package bringup

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Limits on a topology, so that a typo (a million boards) is an error and
// not a minute of arithmetic. Aquila's full Clique is 576 TiNs (§4.2).
const (
	MaxBoards = 4096
	MaxLinks  = 65536
	// MaxLinkNS bounds a link's one-way delay and asymmetry: 1 ms is 200 km
	// of fibre, far beyond a rack or a Clique's 100 m (Aquila §3.2).
	MaxLinkNS = 1e6
)

// Link is one cable between two boards. Ports are optional: they only
// tell parallel cables between the same boards apart. LatencyNS and
// AsymmetryNS follow the lab file (labconfig.Link): LatencyNS is the one-way
// propagation A->B, and AsymmetryNS is added to the B->A direction only; 0
// latency means unknown. MOSLoss, when not negative, replaces the model's
// MOS word-loss probability on this cable (a lossy MOS channel).
type Link struct {
	A, B         string
	PortA, PortB string
	LatencyNS    float64
	AsymmetryNS  float64
	MOSLoss      float64
}

// Name renders the link as the {link} parameter of the metrics and as an
// entry of the links parameter without its figures: "a:sfp0=b:sfp1" or
// "a=b".
func (l Link) Name() string {
	return endpoint(l.A, l.PortA) + "=" + endpoint(l.B, l.PortB)
}

func endpoint(board, port string) string {
	if port == "" {
		return board
	}
	return board + ":" + port
}

// Param renders the link as one entry of the links parameter, figures
// included: "a:sfp0=b:sfp1/5/2/0.01".
func (l Link) Param() string {
	s := l.Name()
	loss := l.MOSLoss >= 0
	if l.LatencyNS != 0 || l.AsymmetryNS != 0 || loss {
		s += "/" + fmtFloat(l.LatencyNS)
	}
	if l.AsymmetryNS != 0 || loss {
		s += "/" + fmtFloat(l.AsymmetryNS)
	}
	if loss {
		s += "/" + fmtFloat(l.MOSLoss)
	}
	return s
}

// delay returns the one-way delay from board from to the other end.
func (l Link) delay(from string) float64 {
	if from == l.B {
		return l.LatencyNS + l.AsymmetryNS
	}
	return l.LatencyNS
}

// other returns the end of l that is not board b.
func (l Link) other(b string) string {
	if l.A == b {
		return l.B
	}
	return l.A
}

// Topology is a rack as the bring-up sees it: its boards (in lab order,
// which orders every list the model returns), its cables, and the boards
// the runner reaches directly (Aquila §4.4: "DCN-connected").
type Topology struct {
	Boards []string
	Links  []Link
	DCN    []string
}

// Params renders the topology as the model's boards, links and dcn
// parameters, for a runner that calls Predict with its lab's cabling.
func (t Topology) Params() map[string]string {
	links := make([]string, len(t.Links))
	for i, l := range t.Links {
		links[i] = l.Param()
	}
	return map[string]string{
		"boards": strings.Join(t.Boards, ","),
		"links":  strings.Join(links, ","),
		"dcn":    strings.Join(t.DCN, ","),
	}
}

// graph is a validated topology with its adjacency.
type graph struct {
	Topology
	index map[string]int
	// adj[i] lists, for board i, the indices of its links in Links, in link
	// order; nbr[i] lists its distinct neighbours in board order.
	adj [][]int
	nbr [][]int
	dcn []int
}

// validName reports whether s is usable as a board or port name: the lab
// file's rule (letters, digits, '.', '_', '-', starting with a letter or a
// digit), which keeps ',', '=', ':' and '/' free as separators.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case (r == '.' || r == '_' || r == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

const nameHelp = "board and port names use letters, digits, '.', '_' and '-', starting with a letter or digit"

// build checks t and indexes it: every board named once, every link and DCN
// board on a known board, no cable from a board to itself, no port cabled
// twice, figures in range.
func build(t Topology) (*graph, error) {
	if len(t.Boards) == 0 {
		return nil, fmt.Errorf("topology has no boards")
	}
	if len(t.Boards) > MaxBoards {
		return nil, fmt.Errorf("topology has %d boards, more than %d", len(t.Boards), MaxBoards)
	}
	if len(t.Links) > MaxLinks {
		return nil, fmt.Errorf("topology has %d links, more than %d", len(t.Links), MaxLinks)
	}
	g := &graph{Topology: t, index: make(map[string]int, len(t.Boards))}
	for i, b := range t.Boards {
		if !validName(b) {
			return nil, fmt.Errorf("board name %q is not usable (%s)", b, nameHelp)
		}
		if _, dup := g.index[b]; dup {
			return nil, fmt.Errorf("board %s is listed twice", b)
		}
		g.index[b] = i
	}
	g.adj = make([][]int, len(t.Boards))
	ports := make(map[[2]string]int, 2*len(t.Links))
	for k, l := range t.Links {
		for _, e := range [][2]string{{l.A, l.PortA}, {l.B, l.PortB}} {
			if _, ok := g.index[e[0]]; !ok {
				return nil, fmt.Errorf("link %s: %s", l.Name(), g.unknown(e[0]))
			}
			if e[1] == "" {
				continue
			}
			if !validName(e[1]) {
				return nil, fmt.Errorf("link %s: port name %q is not usable (%s)", l.Name(), e[1], nameHelp)
			}
			if j, dup := ports[e]; dup {
				return nil, fmt.Errorf("link %s: port %s is already cabled by link %s; a port takes one cable", l.Name(), endpoint(e[0], e[1]), t.Links[j].Name())
			}
			ports[e] = k
		}
		if l.A == l.B {
			return nil, fmt.Errorf("link %s joins board %s to itself; bring-up needs cables between boards", l.Name(), l.A)
		}
		switch {
		case !(l.LatencyNS >= 0 && l.LatencyNS <= MaxLinkNS):
			return nil, fmt.Errorf("link %s: latency %v ns is outside 0..%g", l.Name(), l.LatencyNS, MaxLinkNS)
		case !(math.Abs(l.AsymmetryNS) <= MaxLinkNS):
			return nil, fmt.Errorf("link %s: asymmetry %v ns is outside ±%g", l.Name(), l.AsymmetryNS, MaxLinkNS)
		case l.LatencyNS+l.AsymmetryNS < 0:
			return nil, fmt.Errorf("link %s: asymmetry %v ns makes the %s->%s delay negative (latency %v ns)", l.Name(), l.AsymmetryNS, l.B, l.A, l.LatencyNS)
		case !(l.MOSLoss < 1) || math.IsNaN(l.MOSLoss):
			return nil, fmt.Errorf("link %s: MOS loss %v is not below 1 (use a negative value for the model's mos_loss)", l.Name(), l.MOSLoss)
		}
		ia, ib := g.index[l.A], g.index[l.B]
		g.adj[ia] = append(g.adj[ia], k)
		g.adj[ib] = append(g.adj[ib], k)
	}
	g.nbr = make([][]int, len(t.Boards))
	// mark[j] == i+1: j is already a neighbour of i (parallel cables).
	mark := make([]int, len(t.Boards))
	for i := range t.Boards {
		for _, k := range g.adj[i] {
			l := &t.Links[k]
			j := g.index[l.A]
			if j == i {
				j = g.index[l.B]
			}
			if mark[j] != i+1 {
				mark[j] = i + 1
				g.nbr[i] = append(g.nbr[i], j)
			}
		}
		sort.Ints(g.nbr[i])
	}
	seen := map[int]bool{}
	for _, d := range t.DCN {
		i, ok := g.index[d]
		if !ok {
			return nil, fmt.Errorf("DCN board: %s", g.unknown(d))
		}
		if seen[i] {
			return nil, fmt.Errorf("DCN board %s is listed twice", d)
		}
		seen[i] = true
		g.dcn = append(g.dcn, i)
	}
	return g, nil
}

// unknown explains a board name that is not in the topology.
func (g *graph) unknown(b string) string {
	names := g.Boards
	more := ""
	if len(names) > 12 {
		names, more = names[:12], fmt.Sprintf(" and %d more", len(g.Boards)-12)
	}
	return fmt.Sprintf("no board named %q (boards: %s%s)", b, strings.Join(names, ", "), more)
}

// links returns the indices of the links between boards i and j.
func (g *graph) between(i, j int) []int {
	var out []int
	for _, k := range g.adj[i] {
		if g.Links[k].other(g.Boards[i]) == g.Boards[j] {
			out = append(out, k)
		}
	}
	return out
}

// maxLinkNS is the largest one-way delay of any cable, either direction.
func (g *graph) maxLinkNS() float64 {
	m := 0.0
	for _, l := range g.Links {
		m = math.Max(m, math.Max(l.LatencyNS, l.LatencyNS+l.AsymmetryNS))
	}
	return m
}

// ParseBoards reads a comma-separated list of board names (spaces around a
// name are ignored). An empty string is an empty list; a repeated name is
// an error, since every list the model reads is a set.
func ParseBoards(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !validName(f) {
			return nil, fmt.Errorf("board name %q is not usable (%s)", f, nameHelp)
		}
		if seen[f] {
			return nil, fmt.Errorf("board %s is listed twice", f)
		}
		seen[f] = true
		out = append(out, f)
	}
	if len(out) > MaxBoards {
		return nil, fmt.Errorf("%d boards listed, more than %d", len(out), MaxBoards)
	}
	return out, nil
}

// ParseLinks reads a comma-separated list of cables, each
// "END=END[/latency_ns[/asymmetry_ns[/mos_loss]]]" where END is "board" or
// "board:port": "a=b", "a:sfp0=b:sfp1/5/2". Figures follow the lab file
// (latency one way A->B, asymmetry added to B->A); a missing MOS loss
// means the model's mos_loss. Parallel cables between the same boards need
// ports to tell them apart.
func ParseLinks(s string) ([]Link, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Link
	seen := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		l, err := parseLink(f)
		if err != nil {
			return nil, fmt.Errorf("link %q: %w", f, err)
		}
		key := l.Name()
		if l.PortA == "" && l.PortB == "" {
			// Without ports, the same pair twice (either way round) would
			// be two cables nobody can tell apart.
			a, b := l.A, l.B
			if b < a {
				a, b = b, a
			}
			key = a + "=" + b
		}
		if seen[key] {
			return nil, fmt.Errorf("link %q is listed twice (give ports, a:p0=b:p0, for parallel cables)", f)
		}
		seen[key] = true
		out = append(out, l)
		if len(out) > MaxLinks {
			return nil, fmt.Errorf("more than %d links listed", MaxLinks)
		}
	}
	return out, nil
}

func parseLink(f string) (Link, error) {
	l := Link{MOSLoss: -1}
	parts := strings.Split(f, "/")
	if len(parts) > 4 {
		return l, fmt.Errorf("too many figures: want END=END[/latency_ns[/asymmetry_ns[/mos_loss]]]")
	}
	a, b, ok := strings.Cut(parts[0], "=")
	if !ok {
		return l, fmt.Errorf("want END=END, e.g. p0t0=p0t1 or a:sfp0=b:sfp0")
	}
	var err error
	if l.A, l.PortA, err = parseEndpoint(a); err != nil {
		return l, err
	}
	if l.B, l.PortB, err = parseEndpoint(b); err != nil {
		return l, err
	}
	figs := []*float64{&l.LatencyNS, &l.AsymmetryNS, &l.MOSLoss}
	names := []string{"latency_ns", "asymmetry_ns", "mos_loss"}
	for i, p := range parts[1:] {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return l, fmt.Errorf("%s %q is not a finite number", names[i], strings.TrimSpace(p))
		}
		*figs[i] = v
	}
	switch {
	case !(l.LatencyNS >= 0 && l.LatencyNS <= MaxLinkNS):
		return l, fmt.Errorf("latency %v ns is outside 0..%g", l.LatencyNS, MaxLinkNS)
	case math.Abs(l.AsymmetryNS) > MaxLinkNS:
		return l, fmt.Errorf("asymmetry %v ns is outside ±%g", l.AsymmetryNS, MaxLinkNS)
	case l.LatencyNS+l.AsymmetryNS < 0:
		return l, fmt.Errorf("asymmetry %v ns makes the B->A delay negative", l.AsymmetryNS)
	case len(parts) == 4 && !(l.MOSLoss >= 0 && l.MOSLoss < 1):
		return l, fmt.Errorf("mos_loss %v is outside [0, 1)", l.MOSLoss)
	case l.A == l.B:
		return l, fmt.Errorf("both ends are on board %s", l.A)
	}
	return l, nil
}

func parseEndpoint(s string) (board, port string, err error) {
	s = strings.TrimSpace(s)
	board, port, hasPort := strings.Cut(s, ":")
	if !validName(board) {
		return "", "", fmt.Errorf("board name %q is not usable (%s)", board, nameHelp)
	}
	if hasPort && !validName(port) {
		return "", "", fmt.Errorf("port name %q is not usable (%s)", port, nameHelp)
	}
	return board, port, nil
}

// ParsePPM reads per-board oscillator errors, "board=ppm,...": "p0t0=12.5,p0t1=-8".
func ParsePPM(s string) (map[string]float64, error) {
	out := map[string]float64{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		b, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("entry %q: want board=ppm, e.g. p0t1=-8", f)
		}
		b = strings.TrimSpace(b)
		if !validName(b) {
			return nil, fmt.Errorf("entry %q: board name %q is not usable (%s)", f, b, nameHelp)
		}
		p, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(math.Abs(p) <= MaxPPM) {
			return nil, fmt.Errorf("entry %q: %q is not a number of ppm within ±%g", f, strings.TrimSpace(v), float64(MaxPPM))
		}
		if _, dup := out[b]; dup {
			return nil, fmt.Errorf("board %s is listed twice", b)
		}
		out[b] = p
	}
	return out, nil
}

// Clique builds the cabling of an Aquila-style Dragonfly (Aquila §3.2):
// pods of tins boards named p<pod>t<tin> (as golden/tin names TiNs), fully
// connected inside a pod by one local link per pair, and pods joined by
// global links in the "consecutive" arrangement golden/tin's NewClique uses
// (global port k of pod a goes to pod a+1+(k mod (P-1))): for the small
// Clique of 2 pods x 4 boards with one global port each, TiN t of pod 0 is
// cabled to TiN t of pod 1; for Aquila's 48 x 12 with 8 global ports, two
// global links join every pod pair (Aquila App. A). Links are listed local
// links pod by pod, then global links; none has figures (latency unknown).
func Clique(pods, tins, globalPorts int) (Topology, error) {
	switch {
	case pods < 1 || pods > 64:
		return Topology{}, fmt.Errorf("clique: %d pods: want 1..64", pods)
	case tins < 1 || tins > 25:
		return Topology{}, fmt.Errorf("clique: %d boards per pod: want 1..25 (Aquila §3.1: 24 pod-local ports per TiN)", tins)
	case globalPorts < 0 || globalPorts > 8:
		return Topology{}, fmt.Errorf("clique: %d global ports per board: want 0..8 (Aquila §3.1: 8 inter-pod ports)", globalPorts)
	}
	name := func(p, t int) string { return "p" + strconv.Itoa(p) + "t" + strconv.Itoa(t) }
	var top Topology
	for p := 0; p < pods; p++ {
		for t := 0; t < tins; t++ {
			top.Boards = append(top.Boards, name(p, t))
		}
	}
	for p := 0; p < pods; p++ {
		for a := 0; a < tins; a++ {
			for b := a + 1; b < tins; b++ {
				top.Links = append(top.Links, Link{A: name(p, a), B: name(p, b), MOSLoss: -1})
			}
		}
	}
	if pods > 1 {
		ports := tins * globalPorts
		perPair := ports / (pods - 1)
		if perPair == 0 {
			return Topology{}, fmt.Errorf("clique: %d pods of %d boards with %d global ports each cannot join every pod pair; raise global_ports", pods, tins, globalPorts)
		}
		for a := 0; a < pods; a++ {
			for k := 0; k < perPair*(pods-1); k++ {
				r, m := k%(pods-1), k/(pods-1)
				b := (a + 1 + r) % pods
				if b < a {
					continue // listed from b's side
				}
				kb := m*(pods-1) + (pods - 2 - r)
				top.Links = append(top.Links, Link{
					A: name(a, k/globalPorts), PortA: "g" + strconv.Itoa(k%globalPorts),
					B: name(b, kb/globalPorts), PortB: "g" + strconv.Itoa(kb%globalPorts),
					MOSLoss: -1,
				})
			}
		}
	}
	return top, nil
}

// ParseClique reads "PxT" (pods x boards per pod): "2x4".
func ParseClique(s string) (pods, tins int, err error) {
	a, b, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return 0, 0, fmt.Errorf("clique %q: want PODSxBOARDS, e.g. 2x4", s)
	}
	pods, err1 := strconv.Atoi(strings.TrimSpace(a))
	tins, err2 := strconv.Atoi(strings.TrimSpace(b))
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("clique %q: want PODSxBOARDS with whole numbers, e.g. 2x4", s)
	}
	return pods, tins, nil
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
