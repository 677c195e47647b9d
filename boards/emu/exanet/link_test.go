package exanet

import (
	"strings"
	"testing"

	"github.com/labrunner/labrunner/boards/emu"
	"github.com/labrunner/labrunner/labconfig"
)

// pair is two boards cabled sfp0-sfp0 on the X axis: a at (0,0,0), b at (1,0,0).
func pair(t *testing.T, spec rackSpec) *rack {
	spec.boards = []string{"a", "b"}
	if spec.links == nil {
		spec.links = []testLink{{a: "a:sfp0", b: "b:sfp0"}}
	}
	rk := newRack(t, spec)
	rk.configure("a", coordWord(0, 0, 0), coordWord(2, 1, 1), orderXYZ, dXp, 0)
	rk.configure("b", coordWord(1, 0, 0), coordWord(2, 1, 1), orderXYZ, dXm, 0)
	return rk
}

// TestCreditThreshold: §3.4: outbound words consume credit and transmission
// is suspended when the available credit reaches the programmable threshold
// (TRED); it resumes when credit returns. Credit never goes negative.
func TestCreditThreshold(t *testing.T) {
	for _, tred := range []uint32{100, 0} {
		rk := pair(t, rackSpec{})
		rk.w("a", "CREDIT_THRESHOLD[0]", tred)
		rk.w("b", "PORT_ENABLE", 0x207) // b's router stops taking from link 0
		// More than the FIFOs on the way hold: intra TX 128 packets, link TX
		// 32, link RX 1024 words.
		st := rk.tg("a", 1, coordWord(1, 0, 0), 0, 512, 400, false)
		if st&4 == 0 {
			t.Fatalf("TRED %d: TG_STATUS = %#x, want STALLED (the link cannot drain)", tred, st)
		}
		if cr := rk.r("a", "CREDITS[0]"); cr != tred {
			t.Errorf("TRED %d: CREDITS = %d when transmission stopped, want exactly the threshold", tred, cr)
		}
		if ls := rk.r("a", "LINK_STATUS[0]"); ls != 3 {
			t.Errorf("TRED %d: LINK_STATUS = %#x, want UP|CREDIT_STALL", tred, ls)
		}
		s1 := rk.r("a", "LINK_STALL_CYCLES[0]")
		s2 := rk.r("a", "LINK_STALL_CYCLES[0]")
		if s1 == 0 || s2 <= s1 {
			t.Errorf("TRED %d: LINK_STALL_CYCLES %d then %d: must be counting", tred, s1, s2)
		}
		rxPay := rk.nodes["b"].links[0].rxPay
		if rxPay != linkPayload-int(tred) {
			t.Errorf("TRED %d: receiver holds %d payload words, want %d", tred, rxPay, linkPayload-int(tred))
		}
		// The receiver drains: credit comes back and the rest flows.
		rk.w("b", "PORT_ENABLE", 0x307)
		sent := rk.r("a", "TG_SENT")
		if got := rk.r("b", "CONS_PACKETS"); got != sent {
			t.Errorf("TRED %d: b consumed %d packets, a generated %d", tred, got, sent)
		}
		if cr, max := rk.r("a", "CREDITS[0]"), rk.r("a", "CREDIT_MAX[0]"); cr != max {
			t.Errorf("TRED %d: CREDITS = %d after the drain, want CREDIT_MAX %d", tred, cr, max)
		}
		if ls := rk.r("a", "LINK_STATUS[0]"); ls != 1 {
			t.Errorf("TRED %d: LINK_STATUS = %#x after the drain, want UP", tred, ls)
		}
	}
}

// TestCreditsNeverNegative sends a long stream of every size while
// checking the transmitter's credit invariants after every run.
func TestCreditsNeverNegative(t *testing.T) {
	rk := pair(t, rackSpec{})
	for _, size := range []uint32{1, 17, 100, 512} {
		rk.tg("a", 7, coordWord(1, 0, 0), 1, size, 300, false)
		l := rk.nodes["a"].links[0]
		if l.credits < 0 || l.credits > linkPayload || l.hdrCredits < 0 || l.hdrCredits > hdrFIFO {
			t.Fatalf("size %d: credits %d, header credits %d out of range", size, l.credits, l.hdrCredits)
		}
		if got := rk.r("b", "CONS_PACKETS"); got != 900 {
			t.Errorf("size %d: b consumed %d packets, want 900", size, got)
		}
		rk.w("b", "CONS_CTRL", 3)
	}
}

// TestCreditLeakFault: the receiver loses one credit every 64 words; the
// 2000-packet link test stalls and the symptoms are visible.
func TestCreditLeakFault(t *testing.T) {
	rk := mesh2x2(t, 1, []labconfig.Fault{{Name: "credit-leak", Link: "b00:sfp0"}}, nil)
	st := rk.tg("b00", 1, coordWord(1, 0, 0), 0, 512, 2000, false)
	got := rk.r("b10", "CONS_PACKETS")
	t.Logf("TG_STATUS %#x, delivered %d of 2000, CREDITS %d", st, got, rk.r("b00", "CREDITS[0]"))
	if st&4 == 0 && got == 2000 {
		t.Errorf("the link test neither stalled nor lost packets (TG_STATUS %#x)", st)
	}
	if cr := rk.r("b00", "CREDITS[0]"); cr > 8 {
		t.Errorf("CREDITS = %d, want drained to the threshold", cr)
	}
	if ls := rk.r("b00", "LINK_STATUS[0]"); ls&2 == 0 {
		t.Errorf("LINK_STATUS = %#x, want CREDIT_STALL", ls)
	}
	s1 := rk.r("b00", "LINK_STALL_CYCLES[0]")
	s2 := rk.r("b00", "LINK_STALL_CYCLES[0]")
	if s2 <= s1 {
		t.Errorf("LINK_STALL_CYCLES %d then %d: must grow", s1, s2)
	}
	// The healthy X link of the other row is unaffected.
	if st := rk.tg("b01", 1, coordWord(1, 1, 0), 0, 512, 2000, false); st != 1 {
		t.Errorf("healthy link: TG_STATUS = %#x", st)
	}
}

// TestLinkDownFault: the cable fails: both ends report the link down and
// traffic over it goes nowhere.
func TestLinkDownFault(t *testing.T) {
	rk := mesh2x2(t, 1, []labconfig.Fault{{Name: "link-down", Link: "b10:sfp0"}}, nil)
	for _, b := range []string{"b00", "b10"} {
		if ls := rk.r(b, "LINK_STATUS[0]"); ls&1 != 0 {
			t.Errorf("%s: LINK_STATUS[0] = %#x, want down", b, ls)
		}
		if ls := rk.r(b, "LINK_STATUS[1]"); ls&1 == 0 {
			t.Errorf("%s: LINK_STATUS[1] = %#x, want up", b, ls)
		}
	}
	if st := rk.tg("b00", 1, coordWord(1, 0, 0), 0, 512, 2000, false); st&4 == 0 {
		t.Errorf("TG_STATUS = %#x, want STALLED", st)
	}
	if got := rk.r("b10", "CONS_PACKETS"); got != 0 {
		t.Errorf("b10 consumed %d packets across a failed cable", got)
	}
	rk.w("b10", "PP_RESPONDER", 1)
	if _, st := rk.pingPong("b00", coordWord(1, 0, 0), 1, 16, 1); st&4 == 0 {
		t.Errorf("PP_STATUS = %#x, want TIMEOUT", st)
	}
}

// TestLinkUpConditions: the channel is up only when both ends run exanet,
// are enabled, and the cable is sound; powering a board off drops it.
func TestLinkUpConditions(t *testing.T) {
	rk := pair(t, rackSpec{})
	up := func() (bool, bool) { return rk.r("a", "LINK_STATUS[0]")&1 != 0, rk.r("b", "LINK_STATUS[0]")&1 != 0 }
	if a, b := up(); !a || !b {
		t.Fatalf("link not up at start: %v %v", a, b)
	}
	rk.w("b", "LINK_CTRL[0]", 0)
	if a, b := up(); a || b {
		t.Errorf("b disabled its link, yet UP = %v %v", a, b)
	}
	rk.w("b", "LINK_CTRL[0]", 1)
	if a, b := up(); !a || !b {
		t.Errorf("re-enabled, UP = %v %v", a, b)
	}
	rk.nodes["b"].Close()
	if a := rk.r("a", "LINK_STATUS[0]"); a&1 != 0 {
		t.Errorf("b unloaded, a still reports UP")
	}
	rk.attach("b")
	rk.configure("b", coordWord(1, 0, 0), coordWord(2, 1, 1), orderXYZ, dXm, 0)
	if a, b := up(); !a || !b {
		t.Errorf("b reprogrammed, UP = %v %v", a, b)
	}
	if st := rk.tg("a", 1, coordWord(1, 0, 0), 0, 256, 50, false); st != 1 || rk.r("b", "CONS_PACKETS") != 50 {
		t.Errorf("after reprogramming: TG_STATUS %#x, delivered %d", st, rk.r("b", "CONS_PACKETS"))
	}
}

// TestLoopback: LOOPBACK turns a link's TX round to its own RX: no cable is
// needed, and the generator's packets come back to the consumer at about
// link speed. The credit returns share the looped wire (a 64-bit block per
// 16 words freed), so a 512-byte packet takes 71 + 2 cycles: 87.7% rather
// than the 90.1% of a one-way test.
func TestLoopback(t *testing.T) {
	rk := newRack(t, rackSpec{boards: []string{"a"}})
	rk.configure("a", 0, coordWord(2, 1, 1), orderXYZ, dXp, 0)
	if ls := rk.r("a", "LINK_STATUS[0]"); ls != 0 {
		t.Fatalf("no cable, LINK_STATUS = %#x", ls)
	}
	rk.w("a", "LINK_CTRL[0]", 3)
	if ls := rk.r("a", "LINK_STATUS[0]"); ls&1 == 0 {
		t.Fatalf("loopback, LINK_STATUS = %#x, want UP", ls)
	}
	if st := rk.tg("a", 1, coordWord(1, 0, 0), 1, 512, 500, false); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	eff, _, _ := rk.efficiency("a")
	if got := rk.r("a", "CONS_PACKETS"); got != 500 {
		t.Errorf("consumed %d of 500", got)
	}
	if mis := rk.r("a", "CONS_MISDELIVERED"); mis != 0 {
		t.Errorf("CONS_MISDELIVERED = %d", mis)
	}
	if tx, rx := rk.r("a", "LINK_TX_PACKETS[0]"), rk.r("a", "LINK_RX_PACKETS[0]"); tx != 500 || rx != 500 {
		t.Errorf("LINK_TX/RX_PACKETS = %d/%d", tx, rx)
	}
	if !within(eff*2, 64.0/73, 0.01) { // the link carries 8 bytes a cycle
		t.Errorf("loopback efficiency %.2f%% of 10 Gb/s, want 64/73 = 87.7%%", 200*eff)
	}
}

// TestBitErrors: a noisy cable. Payload errors are caught by the CRC32 and
// counted (clear-on-read) at every link receiver and at the consumer;
// header errors are corrected or the packet dropped; nothing is
// retransmitted (§3.4).
func TestBitErrors(t *testing.T) {
	rk := pair(t, rackSpec{seed: 3, links: []testLink{{a: "a:sfp0", b: "b:sfp0", ber: 2e-5}}})
	if st := rk.tg("a", 1, coordWord(1, 0, 0), 0, 512, 500, false); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	crc := rk.r("b", "LINK_CRC_ERRORS[0]")
	if again := rk.r("b", "LINK_CRC_ERRORS[0]"); again != 0 {
		t.Errorf("LINK_CRC_ERRORS read %d then %d: must clear on read", crc, again)
	}
	fixed := rk.r("b", "LINK_ECC_CORRECTED[0]")
	lost := rk.r("b", "LINK_ECC_UNCORRECTABLE[0]")
	cons, consCRC := rk.r("b", "CONS_PACKETS"), rk.r("b", "CONS_CRC_ERRORS")
	t.Logf("BER 2e-5, 500 x 512 B: %d CRC errors, %d headers corrected, %d dropped; consumer %d packets, %d CRC errors",
		crc, fixed, lost, cons, consCRC)
	// About 500 * 36 * 128 bits * 2e-5 = 46 errors, almost all in payloads.
	if crc < 20 || crc > 80 {
		t.Errorf("LINK_CRC_ERRORS = %d, want about 46", crc)
	}
	if consCRC != crc {
		t.Errorf("consumer counted %d CRC errors, the link %d", consCRC, crc)
	}
	if cons+lost != 500 {
		t.Errorf("consumed %d + dropped %d != 500 sent", cons, lost)
	}
}

// TestHeaderBitFlipFault: single-bit header errors are corrected by the
// ECC; deliveries stay correct.
func TestHeaderBitFlipFault(t *testing.T) {
	rk := mesh2x2(t, 1, []labconfig.Fault{{Name: "header-bit-flip", Link: "b00:sfp0",
		Params: labconfig.Params{"rate": {Values: []string{"0.05"}}}}}, nil)
	if st := rk.tg("b00", 1, coordWord(1, 0, 0), 0, 64, 2000, false); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	fixed := rk.r("b10", "LINK_ECC_CORRECTED[0]")
	t.Logf("rate 0.05, 2000 headers: %d corrected", fixed)
	if fixed < 60 || fixed > 140 {
		t.Errorf("LINK_ECC_CORRECTED = %d, want about 100", fixed)
	}
	if again := rk.r("b10", "LINK_ECC_CORRECTED[0]"); again != 0 {
		t.Errorf("LINK_ECC_CORRECTED must clear on read, reads %d", again)
	}
	for _, reg := range []string{"CONS_CRC_ERRORS", "CONS_HDR_ERRORS", "CONS_MISDELIVERED"} {
		if v := rk.r("b10", reg); v != 0 {
			t.Errorf("%s = %d, want 0: ECC must repair every single-bit error", reg, v)
		}
	}
	if v := rk.r("b10", "LINK_ECC_UNCORRECTABLE[0]"); v != 0 {
		t.Errorf("LINK_ECC_UNCORRECTABLE = %d", v)
	}
	if got := rk.r("b10", "CONS_PACKETS"); got != 2000 {
		t.Errorf("delivered %d of 2000", got)
	}
	// Software sees ECC_CORRECTED in the delivered headers.
	rk.w("b10", "CONS_CTRL", 0)
	rk.tg("b00", 1, coordWord(1, 0, 0), 0, 16, 100, false)
	flagged := 0
	for i := 0; i < 100; i++ {
		h, payload, ok := rk.rxPacket("b10", 0)
		if !ok {
			t.Fatalf("packet %d missing", i)
		}
		if h[2]>>25&1 != 0 {
			flagged++
		}
		if len(payload) != 4 || h[2]&0x3ff != 16 {
			t.Fatalf("packet %d: header %#x, %d payload words", i, h, len(payload))
		}
	}
	if flagged == 0 || flagged > 20 {
		t.Errorf("%d of 100 headers flagged ECC_CORRECTED, want about 5", flagged)
	}
}

// TestBadFaultParams: a fault parameter that is not a number, or out of
// range, fails the programming with the fault's position and what is wrong.
func TestBadFaultParams(t *testing.T) {
	for _, c := range []struct {
		f    labconfig.Fault
		want string
	}{
		{labconfig.Fault{Name: "credit-leak", Link: "a:sfp0", Params: labconfig.Params{"every": {Values: []string{"often"}}}}, `every="often" is not a number`},
		{labconfig.Fault{Name: "credit-leak", Link: "a:sfp0", Params: labconfig.Params{"every": {Values: []string{"0"}}}}, "every=0: want a whole number from 1"},
		{labconfig.Fault{Name: "header-bit-flip", Link: "b:sfp0", Params: labconfig.Params{"rate": {Values: []string{"2"}}}}, "rate=2: want a number from 0 to 1"},
		{labconfig.Fault{Name: "arbiter-starve", Board: "a", Params: labconfig.Params{"port": {Values: []string{"7"}}}}, "port=7: want a whole number from 0 to 4"},
	} {
		lab := &labconfig.Lab{Name: "bad", Seed: 1,
			Boards: []labconfig.Board{{Name: "a", Kind: "tebf0808", Emulated: &labconfig.Emulated{}}, {Name: "b", Kind: "tebf0808", Emulated: &labconfig.Emulated{}}},
			Links:  []labconfig.Link{{A: labconfig.Endpoint{Board: "a", Port: "sfp0"}, B: labconfig.Endpoint{Board: "b", Port: "sfp0"}}},
			Faults: []labconfig.Fault{c.f},
		}
		r, err := emu.Start(lab, emu.Options{NoPTY: true})
		if err != nil {
			// emu.CheckFault refused it before anything started.
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.f.Name) {
				t.Errorf("fault %s %v: start err = %v, want it to name the fault and say %q", c.f.Name, c.f.Params, err, c.want)
			}
			continue
		}
		b, _ := r.Board("a")
		_, err = newDesign(b, testManifest(t))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fault %s %v: err = %v, want it to say %q", c.f.Name, c.f.Params, err, c.want)
		}
		r.Close()
	}
}
