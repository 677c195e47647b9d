package tin

import (
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
)

// fifoBlockWords is what the catalogue's logs window gives each FIFO: every
// _FIFO register starts a block of that many words inside the window, no
// two blocks overlap, and LAT_FIFO's classes are a block apart.
func TestFIFOBlocksMatchTheCatalogue(t *testing.T) {
	m, err := bitstreams.Default().Design("tin")
	if err != nil {
		t.Fatal(err)
	}
	var logs *bitstreams.Window
	for i := range m.Windows {
		if m.Windows[i].Name == "logs" {
			logs = &m.Windows[i]
		}
	}
	if logs == nil || logs.Access != bitstreams.Pop {
		t.Fatalf("the tin manifest has no pop window named logs: %+v", logs)
	}
	const block = fifoBlockWords * 4
	used := map[uint64]string{}
	for _, r := range m.Registers {
		if !strings.HasSuffix(r.Name, "_FIFO") {
			continue
		}
		n, stride := max(r.Count, 1), uint64(block)
		if r.Count > 1 && r.Stride != block {
			t.Errorf("%s: stride 0x%x, want a block (0x%x)", r.Name, r.Stride, block)
		}
		for k := 0; k < n; k++ {
			a := r.Offset + uint64(k)*stride
			if (a-logs.Base)%block != 0 || a < logs.Base || a+block > logs.Base+logs.Size {
				t.Errorf("%s[%d] at 0x%x is not a whole block of the logs window", r.Name, k, a)
			}
			if other, ok := used[a]; ok {
				t.Errorf("%s[%d] and %s share the block at 0x%x", r.Name, k, other, a)
			}
			used[a] = r.Name
		}
	}
	if len(used) == 0 || uint64(len(used))*block != logs.Size {
		t.Errorf("%d FIFO blocks of 0x%x bytes in a window of 0x%x", len(used), block, logs.Size)
	}
}
