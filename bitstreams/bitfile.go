package bitstreams

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Kinds of bitstream trouble, for errors.Is. Every error Parse, ParseBit,
// ToBin and Check return wraps one of them in a *FileError.
var (
	ErrFormat    = errors.New("unsupported bitstream format")
	ErrTruncated = errors.New("truncated bitstream")
	ErrCorrupt   = errors.New("corrupt bitstream")
	ErrNoSync    = errors.New("sync word missing")
	ErrWrongPart = errors.New("bitstream is for another part")
	ErrMismatch  = errors.New("bitstream is not the one the catalogue lists")
)

// FileError says what is wrong with a bitstream file and what to do.
type FileError struct {
	File string // may be empty (ParseBit has no name)
	Kind error  // one of the Err* values above
	Msg  string
	Fix  string
}

func (e *FileError) Error() string {
	s := ""
	if e.File != "" {
		s = e.File + ": "
	}
	s += e.Kind.Error() + ": " + e.Msg
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	return s
}

func (e *FileError) Unwrap() error { return e.Kind }

func fileErr(kind error, fix, format string, args ...any) *FileError {
	return &FileError{Kind: kind, Msg: fmt.Sprintf(format, args...), Fix: fix}
}

const (
	fixRecopy  = "the file is incomplete or damaged: copy it again, or rebuild it"
	fixRebuild = "rebuild the bitstream, or re-run go generate ./bitstreams/... for the emulator's files"
)

// The .bit header (Xilinx): field 0 is a 2-byte length (9) and 9 fixed
// bytes, then the 2-byte length 1 of the key of field 'a'.
var bitMagic = []byte{0x00, 0x09, 0x0F, 0xF0, 0x0F, 0xF0, 0x0F, 0xF0, 0x0F, 0xF0, 0x00, 0x00, 0x01}

// Configuration words (UG570, "Bitstream Composition"; the same for 7 series
// and UltraScale+).
var (
	syncWord        = []byte{0xAA, 0x99, 0x55, 0x66}
	syncWordSwapped = []byte{0x66, 0x55, 0x99, 0xAA}
)

// SyncWindow is how far into the configuration data the sync word must
// appear. Vivado puts it after a few dozen bytes of dummy and bus-width
// detection words; anything much later is not a configuration image.
const SyncWindow = 4096

// Configuration register numbers used when walking type-1 packets.
const (
	regIDCODE = 12
)

// BitHeader is what a Xilinx .bit file's header says.
type BitHeader struct {
	// DesignField is field 'a' as written, e.g.
	// "exanet_top;UserID=0XFFFFFFFF;Version=2022.2".
	DesignField string
	Design      string            // the part of 'a' before the first ';'
	UserID      string            // UserID=... from 'a'
	ToolVersion string            // Version=... from 'a'
	Extra       map[string]string // other key=value pairs of 'a' (COMPRESS=TRUE ...)
	Part        string            // 'b'
	Date        string            // 'c'
	Time        string            // 'd'
	HeaderLen   int               // offset of the configuration data in the file
	PayloadLen  int               // 'e' length
	SyncOffset  int               // offset of the sync word in the configuration data
	// IDCODE is the device IDCODE the configuration data writes before
	// configuring (0 when it writes none); the device refuses the
	// bitstream when it differs from its own.
	IDCODE uint32
	// Payload is the configuration data (it shares the input's memory).
	Payload []byte
}

// ParseBit parses a Xilinx .bit file: header fields 'a' to 'd', then 'e' with
// the configuration data, which must hold the sync word near its start.
func ParseBit(data []byte) (*BitHeader, error) {
	n := min(len(data), len(bitMagic))
	if !bytes.Equal(data[:n], bitMagic[:n]) {
		if n >= 4 && bytes.Equal(data[:4], syncWordSwapped) || looksLikeBin(data) {
			return nil, fileErr(ErrCorrupt, "it looks like a byte-swapped .bin: name it .bin", "no .bit header (the file starts with configuration words)")
		}
		return nil, fileErr(ErrCorrupt, "is this a Xilinx .bit file?", "the header does not start with 00 09 0F F0 0F F0 0F F0 0F F0 00 00 01")
	}
	if len(data) < len(bitMagic) {
		return nil, fileErr(ErrTruncated, fixRecopy, "the file ends inside the header magic (%d bytes)", len(data))
	}
	h := &BitHeader{}
	pos := len(bitMagic)
	seen := map[byte]bool{}
	for {
		if pos >= len(data) {
			return nil, fileErr(ErrTruncated, fixRecopy, "the header ends at byte %d before the configuration data (field 'e')", pos)
		}
		key := data[pos]
		pos++
		switch key {
		case 'a', 'b', 'c', 'd':
			if seen[key] {
				return nil, fileErr(ErrCorrupt, fixRebuild, "header field '%c' appears twice (at byte %d)", key, pos-1)
			}
			seen[key] = true
			if pos+2 > len(data) {
				return nil, fileErr(ErrTruncated, fixRecopy, "the file ends inside the length of header field '%c'", key)
			}
			l := int(binary.BigEndian.Uint16(data[pos:]))
			pos += 2
			if pos+l > len(data) {
				return nil, fileErr(ErrTruncated, fixRecopy, "header field '%c' is %d bytes long but the file ends %d bytes later", key, l, len(data)-pos)
			}
			raw := data[pos : pos+l]
			pos += l
			if l == 0 || raw[l-1] != 0 || bytes.IndexByte(raw[:l-1], 0) >= 0 {
				return nil, fileErr(ErrCorrupt, fixRebuild, "header field '%c' is not a NUL-terminated string", key)
			}
			s := string(raw[:l-1])
			switch key {
			case 'a':
				h.DesignField = s
				h.Design, h.UserID, h.ToolVersion, h.Extra = splitDesignField(s)
			case 'b':
				h.Part = s
			case 'c':
				h.Date = s
			case 'd':
				h.Time = s
			}
		case 'e':
			if !seen['a'] || !seen['b'] {
				return nil, fileErr(ErrCorrupt, fixRebuild, "the header has no design name ('a') or part ('b') before the configuration data")
			}
			if pos+4 > len(data) {
				return nil, fileErr(ErrTruncated, fixRecopy, "the file ends inside the length of the configuration data")
			}
			l := binary.BigEndian.Uint32(data[pos:])
			pos += 4
			rest := len(data) - pos
			if uint64(l) > uint64(rest) {
				return nil, fileErr(ErrTruncated, fixRecopy, "the header announces %d bytes of configuration data but only %d follow", l, rest)
			}
			if int(l) < rest {
				return nil, fileErr(ErrCorrupt, fixRecopy, "%d bytes follow the %d bytes of configuration data the header announces", rest-int(l), l)
			}
			h.HeaderLen = pos
			h.PayloadLen = int(l)
			h.Payload = data[pos : pos+int(l)]
			i := bytes.Index(h.Payload[:min(len(h.Payload), SyncWindow)], syncWord)
			if i < 0 {
				return nil, fileErr(ErrNoSync, fixRebuild, "no sync word AA 99 55 66 in the first %d bytes of the configuration data: the FPGA would ignore it", min(len(h.Payload), SyncWindow))
			}
			h.SyncOffset = i
			h.IDCODE = findIDCODE(h.Payload[i+4:], binary.BigEndian)
			return h, nil
		default:
			return nil, fileErr(ErrCorrupt, fixRebuild, "unknown header field key 0x%02x at byte %d", key, pos-1)
		}
	}
}

// splitDesignField splits Vivado's 'a' field, "top;UserID=0XFFFFFFFF;Version=2022.2".
func splitDesignField(s string) (design, userID, version string, extra map[string]string) {
	parts := strings.Split(s, ";")
	design = parts[0]
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case !ok:
			if extra == nil {
				extra = map[string]string{}
			}
			extra[p] = ""
		case k == "UserID":
			userID = v
		case k == "Version":
			version = v
		default:
			if extra == nil {
				extra = map[string]string{}
			}
			extra[k] = v
		}
	}
	return
}

// findIDCODE walks the type-1 and type-2 packets after the sync word, as the
// configuration logic does, and returns the value written to the IDCODE
// register (0 if none is written before the frame data). Packet header
// (UG570): [31:29] type, [28:27] opcode (2 = write), type 1: [26:13]
// register, [10:0] word count; type 2: [26:0] word count.
func findIDCODE(words []byte, order binary.ByteOrder) uint32 {
	for i, packets := 0, 0; i+4 <= len(words) && packets < 256; packets++ {
		w := order.Uint32(words[i:])
		i += 4
		switch w >> 29 {
		case 1:
			op := (w >> 27) & 3
			reg := (w >> 13) & 0x3FFF
			n := int(w & 0x7FF)
			if op == 2 && reg == regIDCODE && n == 1 && i+4 <= len(words) {
				return order.Uint32(words[i:])
			}
			i += 4 * n
		case 2:
			return 0 // frame data: the IDCODE check is over
		default:
			return 0
		}
	}
	return 0
}

// EncodeBit writes a .bit file: the header fields of h (DesignField, or
// Design with UserID and ToolVersion; Part, Date, Time) and the payload.
func EncodeBit(h BitHeader, payload []byte) ([]byte, error) {
	a := h.DesignField
	if a == "" {
		a = h.Design
		if h.UserID != "" {
			a += ";UserID=" + h.UserID
		}
		if h.ToolVersion != "" {
			a += ";Version=" + h.ToolVersion
		}
	}
	var b bytes.Buffer
	b.Write(bitMagic)
	for _, f := range []struct {
		key byte
		val string
	}{{'a', a}, {'b', h.Part}, {'c', h.Date}, {'d', h.Time}} {
		if strings.IndexByte(f.val, 0) >= 0 || len(f.val)+1 > 0xFFFF {
			return nil, fmt.Errorf("encode .bit: field '%c' is longer than 65534 bytes or holds a NUL", f.key)
		}
		b.WriteByte(f.key)
		_ = binary.Write(&b, binary.BigEndian, uint16(len(f.val)+1))
		b.WriteString(f.val)
		b.WriteByte(0)
	}
	if uint64(len(payload)) > 0xFFFFFFFF {
		return nil, fmt.Errorf("encode .bit: %d bytes of configuration data do not fit the 32-bit length", len(payload))
	}
	b.WriteByte('e')
	_ = binary.Write(&b, binary.BigEndian, uint32(len(payload)))
	b.Write(payload)
	return b.Bytes(), nil
}

// ToBin converts a .bit file into what the Zynq UltraScale+ fpga_manager
// loads: the configuration data without the header, with the bytes of every
// 32-bit word swapped (the PCAP reads little-endian words; the .bit holds
// them big-endian).
func ToBin(bit []byte) ([]byte, error) {
	h, err := ParseBit(bit)
	if err != nil {
		return nil, err
	}
	if h.PayloadLen%4 != 0 {
		return nil, fileErr(ErrCorrupt, fixRebuild, "the configuration data is %d bytes, not a whole number of 32-bit words", h.PayloadLen)
	}
	return SwapWords(h.Payload), nil
}

// SwapWords returns a copy of b with the bytes of each 32-bit word reversed.
// len(b) must be a multiple of 4; a trailing partial word is copied as is.
func SwapWords(b []byte) []byte {
	out := make([]byte, len(b))
	n := len(b) &^ 3
	for i := 0; i < n; i += 4 {
		binary.LittleEndian.PutUint32(out[i:], binary.BigEndian.Uint32(b[i:]))
	}
	copy(out[n:], b[n:])
	return out
}

// looksLikeBin reports whether data starts like byte-swapped configuration
// data (dummy words, then the swapped bus-width or sync words).
func looksLikeBin(data []byte) bool {
	i := bytes.Index(data[:min(len(data), SyncWindow)], syncWordSwapped)
	return i >= 0 && i%4 == 0 && len(data)%4 == 0
}
