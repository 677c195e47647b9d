package exanet

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

// TestKARMAPortAccess: software writes a packet word by word into an
// intra-tile port (§4: "ARM must issue a write for every single word into
// header/data FIFOs") and reads it back at the destination with the
// consumer off.
func TestKARMAPortAccess(t *testing.T) {
	rk := pair(t, rackSpec{})
	rk.w("b", "CONS_CTRL", 0)
	if st := rk.r("a", "PORT_TX_STATUS[2]"); st != 0x00804000 {
		t.Fatalf("PORT_TX_STATUS = %#x at reset", st)
	}
	payload := []uint32{0x03020100, 0x07060504, 0x0b0a0908, 0x0f0e0d0c, 0x00001110}
	// 18 bytes: five words, the last one half used. SRC is garbage on purpose.
	h := [4]uint32{coordWord(1, 0, 0) | 1<<24, 0xdeadbeef, 18 | 0x3<<12 | 1<<16 | 1<<24, 0xcafe0001}
	if err := rk.txPacket("a", 2, h, payload[:4]); err != nil {
		t.Fatal(err)
	}
	// The header is queued but its payload is incomplete: it waits.
	if st := rk.r("a", "PORT_TX_STATUS[2]"); st != (0x7f<<16 | (0x4000 - 4)) {
		t.Errorf("PORT_TX_STATUS = %#x with a header and 4 words queued", st)
	}
	if got := rk.r("b", "PORT_RX_STATUS[1]"); got != 0 {
		t.Errorf("b received something before the payload was complete: %#x", got)
	}
	if err := rk.nodes["a"].Write32(regAddr(t, "PORT_TX_DATA[2]")+0x3fc, payload[4]); err != nil {
		t.Fatal(err)
	}
	if st := rk.r("a", "PORT_TX_STATUS[2]"); st != 0x00804000 {
		t.Errorf("PORT_TX_STATUS = %#x after the packet left", st)
	}
	if st := rk.r("b", "PORT_RX_STATUS[1]"); st != (1<<16 | 5) {
		t.Errorf("PORT_RX_STATUS = %#x, want one header and 5 words", st)
	}
	gh, gp, ok := rk.rxPacket("b", 1)
	if !ok {
		t.Fatal("no packet at b port 1")
	}
	want := [4]uint32{coordWord(1, 0, 0) | 1<<24, coordWord(0, 0, 0) | 2<<24, 18 | 0x3<<12 | 1<<16, 0xcafe0001}
	if gh != want {
		t.Errorf("received header %#x, want %#x (SRC filled by the router, CRC_ERR clear)", gh, want)
	}
	if !reflect.DeepEqual(gp, payload) {
		t.Errorf("received payload %#x, want %#x", gp, payload)
	}
	if st := rk.r("b", "PORT_RX_STATUS[1]"); st != 0 {
		t.Errorf("PORT_RX_STATUS = %#x after reading", st)
	}
	// Empty FIFOs read 0 and pop nothing.
	if v := rk.r("b", "PORT_RX_DATA[1]"); v != 0 {
		t.Errorf("empty PORT_RX_DATA reads %#x", v)
	}
	// A LENGTH outside 1..512 cannot be framed: a route error, nothing sent.
	before := rk.r("a", "ROUTE_ERRORS")
	if err := rk.txPacket("a", 0, [4]uint32{coordWord(1, 0, 0), 0, 0, 1}, nil); err != nil {
		t.Fatal(err)
	}
	if got := rk.r("a", "ROUTE_ERRORS"); got != before+1 {
		t.Errorf("ROUTE_ERRORS = %d after a LENGTH 0 header, want %d", got, before+1)
	}
	// A destination outside the lattice is dropped by the router.
	if err := rk.txPacket("a", 0, [4]uint32{coordWord(5, 0, 0), 0, 4, 2}, []uint32{1}); err != nil {
		t.Fatal(err)
	}
	if got := rk.r("a", "ROUTE_ERRORS"); got != before+2 {
		t.Errorf("ROUTE_ERRORS = %d after a packet outside the lattice, want %d", got, before+2)
	}
	if st := rk.r("a", "PORT_TX_STATUS[0]"); st != 0x00804000 {
		t.Errorf("dropped packet left PORT_TX_STATUS = %#x", st)
	}
}

// TestTXFIFOFull: with the router unable to take packets (the port
// disabled), the TX FIFOs fill to their §3.3 sizes and further pushes are
// refused.
func TestTXFIFOFull(t *testing.T) {
	rk := newRack(t, rackSpec{boards: []string{"a"}})
	rk.w("a", "PORT_ENABLE", 0x306) // intra-tile port 0 off
	n := rk.nodes["a"]
	data := regAddr(t, "PORT_TX_DATA[0]")
	for i := 0; i < intraPayload32; i++ {
		if err := n.Write32(data, uint32(i)); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	if err := n.Write32(data, 0); !errors.Is(err, errFIFOFull) {
		t.Errorf("push into a full payload FIFO: %v", err)
	}
	if st := rk.r("a", "PORT_TX_STATUS[0]"); st != 0x00800000 {
		t.Errorf("PORT_TX_STATUS = %#x, want DATA_FREE 0", st)
	}
	hdr := regAddr(t, "PORT_TX_HDR[0]")
	if err := n.Write32(hdr+8, 1); err != nil { // LENGTH 1, to this node's port 0
		t.Fatal(err)
	}
	for i := 0; i < hdrFIFO; i++ {
		if err := n.Write32(hdr+12, 1); err != nil {
			t.Fatalf("header %d: %v", i, err)
		}
	}
	if err := n.Write32(hdr+12, 1); !errors.Is(err, errFIFOFull) {
		t.Errorf("header into a full FIFO: %v", err)
	}
	// Re-enabled, the port drains: 128 one-byte packets to itself.
	rk.w("a", "PORT_ENABLE", 0x307)
	if got := rk.r("a", "CONS_PACKETS"); got != hdrFIFO {
		t.Errorf("consumed %d packets, want %d", got, hdrFIFO)
	}
}

// TestPingPongEngine: samples, statistics, clear, responder off.
func TestPingPongEngine(t *testing.T) {
	rk := pair(t, rackSpec{})
	rk.w("b", "PP_DEST", 1<<24)
	rk.w("b", "PP_RESPONDER", 1)
	mean, st := rk.pingPong("a", coordWord(1, 0, 0), 1, 64, 50)
	if st != 1 {
		t.Fatalf("PP_STATUS = %#x", st)
	}
	if n := rk.r("a", "PP_SAMPLE_COUNT"); n != 50 {
		t.Fatalf("PP_SAMPLE_COUNT = %d", n)
	}
	min, max := rk.r("a", "PP_RTT_MIN"), rk.r("a", "PP_RTT_MAX")
	var sum uint64
	for i := 0; i < 50; i++ {
		v := rk.r("a", "PP_SAMPLES")
		if v < min || v > max {
			t.Errorf("sample %d = %d outside [%d, %d]", i, v, min, max)
		}
		sum += uint64(v)
	}
	if got := rk.r64("a", "PP_RTT_SUM_LO"); got != sum {
		t.Errorf("PP_RTT_SUM = %d, samples add to %d", got, sum)
	}
	if v := rk.r("a", "PP_SAMPLES"); v != 0 || rk.r("a", "PP_SAMPLE_COUNT") != 0 {
		t.Errorf("drained sample FIFO still pops %d", v)
	}
	// 64 B: 16 payload words more to write and read than 16 B: the ARM's
	// cost grows by (16-4)*(4+20) ARM cycles at each end, 2*288/9.6 = 60 cycles.
	small, _ := rk.pingPong("a", coordWord(1, 0, 0), 1, 16, 50)
	t.Logf("round trip: 16 B %.3f µs, 64 B %.3f µs", small, mean)
	if d := (mean - small) / 0.0064; d < 60 || d > 75 {
		t.Errorf("64 B round trip is %.1f cycles longer than 16 B, want about 60 (ARM) + link serialization", d)
	}
	rk.w("a", "PP_CTRL", 2)
	if rk.r("a", "PP_STATUS") != 0 || rk.r("a", "PP_DONE_ITERS") != 0 || rk.r("a", "PP_RTT_MAX") != 0 {
		t.Error("PP_CTRL.CLEAR left statistics behind")
	}
	rk.w("b", "PP_RESPONDER", 0)
	if _, st := rk.pingPong("a", coordWord(1, 0, 0), 1, 16, 3); st != 4 {
		t.Errorf("no responder: PP_STATUS = %#x, want TIMEOUT", st)
	}
	if _, st := rk.pingPong("a", coordWord(1, 0, 0), 1, 0, 3); st != 4 {
		t.Errorf("PP_PAYLOAD 0: PP_STATUS = %#x, want TIMEOUT (refused)", st)
	}
}

// TestSmallPackets: smaller packets follow the same mechanism. The router
// takes 10 + W cycles a packet of W payload words for one sender (fetch,
// route, arbitration, gate, header, footer, release), the link 7 + 2W
// (Magic/Start, header, footer, separator); across a link the slower of the
// two sets the pace, so below 64 B the routers, not the wire, limit it.
func TestSmallPackets(t *testing.T) {
	for _, size := range []uint32{16, 64, 128, 256} {
		w := float64(datapathWords(size))
		rk := newRack(t, rackSpec{boards: []string{"a"}})
		rk.tg("a", 1, 0, 1, size, 1000, false)
		eff, _, _ := rk.efficiency("a")
		if !within(eff, w/(w+10), 0.01) {
			t.Errorf("router, %d B: %.2f%% of peak, mechanism says %.2f%%", size, 100*eff, 100*w/(w+10))
		}
		two := newRack(t, rackSpec{boards: []string{"a"}})
		two.tg("a", 3, 0, 2, size, 1000, false)
		teff, _, _ := two.efficiency("a")
		// The output is busy W+4 cycles a packet; each input needs W+10.
		tper := math.Max(w+4, (w+10)/2)
		if !within(teff, w/tper, 0.01) {
			t.Errorf("router, two senders, %d B: %.2f%% of peak, mechanism says %.2f%%", size, 100*teff, 100*w/tper)
		}
		lk := pair(t, rackSpec{})
		lk.tg("a", 1, coordWord(1, 0, 0), 0, size, 1000, false)
		leff, _, _ := lk.efficiency("b")
		per := math.Max(2*w+7, w+10)
		if !within(2*leff, 2*w/per, 0.01) {
			t.Errorf("link, %d B: %.2f%% of 10 Gb/s, mechanism says %.2f%%", size, 200*leff, 200*w/per)
		}
	}
}
