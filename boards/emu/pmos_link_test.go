package emu

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// Tests of the PMOS link state machine, driven inside the engine: board a
// sends payloads on its sfp0, board b's sfp0 is in PACKET mode so that every
// payload lands in b's mailbox, where the test collects them.

type pmosPair struct {
	t    testing.TB
	r    *Rack
	f    *mgmtFabric
	a, b *mgmtBoard
}

func newPMOSPair(t testing.TB, seed int64, faults ...string) *pmosPair {
	t.Helper()
	var fs = mgmtLab{seed: seed, boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"}}
	for i := 0; i+1 < len(faults); i += 2 {
		fs.faults = append(fs.faults, linkFault(faults[i], "a:sfp0", "rate", faults[i+1]))
	}
	return pmosPairOf(t, fs)
}

func pmosPairOf(t testing.TB, fs mgmtLab) *pmosPair {
	t.Helper()
	r := startMgmtRack(t, fs)
	ba, _ := r.Board("a")
	bb, _ := r.Board("b")
	p := &pmosPair{t: t, r: r, f: r.mg, a: ba.mg, b: bb.mg}
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	p.f.advance(p.f.now + 3*psPerMS) // boot
	for _, mb := range []*mgmtBoard{p.a, p.b} {
		if mb.fw != fwUp {
			t.Fatalf("%s: firmware not up", mb.b.Name())
		}
		mb.proxyCtrl = 0 // no DISCOVERs
		mb.armDiscover(false)
	}
	p.b.ports[0].setMode(modePacket)
	p.a.ports[0].setMode(modePacket)
	return p
}

// payload i: its index, then filler, 1..240 bytes.
func pmosPayload(i, n int) []byte {
	p := make([]byte, max(n, 4))
	binary.BigEndian.PutUint32(p, uint32(i))
	for k := 4; k < n; k++ {
		p[k] = byte(i*7 + k)
	}
	if n < 4 {
		return p[4-n:] // the low bytes of the index
	}
	return p
}

// stream sends count payloads of sizes size(i) from a to b and returns how
// long it took; it checks they arrive complete, in order, exactly once.
// check runs after every step of 10 us.
func (p *pmosPair) stream(count int, size func(int) int, check func()) int64 {
	p.t.Helper()
	f := p.f
	f.mu.Lock()
	defer f.mu.Unlock()
	ap := p.a.ports[0]
	start := f.now
	sent, got := 0, 0
	for step := 0; got < count; step++ {
		for sent < count && ap.pmosBacklog() < pmosWindow+pmosQueueMax {
			n := size(sent)
			if err := ap.pmosSend(pmosPayload(sent, n)); err != nil {
				p.t.Fatal(err)
			}
			sent++
		}
		f.advance(f.now + 10*psPerUS)
		for _, m := range p.b.rxQ {
			n := size(got)
			if want := pmosPayload(got, n); !bytes.Equal(m.data, want) {
				p.t.Fatalf("message %d: got %d bytes starting % x, want %d bytes", got, len(m.data), m.data[:min(8, len(m.data))], n)
			}
			got++
		}
		p.b.rxQ = p.b.rxQ[:0]
		if check != nil {
			check()
		}
		if f.now-start > 20_000*psPerMS {
			p.t.Fatalf("after 20 s of emulated time only %d of %d messages arrived (a: retx %d giveups %d)", got, count, ap.pmosRetx, ap.pmosGiveups)
		}
	}
	return f.now - start
}

func TestPMOSRetransmitsUnderLoss(t *testing.T) {
	p := newPMOSPair(t, 11, FaultMOSLossy, "0.03")
	p.stream(300, func(i int) int { return 1 + (i*37)%pmosMaxPayload }, nil)
	ap, bp := p.a.ports[0], p.b.ports[0]
	if ap.pmosRetx == 0 || bp.reasm.dropped == 0 && bp.pmosRxBad == 0 {
		t.Fatalf("a lossy link without retransmissions: retx %d, b dropped %d bad %d", ap.pmosRetx, bp.reasm.dropped, bp.pmosRxBad)
	}
	if ap.pmosGiveups != 0 {
		t.Fatalf("gave up on %d messages at 3%% word loss", ap.pmosGiveups)
	}
	if bp.pmosRxFrames != 300 {
		t.Fatalf("b delivered %d frames", bp.pmosRxFrames)
	}
	t.Logf("300 messages, %d retransmissions, %d RSTs, b dropped %d partial frames", ap.pmosRetx, ap.pmosRsts, bp.reasm.dropped)
}

func TestPMOSBitErrorsAreCaught(t *testing.T) {
	p := pmosPairOf(t, mgmtLab{seed: 5, boards: []string{"a", "b"}, links: []string{"a:sfp0-b:sfp0"}, ber: map[string]float64{"a:sfp0-b:sfp0": 2e-4}})
	p.stream(200, func(i int) int { return 200 }, nil)
	bp := p.b.ports[0]
	if bp.pmosRxBad+bp.mosRxErr+bp.reasm.dropped == 0 {
		t.Fatal("a BER of 2e-4 damaged nothing")
	}
	t.Logf("b refused %d frames (CRC), %d damaged words, dropped %d partial frames; a retransmitted %d", bp.pmosRxBad, bp.mosRxErr, bp.reasm.dropped, p.a.ports[0].pmosRetx)
}

func TestPMOSWindow(t *testing.T) {
	p := newPMOSPair(t, 3, FaultMOSLossy, "0.02")
	ap := p.a.ports[0]
	maxOut, lastRetx := 0, uint32(0)
	p.stream(100, func(int) int { return pmosMaxPayload }, func() {
		maxOut = max(maxOut, len(ap.tx.out))
		if len(ap.tx.out) > pmosWindow {
			t.Fatalf("%d frames outstanding", len(ap.tx.out))
		}
		// go-back-N resends at most a window at a time
		if d := ap.pmosRetx - lastRetx; d > pmosWindow {
			t.Fatalf("%d frames resent in 10 us", d)
		}
		lastRetx = ap.pmosRetx
	})
	if maxOut != pmosWindow {
		t.Fatalf("the window never filled: at most %d outstanding", maxOut)
	}
}

func TestPMOSGivesUpAndRecovers(t *testing.T) {
	p := newPMOSPair(t, 9)
	f := p.f
	ap := p.a.ports[0]
	var session uint8
	bb, _ := p.r.Board("b")
	bb.setPower(false)
	func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		session = ap.tx.session
		for i := range 5 {
			if err := ap.pmosSend(pmosPayload(i, 50)); err != nil {
				t.Fatal(err)
			}
		}
		f.advance(f.now + (pmosRetries+2)*pmosRTOPS + psPerMS)
	}()
	if ap.pmosGiveups != 5 || !ap.tx.gaveUp || ap.tx.session == session || ap.pmosBacklog() != 0 {
		t.Fatalf("giveups %d gaveUp %v session %d->%d backlog %d", ap.pmosGiveups, ap.tx.gaveUp, session, ap.tx.session, ap.pmosBacklog())
	}
	// every timeout resent the whole window (4 of the 5: the fifth waited)
	if ap.pmosRetx != pmosWindow*pmosRetries {
		t.Fatalf("retransmitted %d frames, want %d timeouts x %d", ap.pmosRetx, pmosRetries, pmosWindow)
	}
	bb.setPower(true)
	func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.advance(f.now + 3*psPerMS)
		p.b.proxyCtrl = 0
		p.b.ports[0].setMode(modePacket)
	}()
	p.stream(10, func(int) int { return 30 }, nil)
	if ap.tx.gaveUp {
		t.Fatal("GAVE_UP still set after acknowledgements")
	}
}

// The firmware restarting on one side: frames sent into the reboot are
// retransmitted, the peer's new firmware asks for a reset, and everything
// arrives once. (The reboot is placed when b's firmware and mailbox hold no
// message: what it had acknowledged but not handled, and its mailbox, are
// lost with it, docs/mgmt.md.)
func TestPMOSSurvivesPeerReboot(t *testing.T) {
	p := newPMOSPair(t, 4)
	rebooted := false
	p.stream(60, func(int) int { return 120 }, func() {
		if !rebooted && p.b.ports[0].pmosRxFrames >= 20 && p.b.pending == 0 && len(p.a.ports[0].tx.out) > 0 {
			rebooted = true
			p.b.nsfReboot("test", false)
		}
	})
	if !rebooted || p.a.ports[0].pmosRsts == 0 {
		t.Fatalf("rebooted %v, a's RSTs %d", rebooted, p.a.ports[0].pmosRsts)
	}
}

// BenchmarkPMOSGoodput measures what PMOS delivers over a clean emulated
// link, and over one losing 1% of its MOS words, as a fraction of the MOS
// rate (6 data bytes per mosPeriodPS): payload bytes delivered divided by
// the MOS capacity of the elapsed emulated time.
func BenchmarkPMOSGoodput(b *testing.B) {
	for _, c := range []struct {
		name string
		loss string
	}{{"clean", ""}, {"loss1pct", "0.01"}} {
		for _, size := range []int{64, 240} {
			b.Run(c.name+"/"+itoa(size)+"B", func(b *testing.B) {
				var faults []string
				if c.loss != "" {
					faults = []string{FaultMOSLossy, c.loss}
				}
				p := newPMOSPair(b, 1, faults...)
				var ps int64
				var bytesSent int
				for b.Loop() {
					ps += p.stream(64, func(int) int { return size }, nil)
					bytesSent += 64 * size
				}
				capacity := float64(ps) / mosPeriodPS * mosDataBytes
				b.ReportMetric(float64(bytesSent)/capacity, "goodput/mos")
				b.ReportMetric(float64(bytesSent)/(float64(ps)/psPerUS), "B/us")
			})
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
