package ordering

import (
	"strings"
	"testing"
)

// decodeRun turns fuzz bytes into a run: resources, up to four streams and
// an adversarial schedule of deliveries, losses and timeouts.
func decodeRun(data []byte) (Config, []Stream, []Action) {
	at := 0
	next := func() int {
		if at >= len(data) {
			return 0
		}
		at++
		return int(data[at-1])
	}
	cfg := Config{
		Target:      TargetConfig{Conns: next() % 4, ROB: next() % 9},
		SourceConns: next() % 3,
		Window:      next() % 5,
	}
	ns := 1 + next()%4
	var sts []Stream
	for i := 0; i < ns; i++ {
		b := next()
		st := Stream{Src: b % 3, Mode: Mode(b / 3 % 4), N: 1 + next()%8, EOD: b&0x40 != 0}
		if st.Mode == Unordered {
			st.EOD = false
		}
		sts = append(sts, st)
	}
	var steps []Action
	for at < len(data) && len(steps) < 400 {
		b := next()
		steps = append(steps, Action{Op: Op(b % 3), Index: next()})
	}
	return cfg, sts, steps
}

// FuzzRun: whatever the arrival order, losses and duplicates, the reference
// completes every stream with a log that keeps each mode's guarantees, and
// never exceeds its buffers or connections.
func FuzzRun(f *testing.F) {
	f.Add([]byte{2, 4, 0, 0, 3, 7, 6, 2, 9, 3, 1, 0, 2, 5, 1, 1})
	f.Add([]byte{1, 2, 1, 2, 4, 6, 5, 7, 5, 8, 3, 7, 9, 5, 1, 1, 1, 0, 2, 0, 0, 3})
	f.Add([]byte{0, 0, 0, 0, 1, 0x40 | 6, 7})
	f.Add([]byte{2, 1, 0, 1, 3, 9, 7, 10, 7, 11, 7, 1, 1, 1, 1, 1, 1, 2, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, sts, steps := decodeRun(data)
		r, err := Run(cfg, sts, &Schedule{Steps: steps})
		if err != nil {
			t.Fatalf("Run(%+v, %+v): %v", cfg, sts, err)
		}
		checkResult(t, cfg, sts, r)
	})
}

func checkResult(t *testing.T, cfg Config, sts []Stream, r Result) {
	t.Helper()
	desc := func() string { return strings.TrimSpace(LogText(r.Execs, true)) }
	if r.Stalled != "" {
		t.Fatalf("%+v %+v: stalled: %s (log %s)", cfg, sts, r.Stalled, desc())
	}
	if len(r.Anomalies) > 0 {
		t.Fatalf("%+v %+v: anomalies %v (log %s)", cfg, sts, r.Anomalies, desc())
	}
	complete := make([]bool, len(sts))
	for i, s := range r.Streams {
		if !s.Complete {
			t.Fatalf("%+v %+v: stream %d incomplete", cfg, sts, i)
		}
		complete[i] = true
	}
	if bad := CheckLog(sts, r.Execs, complete); len(bad) > 0 {
		t.Fatalf("%+v %+v: log %s violates %v", cfg, sts, desc(), bad)
	}
	if cfg.Target.ROB > 0 && r.MaxROB > cfg.Target.ROB {
		t.Fatalf("%+v: reorder buffer reached %d", cfg, r.MaxROB)
	}
	if cfg.Target.Conns > 0 && r.MaxConns > cfg.Target.Conns {
		t.Fatalf("%+v: %d connections open", cfg, r.MaxConns)
	}
}

// FuzzParseLog: an accepted log renders back to the same entries.
func FuzzParseLog(f *testing.F) {
	for _, s := range []string{"1,2,2,3", "0.1,1.1,0.2", "", " 3 , 1 ", "0", "01", "1,,2", "1.2.3", "-1", "+1", "999999999999", "a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLog(s)
		if err != nil {
			return
		}
		for _, multi := range []bool{true, false} {
			if !multi {
				for _, e := range l {
					if e.Stream != 0 {
						return
					}
				}
			}
			back, err := ParseLog(LogText(l, multi))
			if err != nil || len(back) != len(l) {
				t.Fatalf("ParseLog(%q) = %v; rendered %q reparses to %v, %v", s, l, LogText(l, multi), back, err)
			}
			for i := range l {
				if back[i] != l[i] || l[i].Seq < 0 || l[i].Stream < 0 {
					t.Fatalf("ParseLog(%q): entry %d %v != %v", s, i, l[i], back[i])
				}
			}
		}
	})
}

// FuzzParsePlan: Predict's parameter parser, custom case included, never
// panics, and a case it accepts plays to a clean end.
func FuzzParsePlan(f *testing.F) {
	f.Add("fast", "5", "3,1,2", "2", "4", "false", "auto", "0", "2")
	f.Add("sync", "4", "1,3,4,2", "", "", "true", "1", "2", "0")
	f.Add("slow", "2", "", "", "2", "false", "0", "0", "1")
	f.Add("", "5", "1", "", "", "false", "auto", "0", "2")
	f.Add("fast", "256", "256,1", "128", "", "true", "3", "1", "1")
	f.Fuzz(func(t *testing.T, mode, n, arrivals, lost, lostACKs, eod, rob, window, conns string) {
		set := map[string]string{"lengths": "", "cases": "", "n": n, "eod": eod, "rob": rob, "window": window, "conns": conns}
		for k, v := range map[string]string{"mode": mode, "arrivals": arrivals, "lost": lost, "lost_acks": lostACKs} {
			if v != "" {
				set[k] = v
			}
		}
		pl, err := ParsePlan(set)
		if err != nil {
			return
		}
		for _, c := range pl.Cases {
			r, err := c.Run()
			if err != nil {
				t.Fatalf("accepted case %+v: %v", c, err)
			}
			checkResult(t, c.Cfg, c.Streams, r)
		}
	})
}

// FuzzTarget: any sequence of packets, well-formed or not, leaves the
// reference target within its buffer and connection bounds.
func FuzzTarget(f *testing.F) {
	f.Add([]byte{1, 2, 0, 0, 2, 1, 3, 0, 1, 0})
	f.Add([]byte{0, 0, 0, 3, 0, 0, 0, 0, 1, 1, 2, 2, 4, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		cfg := TargetConfig{Conns: int(data[0] % 4), ROB: int(data[1] % 5)}
		tg := NewTarget(cfg)
		for i := 2; i+3 < len(data); i += 4 {
			b := data[i]
			p := Packet{Kind: Kind(b % 5), Src: int(b>>3) % 3, CID: int(data[i+1]%4) - 1, Seq: int(data[i+2] % 16),
				Mode: Mode(data[i+3] % 4), SYN: data[i+3]&8 != 0, EOD: data[i+3]&16 != 0, SyncOp: data[i+3]&32 != 0, CNT: int(data[i+2] >> 4)}
			p.Stream = p.Src*8 + p.CID + 1
			tg.Receive(p)
			if cfg.ROB > 0 && tg.Buffered() > cfg.ROB || tg.Buffered() < 0 {
				t.Fatalf("%+v: reorder buffer at %d", cfg, tg.Buffered())
			}
			if cfg.Conns > 0 && tg.Open() > cfg.Conns {
				t.Fatalf("%+v: %d connections open", cfg, tg.Open())
			}
		}
	})
}
