package ordering

import "testing"

// A drop of SEQ w-1 in each of k streams with a window of w holds w-1 REQs
// of each in the reorder buffer for a timeout: the buffer peaks at k(w-1).
// §IV-D's 50-packet buffer absorbs two such holds of Fig. 12c's window of
// 25 (48 REQs) without a NACK; a 40-packet one NACKs the excess and the
// streams that see a NACK still complete in order.
func TestDropEveryHoldsWindow(t *testing.T) {
	const w = 25
	sts := []Stream{{Src: 0, Mode: Fast, N: 2*w - 1}, {Src: 1, Mode: Fast, N: 2*w - 1}}
	for _, tc := range []struct {
		rob, wantMax int
		nacks        bool
	}{{50, 48, false}, {0, 48, false}, {40, 40, true}} {
		cfg := Config{Target: TargetConfig{ROB: tc.rob}, Window: w}
		net := &DropEvery{N: w}
		r, err := Run(cfg, sts, net)
		if err != nil {
			t.Fatal(err)
		}
		if net.Dropped != len(sts) {
			t.Errorf("buffer %d: %d REQs dropped, want one per stream", tc.rob, net.Dropped)
		}
		checkResult(t, cfg, sts, r)
		s := Summarize(r)
		if r.MaxROB != tc.wantMax || (r.FullNACKs > 0) != tc.nacks || s.NACKs != r.FullNACKs {
			t.Errorf("buffer %d: peak %d (want %d), %d full NACKs of %d (want some: %v)", tc.rob, r.MaxROB, tc.wantMax, r.FullNACKs, s.NACKs, tc.nacks)
		}
		if !tc.nacks && (s.FellBack != 0 || s.Retransmits != 2) {
			t.Errorf("buffer %d: %d fell back, %d retransmissions (want 0 and one per stream)", tc.rob, s.FellBack, s.Retransmits)
		}
	}
	// N = 0 drops nothing: everything arrives in order.
	r, err := Run(Config{Window: w}, sts, &DropEvery{})
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxROB != 0 || Summarize(r).Retransmits != 0 {
		t.Errorf("no drops: peak %d, %d retransmissions", r.MaxROB, Summarize(r).Retransmits)
	}
}
