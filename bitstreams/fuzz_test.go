package bitstreams

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func seedFiles(f *testing.F) [][]byte {
	var out [][]byte
	for _, m := range Default().Designs() {
		for i := range m.Files {
			_, _, data, err := Default().FileFor(m.Name, m.Files[i].Part)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, data)
		}
	}
	return out
}

// FuzzParseBit: ParseBit never panics; what it accepts re-encodes to the
// same bytes, and converts to a .bin that parses.
func FuzzParseBit(f *testing.F) {
	for _, d := range seedFiles(f) {
		f.Add(d)
		f.Add(d[:200])
	}
	good, _ := EncodeBit(BitHeader{Design: "d", Part: "p"}, payloadWithSync(32, 4))
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseBit(data)
		if err != nil {
			if kindOf(err) == nil {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if h.HeaderLen+h.PayloadLen != len(data) || h.SyncOffset < 0 || h.SyncOffset+4 > h.PayloadLen {
			t.Fatalf("inconsistent header %+v for %d bytes", h, len(data))
		}
		// Fields may come in any order in the input; the encoder writes
		// a, b, c, d. Re-parsing the encoding gives the same header.
		enc, err := EncodeBit(*h, h.Payload)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := ParseBit(enc)
		if err != nil || h2.DesignField != h.DesignField || h2.Part != h.Part || h2.Date != h.Date || h2.Time != h.Time || !bytes.Equal(h2.Payload, h.Payload) {
			t.Fatalf("re-encoding changed the header: %v", err)
		}
		bin, err := ToBin(data)
		if h.PayloadLen%4 != 0 {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ToBin of %d bytes: %v", h.PayloadLen, err)
			}
			return
		}
		if err != nil || !bytes.Equal(SwapWords(bin), h.Payload) {
			t.Fatalf("ToBin: %v", err)
		}
	})
}

// FuzzParse: Parse never panics on .bin, .rbf, .sof or .bit names, errors
// are classified and name the file, and accepted files are measured right.
func FuzzParse(f *testing.F) {
	for _, d := range seedFiles(f) {
		f.Add(byte(0), d)
		if bin, err := ToBin(d); err == nil {
			f.Add(byte(1), bin)
			f.Add(byte(1), bin[:len(bin)-3])
		}
	}
	f.Add(byte(2), []byte{0xFF, 0xFF, 0x6A, 0x00})
	f.Add(byte(2), []byte{})
	names := []string{"f.bit", "f.bin", "f.rbf", "f.sof", "f.mcs"}
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		name := names[int(which)%len(names)]
		info, err := Parse(name, data)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != name || kindOf(err) == nil {
				t.Fatalf("error %v does not name %s or is unclassified", err, name)
			}
			return
		}
		if info.Size != int64(len(data)) || info.SHA256 != digest(data) || len(info.SHA256) != 64 {
			t.Fatalf("measured wrong: %+v", info)
		}
		switch info.Format {
		case "bin":
			if len(data)%4 != 0 || info.SyncOffset%4 != 0 || !bytes.Equal(data[info.SyncOffset:info.SyncOffset+4], syncWordSwapped) {
				t.Fatalf("bin accepted without an aligned swapped sync: %+v", info)
			}
		case "rbf", "sof":
			if info.Checksum != QuartusChecksum(data) || len(data) == 0 {
				t.Fatalf("rbf checksum %x", info.Checksum)
			}
		}
	})
}

// FuzzParseManifest: manifest parsing never panics, and every problem has a
// line; an accepted manifest answers Lookup for each of its elements.
func FuzzParseManifest(f *testing.F) {
	ex, err := os.ReadFile("catalogue/exanet.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ex)
	f.Add([]byte(demo))
	f.Add([]byte("name: x\nregisters: [{name: A, offset: 0x4, fields: [{bits: \"40:1\"}]}]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest("m.yaml", data)
		if err != nil {
			var errs *Errors
			if !errors.As(err, &errs) || len(errs.List) == 0 {
				t.Fatalf("error %T %v", err, err)
			}
			for _, p := range errs.List {
				if p.Line < 1 || p.File != "m.yaml" || p.Msg == "" {
					t.Fatalf("problem without position: %+v", p)
				}
			}
			return
		}
		for _, e := range m.Elements() {
			if _, a, err := m.Lookup(e.Name); err != nil || a != e.Addr {
				t.Fatalf("Lookup(%s) = 0x%x %v, want 0x%x", e.Name, a, err, e.Addr)
			}
			if _, ok := m.Window(e.Addr); !ok {
				t.Fatalf("%s at 0x%x is outside every window", e.Name, e.Addr)
			}
		}
	})
}
