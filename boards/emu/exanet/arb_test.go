package exanet

import (
	"fmt"
	"testing"

	"github.com/labrunner/labrunner/labconfig"
)

// TestArbitrationRoundRobin: three intra-tile ports sending to one: round
// robin serves them equally (§3.3) and the output runs at the two-sender
// rate.
func TestArbitrationRoundRobin(t *testing.T) {
	rk := newRack(t, rackSpec{boards: []string{"a"}})
	if st := rk.tg("a", 7, 0, 2, 512, 1000, false); st != 1 {
		t.Fatalf("TG_STATUS = %#x", st)
	}
	for i := 0; i < 3; i++ {
		if got := rk.r("a", fmt.Sprintf("CONS_SRC_PACKETS[%d]", i)); got != 1000 {
			t.Errorf("CONS_SRC_PACKETS[%d] = %d, want 1000", i, got)
		}
	}
	if eff, _, _ := rk.efficiency("a"); !within(eff, 32.0/36, 0.01) {
		t.Errorf("three senders: %.2f%% of peak, want the output-bound 88.9%%", 100*eff)
	}
}

func srcPackets(rk *rack, b string) [3]uint32 {
	return [3]uint32{rk.r(b, "CONS_SRC_PACKETS[0]"), rk.r(b, "CONS_SRC_PACKETS[1]"), rk.r(b, "CONS_SRC_PACKETS[2]")}
}

// TestArbitrationFixedPriority: with fixed priority the highest input that
// requests wins; the order can be changed at run time (§3.3).
func TestArbitrationFixedPriority(t *testing.T) {
	rk := newRack(t, rackSpec{boards: []string{"a"}})
	rk.w("a", "ARB_MODE", 1)
	rk.w("a", "ARB_PRIO", 0x43012) // 2, then 1, then 0
	rk.tg("a", 7, 0, 0, 512, 2000, false)
	hi := srcPackets(rk, "a")
	t.Logf("priority 2>1>0: per-source packets %v, TG_STATUS %#x", hi, rk.r("a", "TG_STATUS"))
	if !(hi[0] < hi[1] && hi[0] < hi[2]) {
		t.Errorf("lowest-priority port 0 got %v: not the least service", hi)
	}
	rk.w("a", "CONS_CTRL", 3)
	rk.w("a", "ARB_PRIO", 0x43210) // 0, then 1, then 2
	rk.tg("a", 7, 0, 0, 512, 2000, false)
	lo := srcPackets(rk, "a")
	t.Logf("priority 0>1>2: per-source packets %v", lo)
	if !(lo[2] < lo[0] && lo[2] < lo[1]) {
		t.Errorf("after reprogramming ARB_PRIO, port 2 got %v: not the least service", lo)
	}
}

// TestArbiterStarveFault: the two-sender router test shows unequal
// per-source service.
func TestArbiterStarveFault(t *testing.T) {
	rk := newRack(t, rackSpec{boards: []string{"a"}, faults: []labconfig.Fault{{Name: "arbiter-starve", Board: "a"}}})
	st := rk.tg("a", 3, 0, 2, 512, 2000, false)
	s := srcPackets(rk, "a")
	eff, _, _ := rk.efficiency("a")
	t.Logf("arbiter-starve: TG_STATUS %#x, per-source %v, %.1f%% of peak", st, s, 100*eff)
	if s[1] >= s[0]/2 {
		t.Errorf("per-source service %v: port 1 should be starved", s)
	}
	if st&4 == 0 {
		t.Errorf("TG_STATUS = %#x, want STALLED (port 1 waits more than 65536 cycles)", st)
	}
	if eff > 0.85 {
		t.Errorf("aggregate %.1f%% of peak: the fault should cost the two-sender gain", 100*eff)
	}
	// Fixed priority is not affected by the fault.
	rk.w("a", "CONS_CTRL", 3)
	rk.w("a", "ARB_MODE", 1)
	rk.w("a", "ARB_PRIO", 0x43201) // 1 first
	rk.tg("a", 3, 0, 2, 512, 500, false)
	if s := srcPackets(rk, "a"); s[1] != 500 {
		t.Errorf("fixed priority with port 1 first: per-source %v", s)
	}
}
