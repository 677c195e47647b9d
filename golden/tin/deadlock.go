package tin

import (
	"fmt"
	"sort"
	"strings"
)

// Channel is one virtual channel of one directed link: the resource a cell
// holds while it waits for the next (Dally's channel dependency graph).
type Channel struct {
	From, To Node
	VC       int
}

func (ch Channel) String() string { return fmt.Sprintf("%s->%s[vc%d]", ch.From, ch.To, ch.VC) }

// DependencyGraph builds the channel dependency graph of a set of paths: an
// edge from each channel of a path to the next channel of the same path. A
// routing function whose graph has no cycle cannot deadlock (Dally and
// Seitz); with adaptive routing the graph of all candidate routes is a safe
// over-approximation.
type DependencyGraph struct {
	index map[Channel]int
	chans []Channel
	next  []map[int]bool
}

// NewDependencyGraph returns an empty graph.
func NewDependencyGraph() *DependencyGraph { return &DependencyGraph{index: map[Channel]int{}} }

func (g *DependencyGraph) id(ch Channel) int {
	if i, ok := g.index[ch]; ok {
		return i
	}
	g.index[ch] = len(g.chans)
	g.chans = append(g.chans, ch)
	g.next = append(g.next, map[int]bool{})
	return len(g.chans) - 1
}

// Add adds the dependencies of one path.
func (g *DependencyGraph) Add(p Path) {
	prev := -1
	from := p.From
	for _, h := range p.Hops {
		cur := g.id(Channel{from, h.To, h.VC})
		if prev >= 0 {
			g.next[prev][cur] = true
		}
		prev, from = cur, h.To
	}
}

// Channels returns the number of channels the paths use.
func (g *DependencyGraph) Channels() int { return len(g.chans) }

// Edges returns the number of dependencies.
func (g *DependencyGraph) Edges() int {
	n := 0
	for _, m := range g.next {
		n += len(m)
	}
	return n
}

// MaxVC returns the highest VC of any channel (-1 for an empty graph).
func (g *DependencyGraph) MaxVC() int {
	m := -1
	for _, ch := range g.chans {
		m = max(m, ch.VC)
	}
	return m
}

// Cycle returns one cycle of dependencies, or nil if the graph is acyclic.
func (g *DependencyGraph) Cycle() []Channel {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.chans))
	parent := make([]int, len(g.chans))
	// Sorted successor lists make the reported cycle the same on every run.
	succ := make([][]int, len(g.chans))
	for i, m := range g.next {
		for j := range m {
			succ[i] = append(succ[i], j)
		}
		sort.Ints(succ[i])
	}
	type frame struct{ v, k int }
	for root := range g.chans {
		if color[root] != white {
			continue
		}
		stack := []frame{{root, 0}}
		color[root] = grey
		parent[root] = -1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.k == len(succ[top.v]) {
				color[top.v] = black
				stack = stack[:len(stack)-1]
				continue
			}
			w := succ[top.v][top.k]
			top.k++
			switch color[w] {
			case white:
				color[w], parent[w] = grey, top.v
				stack = append(stack, frame{w, 0})
			case grey:
				cyc := []Channel{g.chans[w]}
				for v := top.v; v != w; v = parent[v] {
					cyc = append(cyc, g.chans[v])
				}
				for i, j := 1, len(cyc)-1; i < j; i, j = i+1, j-1 {
					cyc[i], cyc[j] = cyc[j], cyc[i]
				}
				return cyc
			}
		}
	}
	return nil
}

// RouteGraph returns the dependency graph of every candidate route (all
// modes: the fully adaptive sets contain the others) between every pair of
// TiNs of the Clique, for one traffic class.
func (c *Clique) RouteGraph(class int) (*DependencyGraph, error) {
	return c.routeGraph(class, false)
}

func (c *Clique) routeGraph(class int, literal bool) (*DependencyGraph, error) {
	if class < 0 || class >= TrafficClasses {
		return nil, fmt.Errorf("tin: traffic class %d: want 0..%d", class, TrafficClasses-1)
	}
	g := NewDependencyGraph()
	for _, s := range c.Nodes() {
		for _, d := range c.Nodes() {
			for _, p := range c.minimalRule(s, d, class, literal) {
				g.Add(p)
			}
			for _, p := range c.nonMinimalRule(s, d, class, literal) {
				g.Add(p)
			}
		}
	}
	return g, nil
}

// CheckDeadlockFree returns an error naming a cycle of channel dependencies
// if the Clique's routes could deadlock (Aquila §3.2), nil otherwise.
func (c *Clique) CheckDeadlockFree(class int) error {
	g, err := c.RouteGraph(class)
	if err != nil {
		return err
	}
	if cyc := g.Cycle(); cyc != nil {
		s := make([]string, len(cyc))
		for i, ch := range cyc {
			s[i] = ch.String()
		}
		return fmt.Errorf("tin: the routes of the %s Clique have a cyclic VC dependency: %s -> (back to the first)", c.Param(), strings.Join(s, " -> "))
	}
	return nil
}
