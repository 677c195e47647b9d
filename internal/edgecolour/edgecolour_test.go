package edgecolour

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// proper reports the first two edges that share a colour at a vertex.
func proper(us, vs, col []int) (int, int, bool) {
	for a := range us {
		for b := a + 1; b < len(us); b++ {
			if col[a] == col[b] && (us[a] == us[b] || vs[a] == vs[b]) {
				return a, b, false
			}
		}
	}
	return 0, 0, true
}

// Random bipartite multigraphs of degree at most k get a proper colouring
// with k colours, the same for the same edges; one edge more than a vertex
// can take is an OverloadError naming its ends.
func TestRandomMultigraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for it := 0; it < 3000; it++ {
		n, k := 1+rng.IntN(8), 1+rng.IntN(5)
		degL, degR := make([]int, n), make([]int, n)
		var us, vs []int
		for tries := 0; tries < n*k*2; tries++ {
			u, v := rng.IntN(n), rng.IntN(n)
			if degL[u] < k && degR[v] < k {
				degL[u]++
				degR[v]++
				us, vs = append(us, u), append(vs, v)
			}
		}
		col, err := Bipartite(n, k, us, vs)
		if err != nil {
			t.Fatalf("%d vertices, %d colours, edges %v -> %v: %v", n, k, us, vs, err)
		}
		for e, c := range col {
			if c < 0 || c >= k {
				t.Fatalf("edge %d has colour %d of %d", e, c, k)
			}
		}
		if a, b, ok := proper(us, vs, col); !ok {
			t.Fatalf("edges %d and %d share colour %d at a vertex (%v -> %v: %v)", a, b, col[a], us, vs, col)
		}
		again, _ := Bipartite(n, k, us, vs)
		if !slices.Equal(col, again) {
			t.Fatalf("two colourings of the same edges differ: %v, %v", col, again)
		}
		for u := range degL {
			if degL[u] == k {
				_, err := Bipartite(n, k, append(slices.Clone(us), u), append(slices.Clone(vs), 0))
				var over *OverloadError
				if !errors.As(err, &over) || over.U != u || over.V != 0 || over.Colours != k {
					t.Fatalf("vertex %d of degree %d given one more edge: %v", u, k, err)
				}
				break
			}
		}
	}
}

// A demand the first-fit colouring gets wrong without the recolouring:
// the third edge finds its left end's free colour taken at its right end.
func TestRecolouring(t *testing.T) {
	us := []int{0, 1, 1, 0}
	vs := []int{0, 1, 0, 1}
	col, err := Bipartite(2, 2, us, vs)
	if err != nil {
		t.Fatal(err)
	}
	if a, b, ok := proper(us, vs, col); !ok {
		t.Fatalf("edges %d and %d share colour %d: %v", a, b, col[a], col)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := Bipartite(2, 2, []int{0}, []int{0, 1}); err == nil {
		t.Error("unequal edge lists accepted")
	}
	if _, err := Bipartite(2, 2, []int{0}, []int{2}); err == nil {
		t.Error("a vertex outside the graph accepted")
	}
}

// FuzzBipartite: any edge list either gets a proper colouring or an error,
// never a panic.
func FuzzBipartite(f *testing.F) {
	f.Add(uint8(3), uint8(2), []byte{0, 0, 1, 1, 2, 0, 0, 1})
	f.Fuzz(func(t *testing.T, n, k uint8, edges []byte) {
		vertices, colours := int(n%16)+1, int(k%8)+1
		var us, vs []int
		for i := 0; i+1 < len(edges) && i < 256; i += 2 {
			us, vs = append(us, int(edges[i])%(vertices+1)), append(vs, int(edges[i+1])%(vertices+1))
		}
		col, err := Bipartite(vertices, colours, us, vs)
		if err != nil {
			return
		}
		if a, b, ok := proper(us, vs, col); !ok {
			t.Fatalf("edges %d and %d share colour %d", a, b, col[a])
		}
	})
}
