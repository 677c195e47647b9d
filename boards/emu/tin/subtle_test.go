package tin

import (
	"fmt"
	"sort"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

func tflt(name, board, link string, kv ...string) labconfig.Fault {
	f := labconfig.Fault{Name: name, Board: board, Link: link, Params: labconfig.Params{}}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Params[kv[i]] = labconfig.Param{Values: []string{kv[i+1]}}
	}
	return f
}

// tin-slow-fallthrough: an uncontended cell spends 26-30 ns from arrival to
// grant in the slow switch instead of 16-20 (the grant waits for a clock
// edge; §3.1's 20 ns fall-through is 16 to the grant and 4 across);
// FALLTHROUGH_NS reads 20 (declared) or 32 (actual).
func TestFaultSlowFallthrough(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{tflt(FaultSlowFallthrough, "tin-p0b1", "")}})
	tr.configure()
	tr.WriteAll("TRACE_CTRL", 1)
	tr.WriteAll("TRACE_EVERY", 1)
	tr.ur(1000, 64, 20, 0)
	if st := tr.run(); st&tgDone == 0 {
		t.Fatalf("TG_STATUS %#x", st)
	}
	for _, b := range []string{"tin-p0b0", "tin-p0b1"} {
		var ds []int
		for _, w := range tr.popRecords(b, "TRACE_COUNT", "TRACE_DATA", traceWords) {
			ds = append(ds, int(w[6]-w[5]))
		}
		sort.Ints(ds)
		if len(ds) < 20 {
			t.Fatalf("%s: %d trace records", b, len(ds))
		}
		lo, med := ds[0], ds[len(ds)/2]
		want := [2]int{16, 20}
		if b == "tin-p0b1" {
			want = [2]int{26, 30}
		}
		// Contention adds waits: the least and the typical cell show the pipeline.
		if lo < want[0] || med > want[1] {
			t.Errorf("%s: arrival to grant least %d ns, median %d ns; want %d..%d", b, lo, med, want[0], want[1])
		}
	}
	if v := tr.Read("tin-p0b1", "FALLTHROUGH_NS"); v != 20 {
		t.Errorf("report=declared: FALLTHROUGH_NS reads %d, want 20", v)
	}
	tr = newTestRack(t, rackOpts{faults: []labconfig.Fault{tflt(FaultSlowFallthrough, "tin-p0b1", "", "report", "actual")}})
	if v := tr.Read("tin-p0b1", "FALLTHROUGH_NS"); v != 32 {
		t.Errorf("report=actual: FALLTHROUGH_NS reads %d, want 32 (20 + 10 rounded up to the 4 ns clock)", v)
	}
}

// tin-few-credits: at rest the peer holds 1152 bytes of credit per VC
// toward the faulty cage, below CREDIT_INIT (declared 1280) or with
// CREDIT_INIT itself reading 1152 (actual).
func TestFaultFewCredits(t *testing.T) {
	for _, report := range []string{"declared", "actual"} {
		tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{tflt(FaultFewCredits, "", "tin-p0b1:sfp2", "report", report)}})
		tr.configure()
		tr.ur(20000, 1500, 100, ipgReply)
		if st := tr.run(); st&tgDone == 0 {
			t.Fatalf("TG_STATUS %#x", st)
		}
		// tin-p0b1's sfp2 is cabled to tin-p0b0's sfp0.
		init := tr.Read("tin-p0b0", "CREDIT_INIT[0]")
		want := map[string]uint32{"declared": 1280, "actual": 1152}[report]
		if init != want {
			t.Errorf("report=%s: CREDIT_INIT[0] of the peer reads %d, want %d", report, init, want)
		}
		for vc := 0; vc < nVC; vc++ {
			if c := tr.Read("tin-p0b0", fmt.Sprintf("CREDITS[%d]", vc)); c != 1152 {
				t.Errorf("report=%s: peer's CREDITS for VC %d at rest %d, want 1152", report, vc, c)
			}
		}
		if c := tr.Read("tin-p0b0", "CREDITS[32]"); c != 1280 {
			t.Errorf("a healthy link's CREDITS %d, want 1280", c)
		}
		if d := tr.Sum("IPG_DROPPED"); d != 0 {
			t.Errorf("%d packets dropped: fewer credits must not lose anything", d)
		}
	}
}

// tin-rob-small: a skew of up to 46 REQs (two concurrent streams, each
// held up by one dropped REQ) fits the 50-entry buffer; with 40 entries
// REQs are NACKed and streams fall back to slow mode, still in order.
func TestFaultROBSmall(t *testing.T) {
	for _, faulty := range []bool{false, true} {
		var fs []labconfig.Fault
		if faulty {
			fs = []labconfig.Fault{tflt(FaultROBSmall, ordTarget.board(), "")}
		}
		tr := newTestRack(t, rackOpts{seed: 3, faults: fs})
		c := ordCfg{streams: 4, length: 64, conc: 2, dropEvery: 16, srcConns: -1}
		ordRun(t, tr, fourSources[:1], ordTarget, c)
		tb := ordTarget.board()
		checkStreams(t, tr.dlog(tb), 64, false, false)
		hwm, full := tr.Read(tb, "ORD_ROB_HWM"), tr.Read(tb, "ORD_NACK_ROBFULL")
		t.Logf("faulty %v: reorder buffer high-water mark %d, full NACKs %d, ORD_ROB_ENTRIES %d", faulty, hwm, full, tr.Read(tb, "ORD_ROB_ENTRIES"))
		switch {
		case !faulty && (full != 0 || hwm <= 40):
			t.Errorf("healthy: high-water mark %d (want above 40), %d full NACKs (want 0)", hwm, full)
		case faulty && (full == 0 || hwm > 40 || tr.Sum("ORD_FALLBACKS") == 0):
			t.Errorf("40 entries: high-water mark %d, %d full NACKs, %d fall-backs", hwm, full, tr.Sum("ORD_FALLBACKS"))
		}
		if v := tr.Read(tb, "ORD_ROB_ENTRIES"); v != 50 {
			t.Errorf("ORD_ROB_ENTRIES reads %d, want the declared 50", v)
		}
	}
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{tflt(FaultROBSmall, "tin-p0b0", "", "report", "actual")}})
	if v := tr.Read("tin-p0b0", "ORD_ROB_ENTRIES"); v != 40 {
		t.Errorf("report=actual: ORD_ROB_ENTRIES reads %d, want 40", v)
	}
}

// tin-cell-drop: cells vanish before the input FIFO: RX_CELLS falls behind
// the peer's TX_CELLS and packets are dropped by the IP timeouts.
func TestFaultCellDrop(t *testing.T) {
	tr := newTestRack(t, rackOpts{faults: []labconfig.Fault{tflt(FaultCellDrop, "", "tin-p0b1:sfp2", "rate", "0.01")}})
	tr.configure()
	tr.WriteAll("IP_REASM_TIMEOUT_US", 20)
	tr.WriteAll("IP_FETCH_TIMEOUT_US", 40)
	tr.ur(20000, 1500, 200, 0)
	if st := tr.run(); st&tgDone == 0 {
		t.Fatalf("TG_STATUS %#x", st)
	}
	tx, rx := tr.Read("tin-p0b0", "TX_CELLS[0]"), tr.Read("tin-p0b1", "RX_CELLS[2]")
	if tx == 0 || rx >= tx {
		t.Errorf("the peer sent %d cells over the cable, %d arrived: want some lost", tx, rx)
	}
	if rx2, tx2 := tr.Read("tin-p0b0", "RX_CELLS[0]"), tr.Read("tin-p0b1", "TX_CELLS[2]"); rx2 != tx2 {
		t.Errorf("the other direction lost cells: %d sent, %d received", tx2, rx2)
	}
	if d := tr.Sum("IPG_DROPPED"); d == 0 {
		t.Errorf("no packet dropped although %d cells were lost", tx-rx)
	}
	if e := tr.Read("tin-p0b1", "RX_CRC_ERRORS[2]"); e != 0 {
		t.Errorf("%d CRC errors: the fault leaves none", e)
	}
}
