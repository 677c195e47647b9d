package tin

import "fmt"

// GNet cell sizes (Aquila §3.1, §3.3, §3.4).
const (
	HeaderBytes  = 8                     // routing header of every cell (§3.1)
	MinCell      = 16                    // smallest cell (§3.1)
	MaxCell      = 160                   // largest cell (§3.1)
	MaxPayload   = MaxCell - HeaderBytes // 152 bytes of packet data per full data cell
	ControlCell  = 16                    // RTS, CTS and CTD: 8 B header + 8 B payload (§3.3)
	ReqCell      = 48                    // 1RMA read request, "3x larger than CTS at 48B" (§3.4)
	Solicitation = 2 * ControlCell       // RTS + CTS of one IP packet (§3.3)
	MaxPacket    = 65535                 // largest IP packet the model cellifies
	DefaultAlign = 8                     // cell size granularity, see CellsAlign
	headerShare  = float64(HeaderBytes) / MaxCell
)

// Cells returns the sizes in bytes, header included and in transmission
// order, of the GNet data cells an IP packet of packetLen bytes becomes
// (Aquila §3.3, Fig. 3), with the default 8-byte cell granularity. It
// returns nil for a length outside 1..MaxPacket.
func Cells(packetLen int) []int {
	c, err := CellsAlign(packetLen, DefaultAlign)
	if err != nil {
		return nil
	}
	return c
}

// CellsAlign cellifies a packet with cell sizes rounded up to a multiple of
// align bytes (1: byte granularity).
//
// The packet is cut into full 160-byte cells (8 B header, 152 B data, the
// "8 byte GNet header for each 160 byte GNet cell" of §6) and one last cell
// holding the rest, at least 16 bytes (§3.1). Data cells carry nothing but
// the routing header and packet data ("data-only cells", §3.3): the CTS has
// already told the source where the packet lands in the egress buffer.
//
// Granularity: the paper does not state it. The model's default is 8 bytes
// because GNet links carry cells in the 64-bit blocks of their 66/64-bit PCS
// (§3.1) and every cell size the paper names (16, 48, 160) is a multiple of
// 8; a design that sizes cells to the byte is align = 1.
func CellsAlign(packetLen, align int) ([]int, error) {
	if packetLen < 1 || packetLen > MaxPacket {
		return nil, fmt.Errorf("tin: packet of %d bytes: want 1..%d", packetLen, MaxPacket)
	}
	if err := checkAlign(align); err != nil {
		return nil, err
	}
	n := (packetLen + MaxPayload - 1) / MaxPayload
	out := make([]int, n)
	for i := 0; i < n-1; i++ {
		out[i] = MaxCell
	}
	out[n-1] = cellSize(packetLen-(n-1)*MaxPayload, align)
	return out, nil
}

func checkAlign(align int) error {
	// An alignment must divide both the smallest and the largest cell, or
	// rounding could push a cell past 160 bytes or off the 16-byte minimum.
	if align < 1 || MinCell%align != 0 || MaxCell%align != 0 {
		return fmt.Errorf("tin: cell granularity %d bytes: want 1, 2, 4, 8 or 16 (a divisor of both 16 and 160)", align)
	}
	return nil
}

// cellSize is the size of a cell carrying payload bytes after the header.
func cellSize(payload, align int) int {
	s := HeaderBytes + payload
	s = (s + align - 1) / align * align
	if s < MinCell {
		s = MinCell
	}
	return s
}

// RespCells returns the 1RMA response cells of a remote read of readBytes,
// one Resp cell per PCIe read completion of completionBytes (Aquila §3.4:
// "each individual PCIe read completion payload as a distinct protocol
// response", Resp cells "sized to handle the most common PCIe completion
// sizes"). The paper does not give the completion size; the caller chooses
// it (64 B is the usual read completion boundary of host root complexes).
func RespCells(readBytes, completionBytes, align int) ([]int, error) {
	if readBytes < 1 || readBytes > 1<<20 {
		return nil, fmt.Errorf("tin: 1RMA read of %d bytes: want 1..%d", readBytes, 1<<20)
	}
	if completionBytes < 1 || completionBytes > MaxPayload {
		return nil, fmt.Errorf("tin: PCIe completion of %d bytes: want 1..%d (one Resp cell carries at most %d bytes)", completionBytes, MaxPayload, MaxPayload)
	}
	if err := checkAlign(align); err != nil {
		return nil, err
	}
	n := (readBytes + completionBytes - 1) / completionBytes
	out := make([]int, n)
	for i := range out {
		out[i] = cellSize(completionBytes, align)
	}
	out[n-1] = cellSize(readBytes-(n-1)*completionBytes, align)
	return out, nil
}

// Sum adds cell sizes: the bytes a packet puts on a link.
func Sum(cells []int) int {
	s := 0
	for _, c := range cells {
		s += c
	}
	return s
}

// HeaderOverhead is the share of a full cell taken by its header: 8/160 =
// 5%, the "approximately 5%" of Aquila §6.
func HeaderOverhead() float64 { return headerShare }

// IPEfficiency is the share of the cell traffic of one IP packet that is
// packet data: packetLen over its data cells plus its RTS and CTS (§3.3).
// The RTS and the data travel one way, the CTS the other; the ratio counts
// all GNet bytes the packet costs the fabric.
func IPEfficiency(packetLen, align int) (float64, error) {
	c, err := CellsAlign(packetLen, align)
	if err != nil {
		return 0, err
	}
	return float64(packetLen) / float64(Sum(c)+Solicitation), nil
}

// IncastReduction is how much smaller an incast of RTS cells is than the
// incast of the packets they announce: packetLen/16, "a factor of 64" for
// the >1 KB average packet of Aquila §3.3.
func IncastReduction(packetLen int) float64 { return float64(packetLen) / ControlCell }
