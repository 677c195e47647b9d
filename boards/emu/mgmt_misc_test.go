package emu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/drivers/regmap"
	"github.com/labrunner/labrunner/labconfig"
)

// scenario runs a bootstrap over a lossy cable and a TimeSync tree, and
// returns every register of every board (the non-disturbing ones) and the
// emulated time.
func scenario(t *testing.T, seed int64) string {
	r := startMgmtRack(t, mgmtLab{seed: seed, boards: []string{"a", "b", "c"}, links: []string{"a:sfp0-b:sfp0", "b:sfp1-c:sfp0"},
		ppm:    map[string]float64{"a": 12.5, "b": -8, "c": 3},
		offset: map[string]float64{"a": 1200, "b": -300, "c": 50},
		faults: []labconfig.Fault{linkFault(FaultMOSLossy, "a:sfp0", "rate", "0.05")}})
	c := bootstrapChain(t, r)
	c.echo(3, 40)
	a, b, cc := regsOf(t, r, "a"), regsOf(t, r, "b"), regsOf(t, r, "c")
	configureTS(t, []tsNode{{m: a, tx: 1}, {m: b, client: true, rx: 0, tx: 2}, {m: cc, client: true, rx: 0}})
	a.wait(3000)
	var sb strings.Builder
	for _, n := range []string{"a", "b", "c"} {
		bd, _ := r.Board(n)
		vals, err := regmap.New(bd.Bus(), mgmtManifest, n).Dump(tctx())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			fmt.Fprintf(&sb, "%s %s=%#x\n", n, v.Name, v.Value)
		}
	}
	fmt.Fprintf(&sb, "time %v\n", r.MgmtTime())
	return sb.String()
}

func TestMgmtDeterministic(t *testing.T) {
	one, two := scenario(t, 21), scenario(t, 21)
	if one != two {
		a, b := strings.Split(one, "\n"), strings.Split(two, "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("same seed, different runs: %q vs %q", a[i], b[i])
			}
		}
		t.Fatal("same seed, different runs")
	}
	if other := scenario(t, 22); other == one {
		t.Fatal("another seed gave the very same run")
	}
}

func TestMgmtConsoleCommands(t *testing.T) {
	r := startMgmtRack(t, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"}})
	ba, _ := r.Board("a")
	bb, _ := r.Board("b")
	run := func(b *Board, cmd string, want ...string) string {
		t.Helper()
		out := b.ConsoleCommand(cmd)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("%s: %q printed\n%s\nwant %q", b.Name(), cmd, out, w)
			}
		}
		return out
	}
	run(ba, "mgmt wait 3000", "time=3ms")
	run(ba, "mgmt", "fw=up boots=1", "addr=0x0000", "sfp0: mode=firmware up", "sfp1: mode=firmware uncabled")
	run(ba, "mgmt addr 1", "addr=0x0001")
	run(ba, "mgmt addr 0xFFFE", "give an address")
	run(ba, "mgmt route add controller local", "ROUTE[0] 0xfffe -> local")
	run(ba, "mgmt route add 2 sfp0", "ROUTE[1] 0x0002 -> sfp0")
	run(ba, "mgmt route add 2 sfp9", "no port \"sfp9\"")
	run(ba, "mgmt route default sfp0", "default -> sfp0")
	run(ba, "mgmt route", "ROUTE[0] 0xfffe -> local", "ROUTE[1] 0x0002 -> sfp0", "default -> sfp0")
	run(ba, "mgmt route del 2", "ROUTE[1] cleared")
	run(ba, "mgmt relay on", "proxy_ctrl=0x3")
	run(bb, "mgmt addr 2", "addr=0x0002")
	run(bb, "mgmt route default sfp0", "default -> sfp0")
	run(ba, "mgmt route add 2 sfp0", "0x0002 -> sfp0")
	run(ba, "pmos ping 2", "reply from 0x0002 in")
	// both boards' default routes point at each other: a loop, cut by TTL
	run(ba, "pmos ping 9", ": code 2")
	run(ba, "mgmt route default none", "default route cleared")
	run(ba, "pmos ping 9", "error from 0x0001: code 1")
	run(ba, "pmos", "window 4", "sfp0: tx_session=")
	run(ba, "mos send sfp0 48656c6c6f21", "queued 4d4648656c6c6f21 on sfp0")
	run(ba, "mos send sfp0 zz", "give 1 to 6 data bytes")
	run(ba, "mgmt wait 20")
	run(bb, "mos recv sfp0", "4d4648656c6c6f21 ch=1 data=48656c6c6f21")
	run(bb, "mos recv sfp0", "no words")
	run(ba, "mos", "one word per 2.621 us", "sfp0: up tx=")
	run(bb, "tsync lat sfp0", "sfp0: latency 37.", "16 probes")
	run(bb, "tsync lat sfp2", "no echo")
	run(bb, "tsync", "role=off", "sfp0: latency 37.")
	run(ba, "mgmt frob", "usage: mgmt")
	bb.setPower(false)
	if out := bb.ConsoleCommand("mgmt"); out != "" {
		t.Fatalf("a board that is off printed %q", out)
	}
}

// FuzzMgmtMessage hands arbitrary bytes to a board's firmware as a message
// arriving on a port (and through the mailbox): nothing panics, and the
// firmware's queues stay within their bounds.
func FuzzMgmtMessage(f *testing.F) {
	seeds := [][]byte{
		unhex(f, "01 01 ff ff 00 00 00 01 12 34 ab cd 01 04 00 01 06 72 61 63 6b 2d 62"),
		unhex(f, "10 10 ff ff ff fe 01 02 01 00 01 f0 00 00 00 00 00 00 00"),
		unhex(f, "10 10 ff ff ff fe 01 02 02 00 02 f0 00 00 80 80 00 ff fe 01 f0 00 01 00 00 00 00 01"),
		unhex(f, "03 10 ff ff ff fe 00 07 00 00 00 00 00 05"),
		unhex(f, "05 10 ff ff ff fe 00 07 01 00 20 10 ff ff ff fe 00 01 00"),
		unhex(f, "20 10 00 09 ff fe 00 02 68 69"),
		unhex(f, "7f 10 ff fe 00 01 00 02 01 00 20 00 00 09 00 02 00 01"),
	}
	for _, s := range seeds {
		f.Add(s, uint8(0))
	}
	r := startMgmtRack(f, mgmtLab{boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"}})
	bb, _ := r.Board("b")
	mb := bb.mg
	fab := r.mg
	fab.mu.Lock()
	fab.advance(3 * psPerMS)
	mb.addr = 2
	fab.mu.Unlock()
	f.Fuzz(func(t *testing.T, msg []byte, via uint8) {
		if _, err := decodeHeader(msg); err == nil && len(msg) > msgHeaderLen {
			_, _ = decodeDiscover(msg[msgHeaderLen:])
			_, _ = decodeRegReq(msg[msgHeaderLen:], nil)
		}
		fab.mu.Lock()
		defer fab.mu.Unlock()
		if mb.fw != fwUp {
			fab.advance(fab.now + 2*psPerMS)
		}
		if mb.fw != fwUp {
			return
		}
		port := int(via%3) - 1 // -1: the mailbox
		mb.handle(port, append([]byte(nil), msg...))
		fab.advance(fab.now + 200*psPerUS)
		if len(mb.rxQ) > mboxRxMax || mb.pending > fwQueueMax {
			t.Fatalf("mailbox %d, pending %d", len(mb.rxQ), mb.pending)
		}
		for _, p := range mb.ports {
			if p.pmosBacklog() > pmosWindow+pmosQueueMax || len(p.tx.out) > pmosWindow {
				t.Fatalf("port %d backlog %d", p.idx, p.pmosBacklog())
			}
		}
		mb.rxQ = mb.rxQ[:0]
	})
}
