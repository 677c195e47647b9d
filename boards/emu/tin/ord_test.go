package tin

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// dlogRec is one delivery-log record (docs/tin.md).
type dlogRec struct {
	src    Addr
	tag    uint16
	seq    int
	execs  int
	flags  uint32
	sentNS uint32
	timeNS uint32
	cid    int
	result uint32
}

func (tr *testRack) dlog(board string) []dlogRec {
	var out []dlogRec
	for _, w := range tr.popRecords(board, "DLOG_COUNT", "DLOG_DATA", dlogWords) {
		out = append(out, dlogRec{src: Addr(w[0] >> 16), tag: uint16(w[0]), seq: int(w[1] & 0xFFFF), execs: int(w[1] >> 16 & 0xFF),
			flags: w[1] >> 24, sentNS: w[2], timeNS: w[3], cid: int(w[4] >> 24), result: w[4] & 0xFFFFFF})
	}
	return out
}

type ordCfg struct {
	streams, length, conc uint32
	ctrl                  uint32 // OG_CTRL bits besides ENABLE
	jitterNS              uint32
	lossReq, lossAck      uint32 // ppm
	dropEvery             uint32
	tgtConns              uint32 // 0: reset
	srcConns              int    // -1: reset
	rob                   uint32 // 0: reset
}

// ordRun sends streams from every source to the target's 1RMA engine and
// runs to completion.
func ordRun(t *testing.T, tr *testRack, sources []node, target node, c ordCfg) {
	t.Helper()
	tb := target.board()
	if c.tgtConns > 0 {
		tr.Write(tb, "ORD_TGT_CONNS", c.tgtConns)
	}
	if c.rob > 0 {
		tr.Write(tb, "ORD_ROB_ENTRIES", c.rob)
	}
	tr.Write(tb, "ORD_LOSS_REQ_PPM", c.lossReq)
	tr.Write(tb, "ORD_DROP_EVERY", c.dropEvery)
	for _, s := range sources {
		b := s.board()
		tr.Write(b, "OG_DST", uint32(target.addr()))
		tr.Write(b, "OG_STREAMS", c.streams)
		tr.Write(b, "OG_LEN", c.length)
		tr.Write(b, "OG_CONCURRENT", max(c.conc, 1))
		tr.Write(b, "ORD_JITTER_NS", c.jitterNS)
		tr.Write(b, "ORD_LOSS_ACK_PPM", c.lossAck)
		if c.srcConns >= 0 {
			tr.Write(b, "ORD_SRC_CONNS", uint32(c.srcConns))
		}
		tr.Write(b, "OG_CTRL", ogEnable|c.ctrl)
	}
	if st := tr.run(); st != tgDone {
		t.Fatalf("TG_STATUS %#x (ops open %d)", st, tr.Read(tb, "TG_OPS_OPEN"))
	}
	for _, s := range sources {
		if got := tr.Read(s.board(), "OG_COMPLETED"); got != c.streams {
			t.Errorf("%v: %d of %d streams completed", s, got, c.streams)
		}
	}
}

// streamViolations is the reference semantics (SC'18 §III-D, §III-E): for
// an ordered stream the first executions of its REQs are 0, 1, ..., n-1 in
// that order; for a synchronized one the sync operation (the last REQ)
// executes after the first execution of every data REQ; with exactly-once
// delivery nothing executes twice; every REQ executes; the log's execution
// numbers and fetch-and-add results count the stream's executions. It
// returns the streams seen, the re-executions, and what is wrong.
func streamViolations(log []dlogRec, n int, sync, eod bool) (streams, dups int, bad []string) {
	type sk struct {
		src Addr
		tag uint16
	}
	by := map[sk][]dlogRec{}
	for _, r := range log {
		by[sk{r.src, r.tag}] = append(by[sk{r.src, r.tag}], r)
	}
	keys := make([]sk, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].src < keys[j].src || keys[i].src == keys[j].src && keys[i].tag < keys[j].tag
	})
	for _, k := range keys {
		recs := by[k]
		id := fmt.Sprintf("stream %v/%d", k.src, k.tag)
		count := make([]int, n)
		var firsts []int
		for i, r := range recs {
			if r.timeNS < r.sentNS {
				bad = append(bad, fmt.Sprintf("%s seq %d: executed at %d ns, sent at %d ns", id, r.seq, r.timeNS, r.sentNS))
			}
			if r.seq >= n {
				bad = append(bad, fmt.Sprintf("%s: seq %d beyond %d", id, r.seq, n))
				continue
			}
			if count[r.seq] == 0 {
				firsts = append(firsts, r.seq)
			} else {
				dups++
				if r.flags&dlDup == 0 {
					bad = append(bad, fmt.Sprintf("%s: seq %d executed again without the DUP flag", id, r.seq))
				}
			}
			count[r.seq]++
			if r.execs != count[r.seq] {
				bad = append(bad, fmt.Sprintf("%s seq %d: log says execution %d, it is the %d-th", id, r.seq, r.execs, count[r.seq]))
			}
			if int(r.result) != i {
				bad = append(bad, fmt.Sprintf("%s: the %d-th execution returned %d", id, i, r.result))
			}
		}
		for s, c := range count {
			switch {
			case c == 0:
				bad = append(bad, fmt.Sprintf("%s: seq %d never executed", id, s))
			case c > 1 && eod:
				bad = append(bad, fmt.Sprintf("%s: seq %d executed %d times under exactly-once delivery", id, s, c))
			}
		}
		if sync {
			if len(firsts) > 0 && firsts[len(firsts)-1] != n-1 {
				bad = append(bad, fmt.Sprintf("%s: the sync operation ran before data (first executions %v)", id, firsts))
			}
			continue
		}
		for i, s := range firsts {
			if s != i {
				bad = append(bad, fmt.Sprintf("%s: first executions in order %v, want 0..%d", id, firsts, n-1))
				break
			}
		}
	}
	return len(by), dups, bad
}

func checkStreams(t *testing.T, log []dlogRec, n int, sync, eod bool) (streams int, dups int) {
	t.Helper()
	streams, dups, bad := streamViolations(log, n, sync, eod)
	for i, b := range bad {
		if i == 10 {
			t.Errorf("... and %d more", len(bad)-10)
			break
		}
		t.Error(b)
	}
	return streams, dups
}

var fourSources = []node{{0, 1}, {0, 2}, {0, 3}, {1, 1}}
var ordTarget = node{1, 0}

func TestOrderedFastUnderLossAndReordering(t *testing.T) {
	for _, eod := range []bool{true, false} {
		t.Run(fmt.Sprint("eod=", eod), func(t *testing.T) {
			tr := newTestRack(t, rackOpts{seed: 3})
			ctrl := uint32(0)
			if eod {
				ctrl = ogEOD
			}
			c := ordCfg{streams: 12, length: 32, conc: 2, ctrl: ctrl, jitterNS: 400, lossReq: 20000, lossAck: 20000, srcConns: -1}
			ordRun(t, tr, fourSources, ordTarget, c)
			tb := ordTarget.board()
			streams, dups := checkStreams(t, tr.dlog(tb), 32, false, eod)
			if streams != 4*12 {
				t.Errorf("%d streams in the delivery log, want 48", streams)
			}
			inserts, hwm := tr.Read(tb, "ORD_ROB_INSERTS"), tr.Read(tb, "ORD_ROB_HWM")
			if inserts == 0 || hwm == 0 || hwm > resetROB {
				t.Errorf("reorder buffer: %d inserts, high-water mark %d (capacity %d)", inserts, hwm, resetROB)
			}
			if tr.Read(tb, "ORD_DROPPED_REQ") == 0 || tr.Sum("ORD_DROPPED_ACK") == 0 || tr.Sum("ORD_RETX") == 0 || tr.Sum("ORD_TIMEOUTS") == 0 {
				t.Errorf("losses %d/%d, retransmissions %d, timeouts %d: the knobs did nothing",
					tr.Read(tb, "ORD_DROPPED_REQ"), tr.Sum("ORD_DROPPED_ACK"), tr.Sum("ORD_RETX"), tr.Sum("ORD_TIMEOUTS"))
			}
			if eod && tr.Read(tb, "ORD_DUP_SUPPRESSED") == 0 {
				t.Errorf("exactly-once: lost ACKs never led to a replayed result")
			}
			if !eod && dups == 0 {
				t.Errorf("without EOD, lost ACKs never led to a second execution (Fig. 4)")
			}
			if tr.Read(tb, "ORD_CONNS_OPEN") != 0 || tr.Read(tb, "ORD_ROB_OCCUPANCY") != 0 {
				t.Errorf("connections %d and ROB entries %d left after every FIN", tr.Read(tb, "ORD_CONNS_OPEN"), tr.Read(tb, "ORD_ROB_OCCUPANCY"))
			}
			// A lost FIN-ACK makes the source send its FIN again.
			if f := tr.Read(tb, "ORD_FINS"); f < 48 || f > 48+uint32(tr.Sum("ORD_DROPPED_ACK")) {
				t.Errorf("%d FINs at the target for 48 streams and %d lost answers", f, tr.Sum("ORD_DROPPED_ACK"))
			}
		})
	}
}

func TestSynchronizedTransfers(t *testing.T) {
	tr := newTestRack(t, rackOpts{seed: 4})
	c := ordCfg{streams: 10, length: 16, conc: 2, ctrl: ogSync | ogEOD, jitterNS: 500, lossReq: 10000, lossAck: 10000, srcConns: -1}
	ordRun(t, tr, fourSources, ordTarget, c)
	tb := ordTarget.board()
	log := tr.dlog(tb)
	checkStreams(t, log, 16, true, true)
	held := 0
	for _, r := range log {
		if r.flags&dlSyncOp != 0 && r.flags&dlFromROB != 0 {
			held++
		}
	}
	if held == 0 {
		t.Errorf("no sync operation ever waited in the reorder buffer for its data")
	}
}

// The synchronization operation is non-idempotent, so it always travels
// with EOD whatever OG_CTRL.EOD says (SC'18 §III-E: "Since the
// synchronization operation is a non-idempotent operation, the EOD flag is
// set"): under ACK loss its retransmitted copies are answered from the
// replay buffer, never executed again. Data REQs without EOD may be.
func TestSyncOperationExactlyOnceWithoutEOD(t *testing.T) {
	tr := newTestRack(t, rackOpts{seed: 12})
	c := ordCfg{streams: 8, length: 10, conc: 2, ctrl: ogSync, jitterNS: 200, lossReq: 20000, lossAck: 150000, dropEvery: 7, srcConns: -1}
	ordRun(t, tr, fourSources, ordTarget, c)
	log := tr.dlog(ordTarget.board())
	ops := map[string]int{}
	for _, r := range log {
		if r.flags&dlSyncOp == 0 {
			continue
		}
		if r.seq != 9 {
			t.Errorf("stream %v/%d: SEQ %d carries the sync operation, want the last, 9", r.src, r.tag, r.seq)
		}
		if r.flags&dlEOD == 0 {
			t.Errorf("stream %v/%d: sync operation executed without EOD (flags %#x)", r.src, r.tag, r.flags)
		}
		ops[fmt.Sprintf("%v/%d", r.src, r.tag)]++
	}
	if len(ops) != 4*8 {
		t.Errorf("%d sync operations executed, want one per stream, 32", len(ops))
	}
	for k, n := range ops {
		if n != 1 {
			t.Errorf("stream %s: sync operation executed %d times, a non-idempotent operation must run exactly once", k, n)
		}
	}
	if tr.Sum("ORD_DROPPED_ACK") == 0 || tr.Read(ordTarget.board(), "ORD_DUP_SUPPRESSED") == 0 {
		t.Errorf("no ACK lost (%d) or no duplicate answered from the replay buffer (%d): the test did not retransmit a sync operation",
			tr.Sum("ORD_DROPPED_ACK"), tr.Read(ordTarget.board(), "ORD_DUP_SUPPRESSED"))
	}
}

// Slow mode (source-side ordering, §III-D1): one REQ outstanding, so the
// reorder buffer is never used and a stream takes about a round trip per
// REQ, far longer than fast mode (§IV-A, Fig. 8b).
func TestSlowModeSerializes(t *testing.T) {
	lat := map[bool]float64{}
	for _, slow := range []bool{false, true} {
		tr := newTestRack(t, rackOpts{seed: 5})
		ctrl := uint32(0)
		if slow {
			ctrl = ogSlow
		}
		src := []node{{0, 1}}
		ordRun(t, tr, src, ordTarget, ordCfg{streams: 4, length: 20, ctrl: ctrl, srcConns: -1})
		tb := ordTarget.board()
		checkStreams(t, tr.dlog(tb), 20, false, false)
		if slow && tr.Read(tb, "ORD_ROB_INSERTS") != 0 {
			t.Errorf("slow mode used the reorder buffer")
		}
		s := tr.samples(src[0].board(), latOrd)
		if len(s) != 4 {
			t.Fatalf("%d stream samples", len(s))
		}
		var sum float64
		for _, v := range s {
			sum += float64(v)
		}
		lat[slow] = sum / 4
		if slow && tr.Read(src[0].board(), "ORD_SLOW_REQS_SENT") != 80 {
			t.Errorf("ORD_SLOW_REQS_SENT = %d, want 80", tr.Read(src[0].board(), "ORD_SLOW_REQS_SENT"))
		}
	}
	t.Logf("stream of 20: fast %.0f ns, slow %.0f ns", lat[false], lat[true])
	if lat[true] < 5*lat[false] {
		t.Errorf("slow mode %.0f ns is not much slower than fast mode %.0f ns", lat[true], lat[false])
	}
}

// With two receiver connections (§IV-D) and more concurrent streams than
// that, REQs find no connection, are NACKed, and their streams fall back to
// slow mode: still delivered in order, exactly once.
func TestFallBackWithTwoReceiverConnections(t *testing.T) {
	tr := newTestRack(t, rackOpts{seed: 6})
	c := ordCfg{streams: 8, length: 32, conc: 2, ctrl: ogEOD, tgtConns: 2, srcConns: -1}
	ordRun(t, tr, fourSources, ordTarget, c)
	tb := ordTarget.board()
	checkStreams(t, tr.dlog(tb), 32, false, true)
	if tr.Read(tb, "ORD_NACK_NOCONN") == 0 || tr.Sum("ORD_FALLBACKS") == 0 || tr.Sum("ORD_SLOW_REQS_SENT") == 0 {
		t.Errorf("NACKs %d, fall-backs %d, slow REQs %d: want all > 0", tr.Read(tb, "ORD_NACK_NOCONN"), tr.Sum("ORD_FALLBACKS"), tr.Sum("ORD_SLOW_REQS_SENT"))
	}
	if h := tr.Read(tb, "ORD_CONN_HWM"); h > 2 {
		t.Errorf("%d receiver connections open at once, the limit is 2", h)
	}
	if h := tr.Read(tb, "ORD_ROB_HWM"); h > resetROB {
		t.Errorf("reorder buffer high-water mark %d over its %d entries", h, resetROB)
	}
	recs := tr.popRecords(fourSources[0].board(), "OREC_COUNT", "OREC_DATA", orecWords)
	fell := 0
	for _, r := range recs {
		if r[1]&1 != 0 {
			fell++
		}
		if r[2] > r[3] || r[3] > r[4] {
			t.Errorf("stream record times start %d, acked %d, closed %d", r[2], r[3], r[4])
		}
	}
	if len(recs) != 8 {
		t.Errorf("%d stream records, want 8", len(recs))
	}
	t.Logf("%v: %d of %d streams fell back", fourSources[0], fell, len(recs))
}

// No source connection free: every stream runs in slow mode from its start.
func TestNoSourceConnections(t *testing.T) {
	tr := newTestRack(t, rackOpts{seed: 7})
	ordRun(t, tr, fourSources[:2], ordTarget, ordCfg{streams: 3, length: 8, ctrl: ogEOD, srcConns: 0})
	checkStreams(t, tr.dlog(ordTarget.board()), 8, false, true)
	if got := tr.Sum("ORD_NO_CID"); got != 6 {
		t.Errorf("ORD_NO_CID = %d, want 6", got)
	}
	if tr.Sum("ORD_REQS_SENT") != 0 {
		t.Errorf("fast-mode REQs sent without a connection")
	}
}

// Every n-th REQ dropped (a deterministic loss pattern) is recovered by the
// timeout; synchronized transfers without EOD still hold the sync back.
func TestDropEveryRecovered(t *testing.T) {
	tr := newTestRack(t, rackOpts{seed: 8})
	ordRun(t, tr, fourSources[:2], ordTarget, ordCfg{streams: 4, length: 24, conc: 1, ctrl: ogSync, dropEvery: 7, srcConns: -1})
	checkStreams(t, tr.dlog(ordTarget.board()), 24, true, false)
	if d := tr.Read(ordTarget.board(), "ORD_DROPPED_REQ"); d == 0 {
		t.Errorf("no REQ dropped")
	}
}

// The reorder-buffer fault: REQs run as they arrive, out of sequence, and
// sync operations before their data; the same reference check that passes
// above fails here.
func TestFaultROBEarlyRelease(t *testing.T) {
	for _, sync := range []bool{false, true} {
		tr := newTestRack(t, rackOpts{seed: 3, faults: []labconfig.Fault{{Name: FaultROBEarly, Board: ordTarget.board()}}})
		ctrl := uint32(ogEOD)
		if sync {
			ctrl |= ogSync
		}
		ordRun(t, tr, fourSources, ordTarget, ordCfg{streams: 6, length: 32, conc: 2, ctrl: ctrl, jitterNS: 400, srcConns: -1})
		_, _, bad := streamViolations(tr.dlog(ordTarget.board()), 32, sync, true)
		if len(bad) == 0 {
			t.Errorf("sync=%v: tin-rob-early-release left the delivery log correct", sync)
		}
	}
}

// Random configurations of the ordering engine (modes, exactly-once, loss
// and reordering knobs, scarce connections and reorder-buffer entries):
// every stream completes and the delivery log meets the reference
// semantics; the reorder buffer never exceeds its capacity.
var propRuns = 24

func TestOrderingProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(99, 1))
	for i := 0; i < propRuns; i++ {
		c := ordCfg{streams: uint32(1 + rng.IntN(5)), length: uint32(2 + rng.IntN(40)), conc: uint32(1 + rng.IntN(3)),
			jitterNS: uint32(rng.IntN(3) * 300), srcConns: -1}
		if rng.IntN(2) == 0 {
			c.ctrl |= ogSync
		}
		if rng.IntN(2) == 0 {
			c.ctrl |= ogEOD
		}
		if rng.IntN(5) == 0 {
			c.ctrl |= ogSlow
		}
		if rng.IntN(3) == 0 {
			c.lossReq, c.lossAck = uint32(rng.IntN(50000)), uint32(rng.IntN(50000))
		}
		if rng.IntN(4) == 0 {
			c.dropEvery = uint32(3 + rng.IntN(10))
		}
		if rng.IntN(3) == 0 {
			c.tgtConns = uint32(1 + rng.IntN(3))
		}
		if rng.IntN(3) == 0 {
			c.rob = uint32(4 + rng.IntN(20))
		}
		if rng.IntN(4) == 0 {
			c.srcConns = rng.IntN(3)
		}
		t.Run(fmt.Sprintf("%d:%+v", i, c), func(t *testing.T) {
			tr := newTestRack(t, rackOpts{seed: int64(100 + i)})
			ordRun(t, tr, fourSources, ordTarget, c)
			tb := ordTarget.board()
			streams, _ := checkStreams(t, tr.dlog(tb), int(c.length), c.ctrl&ogSync != 0, c.ctrl&ogEOD != 0)
			if streams != 4*int(c.streams) {
				t.Errorf("%d streams logged, want %d", streams, 4*c.streams)
			}
			rob := c.rob
			if rob == 0 {
				rob = resetROB
			}
			if h := tr.Read(tb, "ORD_ROB_HWM"); h > rob {
				t.Errorf("reorder buffer high-water mark %d over %d entries", h, rob)
			}
			if c.tgtConns > 0 {
				if h := tr.Read(tb, "ORD_CONN_HWM"); h > c.tgtConns {
					t.Errorf("%d receiver connections open at once, limit %d", h, c.tgtConns)
				}
			}
		})
	}
}
