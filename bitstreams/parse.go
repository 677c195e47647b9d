package bitstreams

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"regexp"
	"strings"
)

// Info is what a bitstream file's own bytes say.
type Info struct {
	Format     string // bit, bin, rbf, sof
	Design     string // .bit: the design name in the header
	Part       string // .bit: the part in the header; "" for formats without a header
	Date, Time string // .bit
	PayloadLen int    // bytes of configuration data
	Size       int64  // bytes of the whole file
	SHA256     string // of the whole file, lower-case hex
	// Checksum is Quartus's 32-bit additive checksum of all bytes (.rbf, .sof).
	Checksum uint32
	// .bit only: the rest of field 'a', the header length, and the IDCODE
	// the configuration data checks (0 when it checks none).
	UserID      string
	ToolVersion string
	HeaderLen   int
	IDCODE      uint32
	// SyncOffset is where the sync word starts in the configuration data
	// (.bit, .bin).
	SyncOffset int
	// Swapped: a .bin whose 32-bit words are byte-swapped, as the Zynq
	// UltraScale+ fpga_manager loads it (bootgen -process_bitstream bin,
	// ToBin); false for a .bin in the .bit's own byte order (Vivado's
	// write_bitstream -bin_file), which JTAG loaders such as openFPGALoader
	// load as it is.
	Swapped bool
}

// QuartusChecksum is the checksum Quartus prints for a programming file: the
// sum of all its bytes, modulo 2^32.
func QuartusChecksum(data []byte) uint32 {
	var s uint32
	for _, b := range data {
		s += uint32(b)
	}
	return s
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Parse parses a bitstream file by its name's extension:
//   - .bit: Xilinx header and configuration data (ParseBit);
//   - .bin: raw configuration data, either in the .bit's byte order (what
//     Vivado's write_bitstream -bin_file writes and openFPGALoader loads) or
//     with its 32-bit words byte-swapped (what fpga_manager loads, ToBin's
//     output): the sync word, in one order or the other, must be near the
//     start, and Info.Swapped says which (Check derives the other);
//   - .rbf: Intel raw binary file; it has no header, so Parse only measures
//     it (size, checksum, sha256); Check compares those with the manifest;
//   - .sof: Quartus's own container, whose layout is not public: measured
//     like an .rbf, its identity rests on the catalogue's sha256.
func Parse(name string, data []byte) (*Info, error) {
	info, err := parse(name, data)
	if err != nil {
		if fe, ok := err.(*FileError); ok && fe.File == "" {
			fe.File = name
		}
		return nil, err
	}
	return info, nil
}

func parse(name string, data []byte) (*Info, error) {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(name), "."))
	info := &Info{Format: ext, Size: int64(len(data))}
	switch ext {
	case "bit":
		h, err := ParseBit(data)
		if err != nil {
			return nil, err
		}
		info.Design, info.Part, info.Date, info.Time = h.Design, h.Part, h.Date, h.Time
		info.UserID, info.ToolVersion = h.UserID, h.ToolVersion
		info.HeaderLen, info.PayloadLen, info.SyncOffset, info.IDCODE = h.HeaderLen, h.PayloadLen, h.SyncOffset, h.IDCODE
	case "bin":
		if len(data) == 0 {
			return nil, fileErr(ErrTruncated, fixRecopy, "the file is empty")
		}
		if bytes.HasPrefix(data, bitMagic[:4]) {
			return nil, fileErr(ErrCorrupt, "name it .bit, or convert it with ToBin", "this is a .bit file (it has a .bit header)")
		}
		if len(data)%4 != 0 {
			return nil, fileErr(ErrTruncated, fixRecopy, "%d bytes is not a whole number of 32-bit words", len(data))
		}
		head := data[:min(len(data), SyncWindow)]
		i, j := alignedIndex(head, syncWordSwapped), alignedIndex(head, syncWord)
		switch {
		case i >= 0 && (j < 0 || i < j):
			info.Swapped, info.SyncOffset = true, i
			info.IDCODE = findIDCODE(data[i+4:], binary.LittleEndian)
		case j >= 0:
			info.SyncOffset = j
			info.IDCODE = findIDCODE(data[j+4:], binary.BigEndian)
		default:
			return nil, fileErr(ErrNoSync, fixRebuild, "no sync word (AA 99 55 66, or byte-swapped 66 55 99 AA) at a word boundary in the first %d bytes", len(head))
		}
		info.PayloadLen = len(data)
	case "rbf", "sof":
		if len(data) == 0 {
			return nil, fileErr(ErrTruncated, fixRecopy, "the file is empty")
		}
		if bytes.HasPrefix(data, bitMagic) {
			return nil, fileErr(ErrCorrupt, "an Intel board cannot load a Xilinx bitstream: use the design's ."+ext+" file", "this is a Xilinx .bit file")
		}
		if ext == "rbf" && bytes.HasPrefix(data, []byte(SOFMagic)) {
			return nil, fileErr(ErrCorrupt, "name it .sof: quartus_pgm loads it over JTAG", "this is a .sof file, not a raw binary file")
		}
		info.PayloadLen = len(data)
		info.Checksum = QuartusChecksum(data)
	default:
		shown := "." + ext
		if ext == "" {
			shown = "(none)"
		}
		return nil, fileErr(ErrFormat, "give a .bit, .bin, .rbf or .sof file", "extension %s", shown)
	}
	info.SHA256 = digest(data)
	return info, nil
}

// SOFMagic starts the catalogue's .sof stand-ins (bitstreams/files): the
// real SRAM Object File's layout is not public, so a .sof is measured, not
// parsed, and its identity rests on the catalogue's sha256; the stand-in is
// this magic, the part and design, then the configuration data of the
// design's .rbf.
const SOFMagic = "SOF\x00labrunner-stand-in\x00"

// alignedIndex finds sep at a multiple of 4 in b.
func alignedIndex(b, sep []byte) int {
	for i := 0; i+len(sep) <= len(b); i += 4 {
		if bytes.Equal(b[i:i+len(sep)], sep) {
			return i
		}
	}
	return -1
}

// Intel ordering codes: family and member, transceiver count and grade,
// package (F/H/U/K + ball-grid size), then temperature (C, I, E, A, M) and
// speed grade, then suffixes (N lead-free, ES engineering sample ...):
// 5SGXEA7N2F45C2 is device 5SGXEA7N2, package F45, commercial, speed 2.
var intelRE = regexp.MustCompile(`^(.*?[fhuk]\d{2,3})([ciaem]\d+[a-z]*)?$`)

// A Xilinx speed grade (1, 2, 2L, 1LV, 3) or temperature grade (C, E, I, Q, M).
var xilinxGradeRE = regexp.MustCompile(`^(\d[a-z]*|[a-z])$`)

func vendorOf(part string) string {
	p := strings.ToLower(strings.TrimSpace(part))
	// Intel names start with a digit (5SGX..., 10AX..., 1SG...) or EP/AG
	// (Cyclone IV, Agilex); Xilinx 7-series .bit headers start with a 7.
	if p != "" && (p[0] >= '0' && p[0] <= '9' && p[0] != '7' || strings.HasPrefix(p, "ep") || strings.HasPrefix(p, "ag")) {
		return "intel"
	}
	return "xilinx"
}

// partKey reduces a part name to its device and package, and says whether it
// could tell where they end (Xilinx names without dashes run the package's
// pin count into the speed grade).
func partKey(part string) (key string, exact bool) {
	p := strings.ToLower(strings.TrimSpace(part))
	if vendorOf(p) == "intel" {
		flat := strings.ReplaceAll(p, "-", "")
		if m := intelRE.FindStringSubmatch(flat); m != nil {
			return m[1], true
		}
		return flat, true
	}
	// Vivado writes 7-series parts in .bit headers without the "xc".
	p = strings.TrimPrefix(p, "xc")
	if !strings.Contains(p, "-") {
		return p, false
	}
	toks := strings.Split(p, "-")
	for len(toks) > 1 && xilinxGradeRE.MatchString(toks[len(toks)-1]) {
		toks = toks[:len(toks)-1]
	}
	return strings.Join(toks, ""), true
}

// SamePart reports whether two part names denote the same device and
// package: case is ignored, and so are dashes (Vivado writes
// "xczu9eg-ffvc900-1-e", ISE-era headers "7z020clg484").
//
// Speed and temperature grades may differ, on purpose: they are screening
// bins of the same silicon. The configuration frames and the IDCODE the
// device checks depend only on the die, and the I/O assignment only on the
// package, so a bitstream built for -2-e configures a -1-i of the same
// device and package (whether it then meets timing is a design question the
// tests answer, not a reason to refuse the file). A different package wires
// the pins differently and a different device has other frames: those must
// be refused.
func SamePart(a, b string) bool {
	ka, ea := partKey(a)
	kb, eb := partKey(b)
	if ka == "" || kb == "" {
		return false
	}
	if ka == kb {
		return true
	}
	if ea && eb {
		return false
	}
	// A name without dashes is the device-package key followed, perhaps, by
	// the speed and temperature grades run together ("1e", "2lv").
	short, long := ka, kb
	if len(short) > len(long) {
		short, long = long, short
	}
	rest, ok := strings.CutPrefix(long, short)
	return ok && flatGradesRE.MatchString(rest)
}

var flatGradesRE = regexp.MustCompile(`^\d[a-z]*$`)
