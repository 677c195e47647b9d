package bringup

import (
	"fmt"
	"sort"
	"strings"
)

// Status is a board's bootstrap outcome.
type Status string

const (
	// OK: the board was bootstrapped (over the DCN in wave 0, or in-band
	// through a proxy) and stays up.
	OK Status = "ok"
	// Failed: the board never answers (it never boots, or its firmware
	// never sends a DHCP discover); the runner reports it failed and goes on.
	Failed Status = "failed"
	// Unreachable: the board is up but every cable path to a DCN board goes
	// through boards that failed or died, so no proxy ever reaches it.
	Unreachable Status = "unreachable"
	// Died: the board was bootstrapped, then died when it first relayed for
	// a target (a proxy that dies mid-bootstrap); its targets are taken over
	// by other neighbours of its wave.
	Died Status = "died"
)

// Faults are the boards a bootstrap scenario loses.
type Faults struct {
	// Dead boards never answer.
	Dead []string
	// ProxyDies boards complete their own bootstrap and die the first time
	// they relay for a target (see Bootstrap).
	ProxyDies []string
}

// BoardPlan is the golden bootstrap of one board.
type BoardPlan struct {
	Board  string
	DCN    bool
	Status Status
	// Wave is 0 for a DCN board, k for a board bootstrapped through a
	// proxy of wave k-1, and -1 for a board that is never bootstrapped.
	Wave int
	// Proxies are the acceptable proxies: the neighbours in wave Wave-1
	// that stay up, in topology order; empty for a DCN board and for a
	// board that is never bootstrapped.
	Proxies []string
	// Why explains a failed, unreachable or died board.
	Why string
}

// Plan is the golden bootstrap of a rack (Aquila §4.4).
type Plan struct {
	Boards []BoardPlan // in topology order
	// Waves lists the bootstrapped boards of each wave, in topology order.
	Waves [][]string
	g     *graph
	dying []bool
}

// Bootstrap computes the bootstrap waves of a rack, as Aquila §4.4
// describes them: the controller reaches the DCN-connected boards first
// (wave 0), uses each as a proxy to bootstrap its directly connected
// boards over PMOS (wave 1), then uses those as proxies in turn, "and so
// on". A board's wave is therefore its breadth-first distance, over the
// cables, from the nearest DCN board, and any neighbour in the previous
// wave may be its proxy.
//
// Faults change the graph the waves spread over:
//   - a dead board (never answers) gets no wave and relays for nobody; a
//     board it would have proxied is reached through its other neighbours,
//     possibly in a later wave, or is unreachable when every path to a DCN
//     board goes through failed boards;
//   - a ProxyDies board gets its own wave and status Died, then relays for
//     nobody: its would-be targets are taken over by another neighbour of
//     its wave when there is one, and otherwise reached later or not at all.
//     The model expects the fault to fire whenever the board has a
//     neighbour still to bootstrap when its own wave ends (a target sends
//     DHCP discovers over MOS on all its links and every bootstrapped
//     neighbour traps them, §4.4); a ProxyDies board without such a
//     neighbour never relays and stays OK.
func Bootstrap(t Topology, f Faults) (*Plan, error) {
	g, err := build(t)
	if err != nil {
		return nil, err
	}
	n := len(g.Boards)
	dead := make([]bool, n)
	dying := make([]bool, n)
	for _, set := range []struct {
		names []string
		mark  []bool
		what  string
	}{{f.Dead, dead, "dead"}, {f.ProxyDies, dying, "proxy-dies"}} {
		for _, b := range set.names {
			i, ok := g.index[b]
			if !ok {
				return nil, fmt.Errorf("%s board: %s", set.what, g.unknown(b))
			}
			if set.mark[i] {
				return nil, fmt.Errorf("%s board %s is listed twice", set.what, b)
			}
			set.mark[i] = true
		}
	}
	for i := range dead {
		if dead[i] && dying[i] {
			return nil, fmt.Errorf("board %s is both dead (never answers) and proxy-dies (answers, then dies); pick one", g.Boards[i])
		}
	}
	wave := g.bfs(dead, dying)
	free := g.bfs(make([]bool, n), make([]bool, n)) // the fault-free waves, to explain unreachable boards

	p := &Plan{g: g, dying: dying, Boards: make([]BoardPlan, n)}
	for i, b := range g.Boards {
		bp := BoardPlan{Board: b, Wave: wave[i]}
		for _, d := range g.dcn {
			bp.DCN = bp.DCN || d == i
		}
		switch {
		case dead[i]:
			bp.Status, bp.Wave = Failed, -1
			bp.Why = "never answers"
		case wave[i] < 0:
			bp.Status = Unreachable
			bp.Why = p.cutOff(i, wave, free, dead)
		default:
			bp.Status = OK
			if dying[i] && p.relays(i, wave, dead) {
				bp.Status = Died
				bp.Why = "died when it first relayed for a target (proxy-dies)"
			}
			if wave[i] > 0 {
				for _, j := range g.nbr[i] {
					if wave[j] == wave[i]-1 && !dying[j] {
						bp.Proxies = append(bp.Proxies, g.Boards[j])
					}
				}
			}
		}
		p.Boards[i] = bp
		if bp.Wave >= 0 {
			for len(p.Waves) <= bp.Wave {
				p.Waves = append(p.Waves, nil)
			}
			p.Waves[bp.Wave] = append(p.Waves[bp.Wave], b)
		}
	}
	return p, nil
}

// bfs returns each board's wave: breadth-first from the live DCN boards;
// dead boards are never reached, dying boards are reached but do not
// spread the wave. -1: not reached.
func (g *graph) bfs(dead, dying []bool) []int {
	wave := make([]int, len(g.Boards))
	for i := range wave {
		wave[i] = -1
	}
	var frontier []int
	for _, d := range g.dcn {
		if !dead[d] {
			wave[d] = 0
			frontier = append(frontier, d)
		}
	}
	for k := 1; len(frontier) > 0; k++ {
		var next []int
		for _, i := range frontier {
			if dying[i] {
				continue
			}
			for _, j := range g.nbr[i] {
				if wave[j] < 0 && !dead[j] {
					wave[j] = k
					next = append(next, j)
				}
			}
		}
		sort.Ints(next)
		frontier = next
	}
	return wave
}

// relays reports whether a bootstrapped board has a neighbour that is still
// to bootstrap when its own wave ends (a later wave, or alive but never
// reached): that neighbour's DHCP discovers reach it over MOS.
func (p *Plan) relays(i int, wave []int, dead []bool) bool {
	for _, j := range p.g.nbr[i] {
		if !dead[j] && (wave[j] > wave[i] || wave[j] < 0) {
			return true
		}
	}
	return false
}

// cutOff explains why board i is unreachable.
func (p *Plan) cutOff(i int, wave, free []int, dead []bool) string {
	g := p.g
	if len(g.dcn) == 0 {
		return "the topology has no DCN board, so the runner reaches nothing (mark the boards whose console or bridge is cabled dcn: true)"
	}
	if free[i] < 0 {
		return "no cable path to any DCN board (check the cabling)"
	}
	// The failed and died boards on the border of i's unreached component.
	seen := map[int]bool{i: true}
	stack := []int{i}
	var border []string
	onBorder := map[int]bool{}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, j := range g.nbr[x] {
			switch {
			case seen[j] || onBorder[j]:
			case wave[j] < 0 && !dead[j]:
				seen[j] = true
				stack = append(stack, j)
			default:
				onBorder[j] = true
				border = append(border, g.Boards[j])
			}
		}
	}
	sort.Slice(border, func(a, b int) bool { return g.index[border[a]] < g.index[border[b]] })
	return "every path to a DCN board goes through failed or dying boards: " + strings.Join(border, ", ")
}

// Board returns the plan of one board.
func (p *Plan) Board(name string) (BoardPlan, bool) {
	i, ok := p.g.index[name]
	if !ok {
		return BoardPlan{}, false
	}
	return p.Boards[i], true
}

// WaveCount is the number of waves, wave 0 (the DCN boards) included: the
// highest wave plus one, 0 when no board is bootstrapped.
func (p *Plan) WaveCount() int { return len(p.Waves) }

// Count returns how many boards have the status.
func (p *Plan) Count(s Status) int {
	n := 0
	for _, b := range p.Boards {
		if b.Status == s {
			n++
		}
	}
	return n
}

// Live lists the boards that are up after the bootstrap (status OK), in
// topology order: the boards the time-distribution tree spans.
func (p *Plan) Live() []string {
	var out []string
	for _, b := range p.Boards {
		if b.Status == OK {
			out = append(out, b.Board)
		}
	}
	return out
}

// CheckProxy says whether the runner's report for a board (its wave, the
// proxy it used; proxy "" for a DCN board) agrees with the golden plan,
// and if not, what was expected.
func (p *Plan) CheckProxy(board string, wave int, proxy string) error {
	bp, ok := p.Board(board)
	if !ok {
		return fmt.Errorf("bootstrap: %s", p.g.unknown(board))
	}
	if bp.Wave < 0 {
		return fmt.Errorf("bootstrap: board %s was reported in wave %d, but the golden plan never bootstraps it (%s: %s)", board, wave, bp.Status, bp.Why)
	}
	if wave != bp.Wave {
		return fmt.Errorf("bootstrap: board %s was reported in wave %d, golden wave %d (Aquila §4.4: breadth-first from the DCN boards)", board, wave, bp.Wave)
	}
	if bp.Wave == 0 {
		if proxy != "" {
			return fmt.Errorf("bootstrap: board %s is DCN-connected (wave 0) and needs no proxy, but %s was reported", board, proxy)
		}
		return nil
	}
	for _, q := range bp.Proxies {
		if q == proxy {
			return nil
		}
	}
	return fmt.Errorf("bootstrap: board %s was bootstrapped through %q, which is not an acceptable proxy (its live neighbours in wave %d: %s)",
		board, proxy, bp.Wave-1, strings.Join(bp.Proxies, ", "))
}
