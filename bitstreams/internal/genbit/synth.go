package main

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/labrunner/labrunner/bitstreams"
)

// The emulator's bitstream files are small stand-ins for real ones: the same
// header and the same opening of the configuration stream as Vivado writes
// (UG570 "Bitstream Composition": dummy words, bus-width detection, sync,
// type-1 register writes, type-2 frame data, start-up commands), with a few
// KiB of deterministic filler where a real file has megabytes of frames.
// Everything is derived from the manifest, so the same manifest always gives
// the same bytes.

// Fixed header strings: a real build stamps the date; these are fixed so that
// regenerating gives identical files.
const (
	toolVersion = "2022.2"
	userID      = "0XFFFFFFFF"
	buildDate   = "2022/11/23"
	buildTime   = "12:00:00"
)

// frameWords is the size of the frame data block (4 KiB).
const frameWords = 1024

// IDCODEs of the devices (device field, revision nibble 0), written to the
// IDCODE register as Vivado does, so that the device checks it. Parts not
// listed get no IDCODE write.
var idcodes = map[string]uint32{
	"xczu3eg": 0x04710093,
	"xczu9eg": 0x04738093,
}

// Configuration registers and commands (UG570).
const (
	regCRC    = 0
	regFAR    = 1
	regFDRI   = 2
	regCMD    = 4
	regCTL0   = 5
	regMASK   = 6
	regCOR0   = 9
	regIDCODE = 12
	regAXSS   = 13
	regCOR1   = 14
	regWBSTAR = 16

	cmdNull    = 0
	cmdWCFG    = 1
	cmdStart   = 5
	cmdRCRC    = 7
	cmdGRest   = 10
	cmdDesync  = 13
	noop       = 0x20000000
	dummy      = 0xFFFFFFFF
	busWidth1  = 0x000000BB
	busWidth2  = 0x11220044
	syncWord   = 0xAA995566
	type2Write = 0x50000000
)

// type1Write is the header of a type-1 write of n words to register reg.
func type1Write(reg, n uint32) uint32 { return 0x30000000 | reg<<13 | n }

// rng is a small deterministic generator (xorshift64*), so that the filler
// does not depend on math/rand's algorithm across Go releases.
type rng uint64

func (r *rng) next() uint32 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return uint32((x * 2685821657736338717) >> 32)
}

func seedFor(m *bitstreams.Manifest, part, format string) *rng {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s/%s/%s", m.Name, m.Version, strings.ToLower(part), format)
	r := rng(h.Sum64() | 1)
	return &r
}

// nameWords packs a string into big-endian words, NUL-padded.
func nameWords(s string) []uint32 {
	b := []byte(s)
	for len(b)%4 != 0 || len(b) == 0 {
		b = append(b, 0)
	}
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.BigEndian.Uint32(b[4*i:])
	}
	return out
}

// configWords is the configuration stream of an UltraScale+ style bitstream.
func configWords(m *bitstreams.Manifest, part string) []uint32 {
	var w []uint32
	put := func(v ...uint32) { w = append(w, v...) }
	for range 16 {
		put(dummy)
	}
	put(busWidth1, busWidth2, dummy, dummy)
	put(syncWord, noop)
	put(type1Write(regWBSTAR, 1), 0)
	put(type1Write(regCMD, 1), cmdNull)
	put(noop)
	put(type1Write(regCMD, 1), cmdRCRC)
	put(noop, noop)
	put(type1Write(regCOR0, 1), 0x38003FE5)
	put(type1Write(regCOR1, 1), 0)
	device, _, _ := strings.Cut(strings.ToLower(part), "-")
	if id, ok := idcodes[device]; ok {
		put(type1Write(regIDCODE, 1), id)
	}
	put(type1Write(regCMD, 1), cmdNull)
	put(type1Write(regMASK, 1), 0x00000401)
	put(type1Write(regCTL0, 1), 0x00000501)
	// USR_ACCESS (AXSS) carries the design's ID word, as
	// BITSTREAM.CONFIG.USR_ACCESS would.
	put(type1Write(regAXSS, 1), m.ID)
	put(type1Write(regFAR, 1), 0)
	put(type1Write(regCMD, 1), cmdWCFG)
	put(noop)
	// Frame data: the design's ID and version words and its name, then
	// deterministic filler.
	frames := []uint32{m.ID, m.VersionWord}
	frames = append(frames, nameWords(m.Name+" "+m.Version)...)
	r := seedFor(m, part, "bit")
	for len(frames) < frameWords {
		frames = append(frames, r.next())
	}
	put(type1Write(regFDRI, 0), type2Write|uint32(len(frames)))
	put(frames...)
	put(type1Write(regCRC, 1), crcOf(frames))
	put(type1Write(regCMD, 1), cmdGRest)
	put(noop)
	put(type1Write(regCMD, 1), cmdStart)
	put(noop)
	put(type1Write(regCMD, 1), cmdDesync)
	for range 16 {
		put(noop)
	}
	return w
}

// crcOf is the emulator's check word over the frames (a 32-bit FNV-1a; the
// real device's CRC covers register addresses too and is not reproduced).
func crcOf(words []uint32) uint32 {
	h := fnv.New32a()
	var b [4]byte
	for _, x := range words {
		binary.BigEndian.PutUint32(b[:], x)
		h.Write(b[:])
	}
	return h.Sum32()
}

func wordsBytes(w []uint32) []byte {
	out := make([]byte, 4*len(w))
	for i, x := range w {
		binary.BigEndian.PutUint32(out[4*i:], x)
	}
	return out
}

// synth builds the file of design m for part in format.
func synth(m *bitstreams.Manifest, part, format string) ([]byte, error) {
	switch format {
	case "bit", "bin":
		bit, err := bitstreams.EncodeBit(bitstreams.BitHeader{
			Design: m.Name + "_top", UserID: userID, ToolVersion: toolVersion,
			Part: strings.ToLower(part), Date: buildDate, Time: buildTime,
		}, wordsBytes(configWords(m, part)))
		if err != nil {
			return nil, err
		}
		if format == "bin" {
			return bitstreams.ToBin(bit)
		}
		return bit, nil
	case "rbf":
		return rbf(m, part), nil
	case "sof":
		return sof(m, part), nil
	}
	return nil, fmt.Errorf("design %s: the generator cannot build format %q (it builds bit, bin, rbf and sof)", m.Name, format)
}

// sof builds the stand-in of a Quartus SRAM Object File: its real layout
// is not public (labrunner measures a .sof, it never parses one), so the
// stand-in is a labelled container: bitstreams.SOFMagic, the part and the
// design as NUL-terminated strings, then the design's .rbf configuration
// data. It is what the emulated DE5-Net loads through quartus_pgm's route.
func sof(m *bitstreams.Manifest, part string) []byte {
	out := []byte(bitstreams.SOFMagic)
	out = append(out, strings.ToUpper(part)...)
	out = append(out, 0)
	out = append(out, m.Name+"_top "+m.Version...)
	out = append(out, 0)
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	return append(out, rbf(m, part)...)
}

// rbf builds an Intel raw binary file: no header; a run of 0xFF, then the
// design's ID and version words and name (little-endian, as an .rbf is read
// a byte at a time LSB first), then deterministic filler.
func rbf(m *bitstreams.Manifest, part string) []byte {
	out := make([]byte, 0, 256+4*frameWords)
	for range 256 {
		out = append(out, 0xFF)
	}
	var b [4]byte
	add := func(x uint32) {
		binary.LittleEndian.PutUint32(b[:], x)
		out = append(out, b[:]...)
	}
	add(m.ID)
	add(m.VersionWord)
	for _, x := range nameWords(m.Name + " " + m.Version) {
		add(x)
	}
	r := seedFor(m, part, "rbf")
	for len(out) < 256+4*frameWords {
		add(r.next())
	}
	return out
}
