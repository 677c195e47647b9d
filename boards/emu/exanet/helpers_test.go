package exanet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards/emu/emutest"
	"github.com/labrunner/labrunner/labconfig"
)

// testManifest is the catalogue's exanet manifest.
func testManifest(t testing.TB) *bitstreams.Manifest {
	t.Helper()
	m, err := bitstreams.Default().Design(DesignName)
	if err != nil {
		t.Fatalf("exanet manifest: %v", err)
	}
	return m
}

// regAddr resolves "NAME" or "NAME[i]" to its address in the manifest.
func regAddr(t testing.TB, name string) uint32 {
	t.Helper()
	m := testManifest(t)
	base, idx := name, 0
	if i := strings.IndexByte(name, '['); i >= 0 {
		base = name[:i]
		fmt.Sscanf(name[i:], "[%d]", &idx)
	}
	for _, r := range m.Registers {
		if r.Name == base {
			return uint32(r.Offset + uint64(idx)*r.Stride)
		}
	}
	t.Fatalf("no register %s in the exanet manifest", name)
	return 0
}

// rack is a test rack of emulated boards with the exanet design attached
// directly through newDesign, the factory the emulated programmer calls
// (programmed_test.go takes the programmer's path), and driven through the
// design's own Read32 and Write32.
type rack struct {
	*emutest.Rig
	nodes map[string]*node
}

type testLink struct {
	a, b      string // "board:port"
	latencyNS float64
	ber       float64
}

type rackSpec struct {
	seed   int64
	boards []string
	ppm    map[string]float64
	offset map[string]float64 // ns
	links  []testLink
	faults []labconfig.Fault
}

func newRack(t testing.TB, spec rackSpec) *rack {
	t.Helper()
	r := emutest.Rack{Name: "exanet-test", Seed: spec.seed, Faults: spec.faults, Design: DesignName, Unprogrammed: true}
	for _, b := range spec.boards {
		r.Boards = append(r.Boards, emutest.Board{Name: b, Kind: "tebf0808", PPM: spec.ppm[b], OffsetNS: spec.offset[b]})
	}
	for _, l := range spec.links {
		lat := l.latencyNS
		if lat == 0 {
			lat = 5 // 1 m of cable
		}
		r.Cables = append(r.Cables, emutest.Cable{A: l.a, B: l.b, LatencyNS: lat, BER: l.ber})
	}
	rk := &rack{Rig: emutest.Start(t, r), nodes: map[string]*node{}}
	for _, b := range spec.boards {
		rk.attach(b)
	}
	return rk
}

func (rk *rack) attach(name string) *node {
	rk.T.Helper()
	b, ok := rk.Rack.Board(name)
	if !ok {
		rk.T.Fatalf("no board %s", name)
	}
	d, err := newDesign(b, testManifest(rk.T))
	if err != nil {
		rk.T.Fatalf("attach exanet to %s: %v", name, err)
	}
	n := d.(*node)
	rk.nodes[name] = n
	return n
}

func (rk *rack) w(board, reg string, v uint32) {
	rk.T.Helper()
	if err := rk.nodes[board].Write32(regAddr(rk.T, reg), v); err != nil {
		rk.T.Fatalf("%s: write %s = 0x%x: %v", board, reg, v, err)
	}
}

func (rk *rack) r(board, reg string) uint32 {
	rk.T.Helper()
	v, err := rk.nodes[board].Read32(regAddr(rk.T, reg))
	if err != nil {
		rk.T.Fatalf("%s: read %s: %v", board, reg, err)
	}
	return v
}

func (rk *rack) r64(board, lo string) uint64 {
	rk.T.Helper()
	l := rk.r(board, lo)
	h := rk.r(board, strings.Replace(lo, "_LO", "_HI", 1))
	return uint64(h)<<32 | uint64(l)
}

func coordWord(x, y, z int) uint32 { return uint32(x) | uint32(y)<<8 | uint32(z)<<16 }

// configure programs a router the way traffic/exanet.Configure does.
func (rk *rack) configure(board string, coord, lattice uint32, order uint32, l0, l1 uint32) {
	rk.w(board, "COORD", coord)
	rk.w(board, "LATTICE", lattice)
	rk.w(board, "DOR_ORDER", order)
	rk.w(board, "LINK_DIR", l0|l1<<4)
}

const (
	dXp, dXm, dYp, dYm, dZp, dZm = 1, 2, 3, 4, 5, 6
	orderXYZ                     = 0x24 // X, then Y, then Z
	orderZYX                     = 0x06 // Z, then Y, then X
)

// mesh2x2 is the paper's testbed (§3.1): four boards in a 2x2 mesh through
// their two SFP+ cages. b00 is (0,0), b10 (1,0), b01 (0,1), b11 (1,1);
// sfp0 serves X, sfp1 serves Y.
func mesh2x2(t testing.TB, seed int64, faults []labconfig.Fault, ppm map[string]float64) *rack {
	return mesh2x2BER(t, seed, faults, ppm, 0)
}

// mesh2x2BER is mesh2x2 with a bit error rate on the b00-b10 cable.
func mesh2x2BER(t testing.TB, seed int64, faults []labconfig.Fault, ppm map[string]float64, ber float64) *rack {
	return mesh2x2Osc(t, seed, faults, ppm, nil, ber)
}

// mesh2x2Osc is mesh2x2 with oscillator errors and power-on offsets.
func mesh2x2Osc(t testing.TB, seed int64, faults []labconfig.Fault, ppm, offset map[string]float64, ber float64) *rack {
	rk := newRack(t, rackSpec{
		seed:   seed,
		boards: []string{"b00", "b10", "b01", "b11"},
		ppm:    ppm,
		offset: offset,
		links: []testLink{
			{a: "b00:sfp0", b: "b10:sfp0", ber: ber}, {a: "b01:sfp0", b: "b11:sfp0"},
			{a: "b00:sfp1", b: "b01:sfp1"}, {a: "b10:sfp1", b: "b11:sfp1"},
		},
		faults: faults,
	})
	lat := coordWord(2, 2, 1)
	rk.configure("b00", coordWord(0, 0, 0), lat, orderXYZ, dXp, dYp)
	rk.configure("b10", coordWord(1, 0, 0), lat, orderXYZ, dXm, dYp)
	rk.configure("b01", coordWord(0, 1, 0), lat, orderXYZ, dXp, dYm)
	rk.configure("b11", coordWord(1, 1, 0), lat, orderXYZ, dXm, dYm)
	return rk
}

// tg runs the traffic generator of board and returns its status.
func (rk *rack) tg(board string, srcPorts uint32, dest uint32, destPort int, payload, count uint32, trace bool) uint32 {
	rk.T.Helper()
	rk.w(board, "TG_CTRL", 4)
	rk.w(board, "TG_SRC_PORTS", srcPorts)
	rk.w(board, "TG_DEST", dest|uint32(destPort)<<24)
	rk.w(board, "TG_PAYLOAD", payload)
	rk.w(board, "TG_COUNT", count)
	ctrl := uint32(1)
	if trace {
		ctrl |= 2
	}
	rk.w(board, "TG_CTRL", ctrl)
	return rk.r(board, "TG_STATUS")
}

// efficiency reads the Performance Counter of board: payload bytes per
// cycle over a 16-byte-per-cycle peak.
func (rk *rack) efficiency(board string) (eff float64, cycles uint64, bytes uint32) {
	cycles = rk.r64(board, "PC_CYCLES_LO")
	bytes = rk.r(board, "PC_BYTES")
	if cycles == 0 {
		return 0, 0, bytes
	}
	return float64(bytes) / float64(cycles) / 16, cycles, bytes
}

// pingPong runs the ping-pong engine from board to dest and returns the
// mean round trip in µs (initiator cycles at 6.4 ns).
func (rk *rack) pingPong(board string, dest uint32, port int, payload, iters uint32) (meanUS float64, status uint32) {
	rk.T.Helper()
	rk.w(board, "PP_CTRL", 2)
	rk.w(board, "PP_DEST", dest|uint32(port)<<24)
	rk.w(board, "PP_PAYLOAD", payload)
	rk.w(board, "PP_ITER", iters)
	rk.w(board, "PP_CTRL", 1)
	status = rk.r(board, "PP_STATUS")
	n := rk.r(board, "PP_DONE_ITERS")
	if n == 0 {
		return 0, status
	}
	sum := rk.r64(board, "PP_RTT_SUM_LO")
	return float64(sum) / float64(n) * 6.4e-3, status
}

func within(got, want, rel float64) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= rel*want
}

// rxPacket reads the next packet waiting at an intra-tile port the way the
// KARMA software does: status, the four header words (the fourth pops the
// header), then ceil(LENGTH/4) payload words.
func (rk *rack) rxPacket(board string, port int) (h [4]uint32, payload []uint32, ok bool) {
	rk.T.Helper()
	st := rk.r(board, fmt.Sprintf("PORT_RX_STATUS[%d]", port))
	if st>>16 == 0 {
		return h, nil, false
	}
	n := rk.nodes[board]
	base := regAddr(rk.T, fmt.Sprintf("PORT_RX_HDR[%d]", port))
	for i := range h {
		v, err := n.Read32(base + uint32(4*i))
		if err != nil {
			rk.T.Fatalf("%s: read PORT_RX_HDR[%d]+%d: %v", board, port, 4*i, err)
		}
		h[i] = v
	}
	data := regAddr(rk.T, fmt.Sprintf("PORT_RX_DATA[%d]", port))
	for i := 0; i < payloadWords(h[2]&0x3ff); i++ {
		v, err := n.Read32(data + uint32(4*(i%256)))
		if err != nil {
			rk.T.Fatalf("%s: read PORT_RX_DATA[%d]: %v", board, port, err)
		}
		payload = append(payload, v)
	}
	return h, payload, true
}

// txPacket writes a packet into an intra-tile port: payload first, then the
// header, whose fourth word queues it.
func (rk *rack) txPacket(board string, port int, h [4]uint32, payload []uint32) error {
	n := rk.nodes[board]
	data := regAddr(rk.T, fmt.Sprintf("PORT_TX_DATA[%d]", port))
	for i, w := range payload {
		if err := n.Write32(data+uint32(4*(i%256)), w); err != nil {
			return err
		}
	}
	base := regAddr(rk.T, fmt.Sprintf("PORT_TX_HDR[%d]", port))
	for i, w := range h {
		if err := n.Write32(base+uint32(4*i), w); err != nil {
			return err
		}
	}
	return nil
}
