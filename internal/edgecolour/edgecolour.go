// Package edgecolour colours the edges of a bipartite multigraph so that no
// two edges at a vertex share a colour, with as many colours as the largest
// degree (König's edge-colouring theorem), by alternating-path
// recolouring. The result is a function of the edge list: the same edges in
// the same order give the same colours.
//
// It is a container of an algorithm and encodes no reading of a paper:
// both the runner's side (traffic/) and the golden models may use it
// without sharing a reading (docs/architecture.md).
package edgecolour

import "fmt"

// OverloadError says that a vertex has more edges than there are colours:
// left vertex U or right vertex V (the ends of the edge being coloured)
// already has an edge of every colour.
type OverloadError struct {
	U, V    int
	Colours int
}

func (e *OverloadError) Error() string {
	return fmt.Sprintf("vertex %d (left) or %d (right) has more than %d edges", e.U, e.V, e.Colours)
}

// Bipartite colours the edges us[e] -> vs[e] (left vertex us[e], right
// vertex vs[e], both in 0..vertices-1) with colours 0..colours-1 so that
// no two edges at a vertex share a colour, and returns each edge's colour.
// Every vertex must have degree at most colours; otherwise it returns an
// *OverloadError.
//
// Edges are coloured in order, each with the lowest colour a free at its
// left end; when a is taken at the right end, the path from there that
// alternates a and b (the lowest colour free at the right end) has its two
// colours swapped, which frees a there and cannot reach the left end.
func Bipartite(vertices, colours int, us, vs []int) ([]int, error) {
	if len(us) != len(vs) {
		return nil, fmt.Errorf("edgecolour: %d left ends for %d right ends", len(us), len(vs))
	}
	left := make([]int, vertices*colours) // left[v*colours+c]: v's edge of colour c, -1 none
	right := make([]int, vertices*colours)
	for i := range left {
		left[i], right[i] = -1, -1
	}
	col := make([]int, len(us))
	free := func(tab []int, v int) int {
		for c := 0; c < colours; c++ {
			if tab[v*colours+c] < 0 {
				return c
			}
		}
		return -1
	}
	var path []int
	for e := range us {
		u, v := us[e], vs[e]
		if u < 0 || u >= vertices || v < 0 || v >= vertices {
			return nil, fmt.Errorf("edgecolour: edge %d: %d -> %d is outside the %d vertices", e, u, v, vertices)
		}
		a, b := free(left, u), free(right, v)
		if a < 0 || b < 0 {
			return nil, &OverloadError{U: u, V: v, Colours: colours}
		}
		if right[v*colours+a] >= 0 {
			path = path[:0]
			x, atRight, c := v, true, a
			for {
				var ed int
				if atRight {
					ed = right[x*colours+c]
				} else {
					ed = left[x*colours+c]
				}
				if ed < 0 {
					break
				}
				path = append(path, ed)
				if atRight {
					x = us[ed]
				} else {
					x = vs[ed]
				}
				atRight = !atRight
				c = a + b - c
			}
			for _, ed := range path {
				left[us[ed]*colours+col[ed]] = -1
				right[vs[ed]*colours+col[ed]] = -1
			}
			for _, ed := range path {
				col[ed] = a + b - col[ed]
				left[us[ed]*colours+col[ed]] = ed
				right[vs[ed]*colours+col[ed]] = ed
			}
		}
		col[e] = a
		left[u*colours+a] = e
		right[v*colours+a] = e
	}
	return col, nil
}
