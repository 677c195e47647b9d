package uartbridge

// CRC-16/CCITT-FALSE (docs/uart-bridge.md, "CRC"): polynomial 0x1021, initial
// value 0xFFFF, no reflection, no final XOR. Check value of "123456789" is
// 0x29B1. Table-driven because every byte on the line passes through it.

const (
	crcPoly = 0x1021
	crcInit = 0xFFFF
)

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ crcPoly
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC16 returns the CRC-16/CCITT-FALSE of p.
func CRC16(p []byte) uint16 {
	return crcUpdate(crcInit, p)
}

func crcUpdate(c uint16, p []byte) uint16 {
	for _, b := range p {
		c = c<<8 ^ crcTable[byte(c>>8)^b]
	}
	return c
}
