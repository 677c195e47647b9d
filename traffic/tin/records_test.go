package tin

import (
	"strconv"
	"strings"
	"testing"
)

func TestCRC8CheckValue(t *testing.T) {
	if c := CRC8([]byte("123456789")); c != 0xF4 {
		t.Fatalf("CRC-8/SMBUS of 123456789 = 0x%02x, want 0xF4 (docs/tin.md)", c)
	}
	h := Header{Dst: 0x0441, Src: 0x0021, Len: 160, Type: CellData, VC: 9, Hop: 7, Trace: true}
	h.CRC = HeaderCRC(h.Word())
	if !h.CRCOK() {
		t.Fatal("a header with its own CRC fails the check")
	}
	if back := DecodeHeader(h.Word()); back != h {
		t.Fatalf("header round trip %+v, want %+v", back, h)
	}
	h.VC++
	if h.CRCOK() {
		t.Error("a changed VC kept the CRC good")
	}
}

// traceWords builds the 8 words of a collector record.
func traceWords(h Header, p0 uint64, at Addr, in, out, outVC, kind int, arrive, grant uint32, num uint32, injected bool) []uint32 {
	h.CRC = HeaderCRC(h.Word())
	w := h.Word()
	inj := uint32(0)
	if injected {
		inj = 1
	}
	return []uint32{uint32(w >> 32), uint32(w), uint32(p0 >> 32), uint32(p0), uint32(at)<<16 | uint32(in)<<12 | uint32(out)<<8 | uint32(outVC)<<3 | uint32(kind),
		arrive, grant, num<<8 | inj}
}

func TestDecodeTrace(t *testing.T) {
	h := Header{Dst: 0x0441, Src: 0x0001, Len: 160, Type: CellData, VC: 9, Hop: 8, Trace: true}
	p0 := uint64(5)<<52 | uint64(2)<<45 | 1<<44 | 0xABCD
	r, err := DecodeTrace(traceWords(h, p0, 0x0000, PortIP, 3, 9, RouteMinimal, 100, 116, 7, true))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Dst != 0x0441 || r.In != PortIP || r.Out != 3 || r.OutVC != 9 || r.Kind != RouteMinimal || r.ArriveNS != 100 ||
		r.GrantNS != 116 || r.Number != 7 || !r.Injected || r.Ejected() || !r.Header.CRCOK() {
		t.Errorf("decoded %+v", r)
	}
	if ptr := DecodeDataPtr(Addr(5<<5 | 2)); ptr.Slot != 5 || ptr.Index != 2 {
		t.Errorf("RPTR %+v, want slot 5 index 2", ptr)
	}
	if ptr := DecodeDataPtr(0xFFFF); ptr.Slot != 2047 || ptr.Index != 31 {
		t.Errorf("RPTR 0xFFFF: %+v, want slot 2047 index 31", ptr)
	}
	if _, err := DecodeTrace(make([]uint32, 7)); err == nil {
		t.Error("a 7-word record decoded")
	}
	bad := traceWords(h, p0, 0, 7, 3, 9, 1, 0, 0, 0, false)
	if _, err := DecodeTrace(bad); err == nil || !strings.Contains(err.Error(), "ports") {
		t.Errorf("input port 7 accepted: %v", err)
	}
	rt := DecodeRespTag(uint64(0x1234)<<48 | uint64(5)<<33 | 1<<32)
	if rt.Tag != 0x1234 || rt.Index != 5 || !rt.Last {
		t.Errorf("resp tag %+v", rt)
	}
}

func TestDecodeLogs(t *testing.T) {
	e, err := DecodeExecution([]uint32{0x0444<<16 | 7, 3 | 2<<16 | uint32(DLogEOD|DLogDup)<<24, 1000, 1200, 5<<24 | 9})
	if err != nil || e.Src != 0x0444 || e.Tag != 7 || e.Seq != 3 || e.Execs != 2 || e.Flags != DLogEOD|DLogDup || e.SentNS != 1000 || e.AtNS != 1200 || e.CID != 5 || e.Result != 9 {
		t.Errorf("execution %+v (%v)", e, err)
	}
	if _, err := DecodeExecution([]uint32{1, 3, 0, 0, 0}); err == nil {
		t.Error("execution number 0 accepted")
	}
	s, err := DecodeStreamRecord([]uint32{0x0460<<16 | 4, 20<<16 | ORecFellBack | ORecEOD, 10, 20, 30, 2<<16 | 1})
	if err != nil || s.Dst != 0x0460 || s.Tag != 4 || s.Len != 20 || s.Flags != ORecFellBack|ORecEOD || s.ClosedNS != 30 || s.Retx != 2 || s.NACKs != 1 {
		t.Errorf("stream record %+v (%v)", s, err)
	}
	if _, err := DecodeStreamRecord([]uint32{1, 0, 0, 0, 0, 0}); err == nil {
		t.Error("a stream of length 0 accepted")
	}
	d, err := DecodeDelivery([]uint32{0x0021<<16 | 3, 17, 500, 900, 1 | IPKindBurst<<1 | 4<<4 | 2<<8})
	if err != nil || d.Src != 0x0021 || d.Flow != 3 || d.Seq != 17 || !d.ECN || d.Kind != IPKindBurst || d.CoS != 4 || d.Port != 2 {
		t.Errorf("delivery %+v (%v)", d, err)
	}
	if _, err := DecodeDelivery([]uint32{0, 0, 0, 0, 3 << 1}); err == nil {
		t.Error("kind 3 accepted")
	}
}

func TestInversions(t *testing.T) {
	d := func(src Addr, flow uint16, seq uint32) Delivery {
		return Delivery{Src: src, Flow: flow, Seq: seq, Port: 1}
	}
	log := []Delivery{d(1, 0, 1), d(1, 1, 1), d(1, 0, 2), d(1, 0, 4), d(1, 0, 3), d(2, 0, 1), d(1, 1, 2), d(1, 0, 5)}
	inv := Inversions(log)
	if len(inv) != 1 || inv[0].At != 4 || inv[0].Seq != 3 || inv[0].After != 4 {
		t.Fatalf("inversions %+v, want seq 3 after 4 at index 4", inv)
	}
	if !strings.Contains(inv[0].String(), "seq 3 delivered after seq 4") {
		t.Errorf("message %q", inv[0])
	}
	if n := len(Inversions(log[:4])); n != 0 {
		t.Errorf("%d inversions in an ordered log", n)
	}
}

func TestDataCellsOfTheBuild(t *testing.T) {
	tm := Timing{CellMin: 16, CellMax: 160, Header: 8, DataTag: 4, DataPayload: 148}
	for _, c := range []struct {
		n    int
		want string
	}{{1, "16"}, {64, "76"}, {148, "160"}, {149, "160,16"}, {1500, "160,160,160,160,160,160,160,160,160,160,32"}} {
		got := tm.DataCells(c.n)
		s := make([]string, len(got))
		for i, v := range got {
			s[i] = strconv.Itoa(v)
		}
		if strings.Join(s, ",") != c.want {
			t.Errorf("%d bytes: %v, docs/tin.md gives %s", c.n, got, c.want)
		}
	}
	if tm.DataCells(0) != nil {
		t.Error("cells of an empty packet")
	}
}
