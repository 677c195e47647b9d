package bitstreams

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labrunner/labrunner/drivers"
)

// Parts of the board kinds (boards/kinds.go); spelled out so that the test
// does not depend on the boards package.
const (
	tebf0808Part = "xczu9eg-ffvc900-1-e"
	zcu102Part   = "xczu9eg-ffvb1156-2-e"
	ultra96Part  = "xczu3eg-sbva484-1-e"
	de5netPart   = "5sgxea7n2f45c2"
)

func exanetFile(t testing.TB, part string) (*Manifest, *File, []byte) {
	t.Helper()
	m, f, data, err := Default().FileFor("exanet", part)
	if err != nil {
		t.Fatal(err)
	}
	return m, f, data
}

// TestFilesMatchManifests fails when a file in files/ was edited, or a
// manifest changed, without re-running go generate ./bitstreams/...
func TestFilesMatchManifests(t *testing.T) {
	listed := map[string]bool{}
	for _, m := range Default().Designs() {
		for _, part := range m.Parts {
			for _, format := range m.FormatsFor(part) {
				found := false
				for _, f := range m.Files {
					found = found || (SamePart(f.Part, part) && f.Format == format)
				}
				if !found {
					t.Errorf("%s: no %s file for part %s: run go generate ./bitstreams/...", m.Source, format, part)
				}
			}
		}
		for i := range m.Files {
			f := &m.Files[i]
			data, err := os.ReadFile(filepath.Join("catalogue", filepath.FromSlash(f.Path)))
			if err != nil {
				t.Errorf("%s:%d: %v (run go generate ./bitstreams/...)", m.Source, f.Line, err)
				continue
			}
			listed[path.Base(f.Path)] = true
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != f.SHA256 || int64(len(data)) != f.Size {
				t.Errorf("%s:%d: %s is %d bytes with sha256 %s, the manifest lists %d and %s: run go generate ./bitstreams/... (never edit these files by hand)",
					m.Source, f.Line, f.Path, len(data), got, f.Size, f.SHA256)
			}
			if f.Checksum != "" {
				if want, _ := parseChecksum(f.Checksum); want != QuartusChecksum(data) {
					t.Errorf("%s:%d: %s checksum 0x%08X, manifest %s", m.Source, f.Line, f.Path, QuartusChecksum(data), f.Checksum)
				}
			}
			if f.SHA256 == "" || f.Size == 0 {
				t.Errorf("%s:%d: %s has no sha256 or size", m.Source, f.Line, f.Path)
			}
			// The embedded copy is the same file.
			_, _, edata, err := Default().FileFor(m.Name, f.Part)
			if err == nil && f.Format == m.FormatsFor(f.Part)[0] && !bytes.Equal(edata, data) {
				t.Errorf("embedded %s differs from the file on disk: rebuild", f.Path)
			}
		}
	}
	entries, err := os.ReadDir("files")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "README.md" && !listed[e.Name()] {
			t.Errorf("files/%s is listed by no manifest: run go generate ./bitstreams/...", e.Name())
		}
	}
}

func TestGoodFilesParse(t *testing.T) {
	for _, part := range []string{tebf0808Part, zcu102Part} {
		m, f, data := exanetFile(t, part)
		info, err := Parse(f.Path, data)
		if err != nil {
			t.Fatal(err)
		}
		if info.Format != "bit" || info.Design != "exanet_top" || info.Part != part || info.UserID != "0XFFFFFFFF" || info.ToolVersion != "2022.2" {
			t.Errorf("%s: info = %+v", f.Path, info)
		}
		if info.Size != int64(len(data)) || info.HeaderLen+info.PayloadLen != len(data) || info.SHA256 != f.SHA256 {
			t.Errorf("%s: sizes %+v", f.Path, info)
		}
		if info.IDCODE != 0x04738093 {
			t.Errorf("%s: IDCODE 0x%08x", f.Path, info.IDCODE)
		}
		img, err := Default().Check(m, Default().FilePath(m, f), data, part)
		if err != nil {
			t.Fatal(err)
		}
		if img.Design != "exanet" || img.Part != part || img.SHA256 != f.SHA256 || !bytes.Equal(img.Data, data) || len(img.Bin) != info.PayloadLen {
			t.Errorf("image = %+v", img)
		}
		bin, err := Parse("x.bin", img.Bin)
		if err != nil {
			t.Fatal(err)
		}
		if bin.SyncOffset != info.SyncOffset || bin.IDCODE != info.IDCODE || bin.Part != "" {
			t.Errorf("bin info = %+v", bin)
		}
		// A .bin is its own Bin.
		img2, err := Default().Check(m, "exanet.bin", img.Bin, part)
		if err != nil || !bytes.Equal(img2.Bin, img.Bin) || img2.Part != "" {
			t.Errorf("check .bin: %+v %v", img2.Part, err)
		}
	}
	if img, err := Default().Image("exanet", "XCZU9EG-FFVC900-2-I"); err != nil || img.Part != tebf0808Part {
		t.Errorf("Image for another speed/temperature grade: %v %v", img.Part, err)
	}
}

func kindOf(err error) error {
	for _, k := range []error{ErrFormat, ErrTruncated, ErrCorrupt, ErrNoSync, ErrWrongPart, ErrMismatch} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}

func TestTruncatedAtEveryOffset(t *testing.T) {
	m, f, data := exanetFile(t, tebf0808Part)
	p := Default().FilePath(m, f)
	for n := 0; n < len(data); n++ {
		_, err := Parse(f.Path, data[:n])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d: %v, want %v", n, err, ErrTruncated)
		}
		if !strings.HasPrefix(err.Error(), f.Path+": truncated bitstream: ") {
			t.Fatalf("cut at %d: %q does not name the file", n, err)
		}
		_, err = Default().Check(m, p, data[:n], tebf0808Part)
		if !errors.Is(err, ErrTruncated) || drivers.ClassOf(err) != drivers.ClassSetup || !strings.Contains(err.Error(), "board part "+tebf0808Part) {
			t.Fatalf("check cut at %d: %v", n, err)
		}
	}
	// Bytes appended after the configuration data are refused too.
	if _, err := Parse("x.bit", append(append([]byte(nil), data...), 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v", err)
	}
}

func TestEveryFlippedByteIsRefused(t *testing.T) {
	m, f, data := exanetFile(t, tebf0808Part)
	p := Default().FilePath(m, f)
	kinds := map[error]int{}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x01
		_, err := Default().Check(m, p, bad, tebf0808Part)
		if err == nil {
			t.Fatalf("flip at %d accepted", i)
		}
		k := kindOf(err)
		if k == nil || drivers.ClassOf(err) != drivers.ClassSetup {
			t.Fatalf("flip at %d: unclassified %v", i, err)
		}
		kinds[k]++
	}
	// Flips in the configuration data (but not in the sync word) parse and
	// are caught by the sha256 the manifest lists.
	h, _ := ParseBit(data)
	i := h.HeaderLen + h.PayloadLen - 100
	bad := append([]byte(nil), data...)
	bad[i] ^= 0x80
	if _, err := Parse(f.Path, bad); err != nil {
		t.Fatalf("flipped payload should parse: %v", err)
	}
	_, err := Default().Check(m, p, bad, tebf0808Part)
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), f.SHA256) || !strings.Contains(err.Error(), p) {
		t.Errorf("flipped payload: %v", err)
	}
	if kinds[ErrMismatch] == 0 || kinds[ErrNoSync] == 0 {
		t.Errorf("kinds of refusal: %v", kinds)
	}
}

func TestWrongPart(t *testing.T) {
	m, f, data := exanetFile(t, zcu102Part)
	p := Default().FilePath(m, f)
	_, err := Default().Check(m, p, data, tebf0808Part)
	if !errors.Is(err, ErrWrongPart) {
		t.Fatalf("err = %v", err)
	}
	for _, w := range []string{p, "built for part " + zcu102Part, "the board's part is " + tebf0808Part, "use embedded:bitstreams/files/exanet_" + tebf0808Part + ".bit"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in %v", w, err)
		}
	}
	_, err = Default().Check(m, p, data, ultra96Part)
	if !errors.Is(err, ErrWrongPart) || !strings.Contains(err.Error(), "design exanet is built for "+tebf0808Part+", "+zcu102Part+"; the board's part is "+ultra96Part) {
		t.Errorf("design not built for the part: %v", err)
	}
	if _, err := Default().Check(m, p, data, ""); !errors.Is(err, ErrWrongPart) {
		t.Errorf("empty board part: %v", err)
	}
	// A .bin has no header: the manifest's entry gives its part.
	bin, _ := ToBin(data)
	dir := t.TempDir()
	man := strings.Replace(demo, "files: []", fmt.Sprintf("parts: [%s, %s]\nfiles:\n  - {path: demo.bin, part: %s, format: bin}", tebf0808Part, zcu102Part, zcu102Part), 1)
	man = strings.Replace(man, "parts: [xczu9eg-ffvc900-1-e]\n", "", 1)
	c := loadDemo(t, dir, man, map[string][]byte{"demo.bin": bin})
	dm, _ := c.Design("demo")
	if _, err := c.Check(dm, filepath.Join(dir, "demo.bin"), bin, tebf0808Part); !errors.Is(err, ErrWrongPart) || !strings.Contains(err.Error(), "lists it as built for part "+zcu102Part) {
		t.Errorf(".bin of another part: %v", err)
	}
	if img, err := c.Check(dm, filepath.Join(dir, "demo.bin"), bin, zcu102Part); err != nil || img.Part != zcu102Part {
		t.Errorf(".bin of the board's part: %v %v", img.Part, err)
	}
}

func loadDemo(t *testing.T, dir, manifest string, files map[string][]byte) *Catalogue {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "demo.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for n, d := range files {
		if err := os.WriteFile(filepath.Join(dir, n), d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func payloadWithSync(n int, syncAt int) []byte {
	p := bytes.Repeat([]byte{0xFF}, n)
	if syncAt >= 0 {
		copy(p[syncAt:], syncWord)
	}
	return p
}

func TestBadBitFiles(t *testing.T) {
	hdr := BitHeader{Design: "demo_top", UserID: "0XFFFFFFFF", ToolVersion: "2022.2", Part: tebf0808Part, Date: "2022/01/01", Time: "00:00:00"}
	enc := func(h BitHeader, payload []byte) []byte {
		b, err := EncodeBit(h, payload)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good := enc(hdr, payloadWithSync(256, 80))
	if _, err := ParseBit(good); err != nil {
		t.Fatalf("good: %v", err)
	}
	noA := hdr
	noA.DesignField, noA.Design, noA.UserID, noA.ToolVersion = "", "", "", ""
	mutate := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		file string
		data []byte
		kind error
		msg  string
	}{
		{"missing sync", "x.bit", enc(hdr, payloadWithSync(256, -1)), ErrNoSync, "no sync word AA 99 55 66 in the first 256 bytes"},
		{"sync too late", "x.bit", enc(hdr, payloadWithSync(SyncWindow+64, SyncWindow+8)), ErrNoSync, "in the first 4096 bytes"},
		{"wrong extension", "x.mcs", good, ErrFormat, "x.mcs: unsupported bitstream format: extension .mcs (give a .bit, .bin, .rbf or .sof file)"},
		{"no extension", "bitstream", good, ErrFormat, "extension (none)"},
		{"bit named bin", "x.bin", good, ErrCorrupt, "this is a .bit file"},
		{"bit named rbf", "x.rbf", good, ErrCorrupt, "this is a Xilinx .bit file"},
		{"bin named bit", "x.bit", SwapWords(payloadWithSync(256, 80)), ErrCorrupt, "it looks like a byte-swapped .bin"},
		{"not a bitstream", "x.bit", []byte("hello world, this is text"), ErrCorrupt, "the header does not start with 00 09"},
		{"magic", "x.bit", mutate(func(b []byte) []byte { b[5] = 0; return b }), ErrCorrupt, "the header does not start"},
		{"field without NUL", "x.bit", mutate(func(b []byte) []byte { i := bytes.IndexByte(b, ';'); b[bytes.IndexByte(b[i:], 0)+i] = 'x'; return b }), ErrCorrupt, "header field 'a' is not a NUL-terminated string"},
		{"unknown key", "x.bit", mutate(func(b []byte) []byte { b[bytes.Index(b, []byte("\x00b\x00"))+1] = 'z'; return b }), ErrCorrupt, "unknown header field key 0x7a"},
		{"duplicate key", "x.bit", mutate(func(b []byte) []byte { b[bytes.Index(b, []byte("\x00c\x00"))+1] = 'b'; return b }), ErrCorrupt, "header field 'b' appears twice"},
		{"no design field", "x.bit", enc(noA, payloadWithSync(64, 0))[:0], ErrTruncated, "ends inside the header magic (0 bytes)"},
		{"length past end", "x.bit", mutate(func(b []byte) []byte { i := bytes.LastIndexByte(b[:len(b)-256], 'e'); b[i+1] = 0x10; return b }), ErrTruncated, "the header announces 268435712 bytes of configuration data but only 256 follow"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.file, tc.data)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %v\nwant %v containing %q", err, tc.kind, tc.msg)
			}
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != tc.file || fe.Fix == "" {
				t.Errorf("error %#v does not name the file and the fix", err)
			}
		})
	}
}

func TestBinFiles(t *testing.T) {
	raw := payloadWithSync(256, 80)
	// Both byte orders are .bin files: Vivado's (the .bit's order, what
	// openFPGALoader loads) and fpga_manager's (swapped words).
	if info, err := Parse("x.bin", raw); err != nil || info.Swapped || info.SyncOffset != 80 {
		t.Errorf("unswapped: %+v %v", info, err)
	}
	if info, err := Parse("x.bin", SwapWords(raw)); err != nil || !info.Swapped || info.SyncOffset != 80 {
		t.Errorf("swapped: %+v %v", info, err)
	}
	if _, err := Parse("x.bin", SwapWords(raw)[:255]); !errors.Is(err, ErrTruncated) {
		t.Errorf("odd length: %v", err)
	}
	if _, err := Parse("x.bin", nil); !errors.Is(err, ErrTruncated) {
		t.Errorf("empty: %v", err)
	}
	if _, err := Parse("x.bin", SwapWords(payloadWithSync(256, -1))); !errors.Is(err, ErrNoSync) {
		t.Errorf("no sync: %v", err)
	}
	// The swapped sync word must be word-aligned.
	if _, err := Parse("x.bin", SwapWords(payloadWithSync(256, 82))); err == nil {
		t.Error("misaligned sync accepted")
	}
}

func TestRBF(t *testing.T) {
	data := make([]byte, 3000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.IntN(256))
	}
	var sum uint32
	for _, b := range data {
		sum += uint32(b)
	}
	info, err := Parse("shoal.rbf", data)
	if err != nil || info.Checksum != sum || info.Part != "" || info.Size != 3000 || info.Format != "rbf" {
		t.Fatalf("info %+v %v", info, err)
	}
	if _, err := Parse("shoal.rbf", nil); !errors.Is(err, ErrTruncated) {
		t.Errorf("empty rbf: %v", err)
	}
	if s, err := Parse("shoal.sof", data); err != nil || s.Checksum != sum {
		t.Errorf("sof: %v", err)
	}
	dir := t.TempDir()
	man := strings.Replace(demo, "parts: [xczu9eg-ffvc900-1-e]", "parts: ["+de5netPart+"]", 1)
	man = strings.Replace(man, "files: []", fmt.Sprintf("files:\n  - {path: shoal.rbf, part: %s, format: rbf, size: 3000, checksum: \"0x%08X\"}", strings.ToUpper(de5netPart), sum), 1)
	c := loadDemo(t, dir, man, map[string][]byte{"shoal.rbf": data})
	m, _ := c.Design("demo")
	img, err := c.Check(m, filepath.Join(dir, "shoal.rbf"), data, de5netPart+"N")
	if err != nil || img.Part != strings.ToUpper(de5netPart) || img.Bin != nil {
		t.Fatalf("check rbf: %+v %v", img.Part, err)
	}
	bad := append([]byte(nil), data...)
	bad[1234]++
	if _, err := c.Check(m, filepath.Join(dir, "shoal.rbf"), bad, de5netPart); !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "Quartus checksum") {
		t.Errorf("flipped rbf: %v", err)
	}
	if _, err := c.Check(m, filepath.Join(dir, "shoal.rbf"), data[:2999], de5netPart); !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "2999 bytes, but") {
		t.Errorf("short rbf: %v", err)
	}
	if _, err := c.Check(m, filepath.Join(dir, "shoal.rbf"), data, "5sgxea7n2f40c2"); !errors.Is(err, ErrWrongPart) {
		t.Errorf("rbf on another package: %v", err)
	}
	// A Xilinx bitstream offered to the Intel design is refused before parsing.
	_, _, bit := exanetFile(t, tebf0808Part)
	if _, err := c.Check(m, "x.bit", bit, de5netPart); !errors.Is(err, ErrWrongPart) {
		t.Errorf("bit to intel: %v", err)
	}
}

func TestSamePart(t *testing.T) {
	same := [][2]string{
		{"xczu9eg-ffvc900-1-e", "xczu9eg-ffvc900-1-e"},
		{"xczu9eg-ffvc900-1-e", "XCZU9EG-FFVC900-2-I"},
		{"xczu9eg-ffvc900-1-e", "xczu9eg-ffvc900"},
		{"xczu9eg-ffvc900-1-e", "xczu9egffvc9001e"},
		{"xczu9eg-ffvc900-1-e", "xczu9eg-ffvc900-1l-i"},
		{"xczu9egffvc900", "xczu9egffvc9002i"},
		{"xc7z020clg484-1", "7z020clg484"},
		{"xc7z020clg484-1", "xc7z020clg484-3"},
		{"5sgxea7n2f45c2", "5SGXEA7N2F45C2"},
		{"5sgxea7n2f45c2", "5SGXEA7N2F45I3"},
		{"5sgxea7n2f45c2", "5SGXEA7N2F45C2N"},
		{"10ax115n2f40e2sg", "10AX115N2F40I1SG"},
	}
	differ := [][2]string{
		{"xczu9eg-ffvc900-1-e", "xczu9eg-ffvb1156-2-e"},
		{"xczu9eg-ffvc900-1-e", "xczu3eg-sbva484-1-e"},
		{"xczu9eg-ffvc900-1-e", "xczu9eg-ffvc9000-1-e"},
		{"xczu9eg-ffvc900-1-e", "xczu9egffvb11562e"},
		{"xc7z020clg484-1", "7z020clg400"},
		{"5sgxea7n2f45c2", "5sgxea7n2f40c2"},
		{"5sgxea7n2f45c2", "5sgxea5n2f45c2"},
		{"5sgxea7n2f45c2", "xczu9eg-ffvc900-1-e"},
		{"", ""},
		{"xczu9eg-ffvc900-1-e", ""},
	}
	for _, p := range same {
		if !SamePart(p[0], p[1]) || !SamePart(p[1], p[0]) {
			t.Errorf("SamePart(%s, %s) = false, want true", p[0], p[1])
		}
	}
	for _, p := range differ {
		if SamePart(p[0], p[1]) || SamePart(p[1], p[0]) {
			t.Errorf("SamePart(%s, %s) = true, want false", p[0], p[1])
		}
	}
	if DefaultFormat(de5netPart) != "sof" || strings.Join(DefaultFormats(de5netPart), ",") != "sof,rbf" || DefaultFormat(tebf0808Part) != "bit" || DefaultFormat("7z020clg484") != "bit" {
		t.Error("DefaultFormat")
	}
}

func TestToBinProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 200; trial++ {
		words := 4 + r.IntN(300)
		payload := make([]byte, 4*words)
		for i := range payload {
			payload[i] = byte(r.IntN(256))
		}
		at := 4 * r.IntN(min(words-1, SyncWindow/4-1))
		copy(payload[at:], syncWord)
		bit, err := EncodeBit(BitHeader{Design: "d", Part: "xczu9eg-ffvc900-1-e", Date: "d", Time: "t"}, payload)
		if err != nil {
			t.Fatal(err)
		}
		h, err := ParseBit(bit)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		bin, err := ToBin(bit)
		if err != nil {
			t.Fatal(err)
		}
		if len(bin) != len(payload) || !bytes.Equal(SwapWords(bin), payload) {
			t.Fatalf("trial %d: swapping the .bin back does not give the configuration data", trial)
		}
		for i := 0; i < len(bin); i += 4 {
			if binary.LittleEndian.Uint32(bin[i:]) != binary.BigEndian.Uint32(payload[i:]) {
				t.Fatalf("trial %d: word %d not swapped", trial, i/4)
			}
		}
		info, err := Parse("x.bin", bin)
		if err != nil || info.SyncOffset > h.SyncOffset || info.SyncOffset%4 != 0 {
			t.Fatalf("trial %d: bin parse %+v %v (bit sync at %d)", trial, info, err, h.SyncOffset)
		}
	}
	// Configuration data that is not whole words cannot be converted.
	bit, _ := EncodeBit(BitHeader{Design: "d", Part: "p"}, payloadWithSync(130, 0))
	if _, err := ToBin(bit); !errors.Is(err, ErrCorrupt) {
		t.Errorf("odd payload: %v", err)
	}
	if _, err := ToBin([]byte{1, 2, 3}); err == nil {
		t.Error("ToBin of garbage")
	}
	if got := SwapWords([]byte{1, 2, 3, 4, 5, 6}); !bytes.Equal(got, []byte{4, 3, 2, 1, 5, 6}) {
		t.Errorf("SwapWords partial = %v", got)
	}
}

func TestEncodeParseRoundTrip(t *testing.T) {
	h := BitHeader{DesignField: "top;COMPRESS=TRUE;UserID=0X12345678;Version=2023.1;FLAG", Part: "xcvu9p-flga2104-2l-e", Date: "2023/05/06", Time: "07:08:09"}
	bit, err := EncodeBit(h, payloadWithSync(64, 8))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseBit(bit)
	if err != nil {
		t.Fatal(err)
	}
	if got.Design != "top" || got.UserID != "0X12345678" || got.ToolVersion != "2023.1" || got.Extra["COMPRESS"] != "TRUE" || got.Extra["FLAG"] != "" || len(got.Extra) != 2 ||
		got.Part != h.Part || got.Date != h.Date || got.Time != h.Time || got.SyncOffset != 8 || got.PayloadLen != 64 {
		t.Errorf("round trip = %+v", got)
	}
	if _, err := EncodeBit(BitHeader{Design: "a\x00b"}, nil); err == nil {
		t.Error("NUL in a field accepted")
	}
}

func TestCheckNeedsManifest(t *testing.T) {
	_, _, data := exanetFile(t, tebf0808Part)
	if _, err := Default().Check(nil, "x.bit", data, tebf0808Part); err == nil {
		t.Error("nil manifest accepted")
	}
}

func BenchmarkParseBit(b *testing.B) {
	_, _, data := exanetFile(b, tebf0808Part)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseBit(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToBin(b *testing.B) {
	_, _, data := exanetFile(b, tebf0808Part)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ToBin(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	m, f, data := exanetFile(b, tebf0808Part)
	p := Default().FilePath(m, f)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Default().Check(m, p, data, tebf0808Part); err != nil {
			b.Fatal(err)
		}
	}
}

// Each programmer gets the byte order it loads, whatever file it was given:
// Image.Bin has fpga_manager's swapped words, Image.Raw the .bit's own
// order (what openFPGALoader and xsdb load from a .bin), from a .bit or a
// .bin of either order.
func TestImageByteOrders(t *testing.T) {
	c := Default()
	m, f, bit, err := c.FileFor("exanet", tebf0808Part, "bit")
	if err != nil {
		t.Fatal(err)
	}
	fromBit, err := c.Check(m, c.FilePath(m, f), bit, tebf0808Part)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := ParseBit(bit)
	if !bytes.Equal(fromBit.Raw, h.Payload) || !bytes.Equal(fromBit.Bin, SwapWords(h.Payload)) {
		t.Fatal(".bit: Raw is not the payload or Bin not its swapped words")
	}
	for name, data := range map[string][]byte{"swapped": fromBit.Bin, "bit order": fromBit.Raw} {
		img, err := c.Check(m, "exanet.bin", data, tebf0808Part)
		if err != nil {
			t.Fatalf("%s .bin: %v", name, err)
		}
		if !bytes.Equal(img.Bin, fromBit.Bin) || !bytes.Equal(img.Raw, fromBit.Raw) {
			t.Errorf("%s .bin: the byte orders handed on differ from the .bit's", name)
		}
	}
	// .rbf and .sof carry neither: their loaders take the file as it is.
	m, f, sof, err := c.FileFor("shoal", de5netPart, "sof")
	if err != nil {
		t.Fatal(err)
	}
	img, err := c.Check(m, c.FilePath(m, f), sof, de5netPart)
	if err != nil || img.Bin != nil || img.Raw != nil || !bytes.Equal(img.Data, sof) {
		t.Errorf(".sof: %v", err)
	}
	// A programmer that loads only .sof gets the .sof; one that loads
	// only formats the design lacks gets an error naming what there is.
	if _, f, _, _ := c.FileFor("shoal", de5netPart, "rbf"); f == nil || f.Format != "rbf" {
		t.Errorf("rbf: %+v", f)
	}
	if _, _, _, err := c.FileFor("shoal", de5netPart, "bit", "bin"); err == nil || !strings.Contains(err.Error(), "has only .sof, .rbf") {
		t.Errorf("no file in the programmer's formats: %v", err)
	}
}
