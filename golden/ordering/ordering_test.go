package ordering

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func runCase(t *testing.T, name string) (Case, Result) {
	t.Helper()
	for _, c := range PaperCases() {
		if c.Name == name {
			r, err := c.Run()
			if err != nil {
				t.Fatal(err)
			}
			return c, r
		}
	}
	t.Fatalf("no case %s", name)
	return Case{}, Result{}
}

// The paper's sequence diagrams, hand-worked.
func TestPaperCases(t *testing.T) {
	for _, want := range []struct {
		name                      string
		log                       string
		dups, replays, nacks      int
		rob, fellBack, retransmit int
	}{
		{"fig4", "1,2,2", 1, 0, 0, 0, 0, 1},          // REQ 2 resent after its ACK was lost, executed twice
		{"fig5", "1,2,3", 0, 0, 0, 2, 0, 0},          // 2 and 3 wait for 1
		{"fig6", "1,2,3", 0, 1, 0, 0, 0, 1},          // the resent REQ 2 is replayed, not executed
		{"fig7", "1,3,2,4", 0, 0, 0, 1, 0, 0},        // the synchronization REQ 4 waits for REQ 2
		{"robfull", "1,2,3,4,5,6", 0, 0, 3, 2, 0, 3}, // 4, 5, 6 NACKed by a full buffer of 2
		{"fallback", "0.1,0.2,0.3,0.4,1.1,1.2,1.3,1.4,2.1,2.2,2.3,2.4", 0, 0, 4, 0, 1, 4},
	} {
		c, r := runCase(t, want.name)
		s := Summarize(r)
		if got := LogText(r.Execs, len(c.Streams) > 1); got != want.log {
			t.Errorf("%s: log %s, want %s", want.name, got, want.log)
		}
		if s.Duplicates != want.dups || s.Replays != want.replays || s.NACKs != want.nacks || r.MaxROB != want.rob || s.FellBack != want.fellBack || s.Retransmits != want.retransmit {
			t.Errorf("%s: %+v, reorder buffer peak %d; want dups %d replays %d NACKs %d peak %d fall-backs %d retransmits %d",
				want.name, s, r.MaxROB, want.dups, want.replays, want.nacks, want.rob, want.fellBack, want.retransmit)
		}
		if r.Stalled != "" || len(r.Anomalies) > 0 {
			t.Errorf("%s: stalled %q, anomalies %v", want.name, r.Stalled, r.Anomalies)
		}
	}
	_, r := runCase(t, "fallback")
	if r.MaxConns != 2 {
		t.Errorf("fallback: %d receiver connections open at once, want 2", r.MaxConns)
	}
}

// Target, packet by packet: speculative open without SYN, SYN fixing the
// start, duplicates, a full buffer, no connection, FIN.
func TestTargetHandWorked(t *testing.T) {
	tg := NewTarget(TargetConfig{Conns: 1, ROB: 1})
	req := func(stream, src, cid, seq int, mode Mode, syn, eod bool) Packet {
		return Packet{Kind: REQ, Stream: stream, Src: src, CID: cid, Seq: seq, Mode: mode, SYN: syn, EOD: eod}
	}
	kinds := func(ps []Packet) string {
		var s []string
		for _, p := range ps {
			s = append(s, p.Kind.String()+p.Reason.String())
		}
		return strings.Join(s, " ")
	}
	steps := []struct {
		p    Packet
		want string
	}{
		{req(0, 0, 0, 2, Fast, false, true), ""},                  // opens the connection, waits
		{req(0, 0, 0, 1, Fast, false, true), "NACKbuffer-full"},   // buffer of 1 is full
		{req(1, 1, 0, 0, Fast, true, false), "NACKno-connection"}, // the only connection is taken
		{req(2, 1, -1, 0, Slow, false, false), "ACK"},             // slow without connection: straight to memory
		{req(0, 0, 0, 0, Fast, true, true), "ACK"},                // SYN: 1 executes; 2 still waits for... nothing at 1
		{req(0, 0, 0, 1, Fast, false, true), "ACK ACK"},           // 1 executes, the buffered 2 follows
		{req(0, 0, 0, 1, Fast, false, true), "ACK"},               // duplicate: replayed
		{Packet{Kind: FIN, Stream: 0, Src: 0, CID: 0}, "FIN-ACK"}, //
		{Packet{Kind: FIN, Stream: 0, Src: 0, CID: 0}, "FIN-ACK"}, // FIN-ACK lost: answered again
		{req(1, 1, 0, 0, Fast, true, false), "ACK"},               // the connection is free again
	}
	for i, s := range steps {
		if got := kinds(tg.Receive(s.p)); got != s.want {
			t.Fatalf("step %d %s: responses %q, want %q", i+1, s.p, got, s.want)
		}
	}
	if got := LogText(tg.Execs, true); got != "2.1,0.1,0.2,0.3,1.1" {
		t.Errorf("executions %s", got)
	}
	if tg.Replays != 1 || tg.MaxConns != 1 || tg.MaxROB != 1 || len(tg.Anomalies) != 0 {
		t.Errorf("replays %d, conns %d, ROB %d, anomalies %v", tg.Replays, tg.MaxConns, tg.MaxROB, tg.Anomalies)
	}
}

// A synchronization operation is released by distinct data REQs only: the
// "reorder buffer that releases early" fault would release it on the
// duplicate.
func TestSyncNotReleasedByDuplicates(t *testing.T) {
	tg := NewTarget(TargetConfig{})
	d := func(seq int) Packet { return Packet{Kind: REQ, Src: 0, CID: 0, Seq: seq, Mode: Sync} }
	op := Packet{Kind: REQ, Src: 0, CID: 0, Seq: 3, Mode: Sync, SyncOp: true, EOD: true, CNT: 4}
	tg.Receive(op)
	tg.Receive(d(0))
	tg.Receive(d(0))
	tg.Receive(d(2))
	if got := LogText(tg.Execs, false); got != "1,1,3" {
		t.Fatalf("released early or lost data: %s", got)
	}
	if out := tg.Receive(d(1)); len(out) != 2 {
		t.Fatalf("the last data REQ released %d responses, want its ACK and the operation's", len(out))
	}
	if got := LogText(tg.Execs, false); got != "1,1,3,2,4" {
		t.Errorf("log %s", got)
	}
	tg.Receive(op) // a duplicate of the operation: replayed
	if tg.Replays != 1 || len(tg.Execs) != 5 {
		t.Errorf("duplicate operation: replays %d, executions %d", tg.Replays, len(tg.Execs))
	}
}

// CheckLog catches each guarantee's violation.
func TestCheckLogCatches(t *testing.T) {
	ordered := []Stream{{Mode: Fast, N: 3, EOD: true}}
	sync := []Stream{{Mode: Sync, N: 3}}
	for _, c := range []struct {
		streams  []Stream
		log      string
		complete bool
		want     string
	}{
		{ordered, "1,3,2", true, "before REQ 2"},
		{ordered, "1,2,2,3", true, "executed 2 times"},
		{ordered, "1,2", true, "never executed"},
		{sync, "1,3,2", true, "after only 1 of its 2"},
		{sync, "2,1,3,3", true, "executed 2 times"},
		{ordered, "1,4", false, "has no REQ 4"},
		{ordered, "1.1", false, "does not exist"},
	} {
		l, err := ParseLog(c.log)
		if err != nil {
			t.Fatal(err)
		}
		bad := CheckLog(c.streams, l, []bool{c.complete})
		if len(bad) == 0 || !strings.Contains(strings.Join(bad, "; "), c.want) {
			t.Errorf("CheckLog(%v, %s) = %v, want a violation %q", c.streams, c.log, bad, c.want)
		}
	}
	for _, ok := range []struct {
		streams []Stream
		log     string
	}{
		{ordered, "1,2,3"},
		{[]Stream{{Mode: Slow, N: 3}}, "1,2,2,3,3"}, // non-EOD duplicates may execute again
		{sync, "2,1,3"},
		{[]Stream{{Mode: Unordered, N: 3}}, "3,1,2,1"},
	} {
		l, _ := ParseLog(ok.log)
		if bad := CheckLog(ok.streams, l, []bool{true}); len(bad) > 0 {
			t.Errorf("CheckLog(%v, %s) = %v, want none", ok.streams, ok.log, bad)
		}
	}
}

// Properties over many random adversaries: ordered streams deliver in
// issue order, exactly-once streams never execute twice whatever was
// duplicated, every stream completes, resources stay within bounds.
func TestRandomRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	for i := 0; i < runs; i++ {
		data := make([]byte, 8+rng.IntN(300))
		for j := range data {
			data[j] = byte(rng.IntN(256))
		}
		cfg, sts, steps := decodeRun(data)
		r, err := Run(cfg, sts, &Schedule{Steps: steps})
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, cfg, sts, r)
	}
}

// Exactly-once under heavy duplication: every ACK lost once, so every REQ is
// resent and arrives twice.
func TestExactlyOnceUnderDuplication(t *testing.T) {
	for _, mode := range []Mode{Fast, Slow, Sync} {
		n := 8
		all := make([]int, n)
		for i := range all {
			all[i] = i + 1
		}
		c, err := CustomCase(mode, n, true, []int{3, 1, 2, 8, 5, 4, 7, 6}, []int{2, 5}, all, Config{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Run()
		if err != nil {
			t.Fatal(err)
		}
		for seq, k := range r.Streams[0].Execs {
			if k != 1 {
				t.Errorf("%s EOD: REQ %d executed %d times", mode, seq+1, k)
			}
		}
		if r.Replays < n-2 || r.Streams[0].Retransmit < n {
			t.Errorf("%s EOD: %d replays, %d retransmissions: the duplicates did not happen", mode, r.Replays, r.Streams[0].Retransmit)
		}
		if bad := CheckLog(c.Streams, r.Execs, []bool{r.Streams[0].Complete}); len(bad) > 0 {
			t.Errorf("%s EOD: %v", mode, bad)
		}
		// Without EOD the same duplication re-executes.
		c.Streams[0].EOD = false
		r, _ = c.Run()
		if Summarize(r).Duplicates == 0 {
			t.Errorf("%s without EOD: no duplicate executed although every ACK was lost", mode)
		}
	}
}

// Fall-back with two receiver connections (§IV-D): more concurrent fast
// streams than connections; the extra ones fall back, order holds, no more
// than two connections are ever open.
func TestFallbackTwoConnections(t *testing.T) {
	var sts []Stream
	for i := 0; i < 5; i++ {
		sts = append(sts, Stream{Src: i, Mode: Fast, N: 6})
	}
	rng := rand.New(rand.NewPCG(3, 4))
	fell := 0
	for i := 0; i < 200; i++ {
		var steps []Action
		for j := 0; j < 60; j++ {
			steps = append(steps, Action{Op: Deliver, Index: rng.IntN(64)}) // deliveries in random order, no loss
		}
		cfg := Config{Target: TargetConfig{Conns: 2, ROB: 10}}
		r, err := Run(cfg, sts, &Schedule{Steps: steps})
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, cfg, sts, r)
		fell += Summarize(r).FellBack
	}
	if fell == 0 {
		t.Error("five streams on two connections never fell back")
	}
}

// The Fig. 12c limit: a stream with at most w REQs outstanding never holds
// more than w-1 in the reorder buffer.
func TestWindowBoundsReorderBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 300; i++ {
		w := 1 + rng.IntN(6)
		var steps []Action
		for j := 0; j < 200; j++ {
			steps = append(steps, Action{Op: Op(rng.IntN(3)), Index: rng.IntN(64)})
		}
		cfg := Config{Window: w}
		sts := []Stream{{Mode: Fast, N: 20, EOD: rng.IntN(2) == 0}}
		r, err := Run(cfg, sts, &Schedule{Steps: steps})
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, cfg, sts, r)
		if r.MaxROB > w-1 {
			t.Fatalf("window %d: reorder buffer reached %d", w, r.MaxROB)
		}
	}
}

// In order, lossless, unlimited resources: nothing buffered, resent or
// NACKed, and the source-side connection accounting lets a source's streams
// follow each other.
func TestOrderlyRun(t *testing.T) {
	sts := []Stream{{Src: 0, Mode: Fast, N: 5}, {Src: 0, Mode: Sync, N: 4}, {Src: 0, Mode: Slow, N: 3, EOD: true}, {Src: 1, Mode: Unordered, N: 3}}
	r, err := Run(Config{SourceConns: 1}, sts, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, Config{}, sts, r)
	s := Summarize(r)
	if r.MaxROB != 0 || s.NACKs != 0 || s.Retransmits != 0 || s.Duplicates != 0 {
		t.Errorf("orderly run: %+v, ROB peak %d", s, r.MaxROB)
	}
	// One source connection: the fast stream takes it first; the
	// synchronized and the exactly-once slow stream wait for it in turn
	// rather than fall back.
	if s.FellBack != 0 {
		t.Errorf("%d streams fell back", s.FellBack)
	}
	if !slices.Equal(r.Streams[0].Execs, []int{1, 1, 1, 1, 1}) {
		t.Errorf("stream 0 executions %v", r.Streams[0].Execs)
	}
}

func TestRunErrors(t *testing.T) {
	for _, sts := range [][]Stream{
		nil,
		{{Mode: Fast, N: 0}},
		{{Mode: Mode(9), N: 2}},
		{{Mode: Unordered, N: 2, EOD: true}},
		{{Src: -1, Mode: Fast, N: 2}},
	} {
		if _, err := Run(Config{}, sts, nil); err == nil {
			t.Errorf("Run(%v) accepted", sts)
		}
	}
	if _, err := Run(Config{Window: -1}, []Stream{{Mode: Fast, N: 1}}, nil); err == nil {
		t.Error("a negative window was accepted")
	}
	if _, err := CustomCase(Fast, 3, false, []int{4}, nil, nil, Config{}); err == nil {
		t.Error("an arrival of REQ 4 in a 3-REQ stream was accepted")
	}
	if _, err := CustomCase(Fast, 3, false, []int{1, 1}, nil, nil, Config{}); err == nil {
		t.Error("an arrival listed twice was accepted")
	}
}
