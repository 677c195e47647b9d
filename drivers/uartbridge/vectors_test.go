package uartbridge

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// crcBitwise is a second, bit-at-a-time CRC-16/CCITT-FALSE written from the
// definition, to check the table-driven one.
func crcBitwise(p []byte) uint16 {
	c := uint16(0xFFFF)
	for _, b := range p {
		for i := 7; i >= 0; i-- {
			in := uint16(b>>i) & 1
			top := c >> 15
			c <<= 1
			if top^in == 1 {
				c ^= 0x1021
			}
		}
	}
	return c
}

type vector struct {
	line   int
	kind   string
	fields map[string]string
}

func (v vector) hex(t *testing.T, key string) []byte {
	t.Helper()
	s := v.fields[key]
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("testdata/vectors.txt:%d: %s: %v", v.line, key, err)
	}
	return b
}

func (v vector) num(t *testing.T, key string, base int) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(v.fields[key], base, 32)
	if err != nil {
		t.Fatalf("testdata/vectors.txt:%d: %s: %v", v.line, key, err)
	}
	return n
}

func (v vector) words(t *testing.T) []uint32 {
	t.Helper()
	if v.fields["data"] == "-" {
		return nil
	}
	var w []uint32
	for s := range strings.SplitSeq(v.fields["data"], ",") {
		n, err := strconv.ParseUint(s, 16, 32)
		if err != nil {
			t.Fatalf("testdata/vectors.txt:%d: data: %v", v.line, err)
		}
		w = append(w, uint32(n))
	}
	return w
}

func readVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vs []vector
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Fields(line)
		v := vector{line: n, kind: parts[0], fields: map[string]string{}}
		for _, p := range parts[1:] {
			k, val, ok := strings.Cut(p, "=")
			if !ok {
				t.Fatalf("testdata/vectors.txt:%d: field %q is not key=value", n, p)
			}
			v.fields[k] = val
		}
		vs = append(vs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

var cmdByName = map[string]Cmd{"INFO": CmdInfo, "READ": CmdRead, "WRITE": CmdWrite, "READ_BURST": CmdReadBurst, "WRITE_BURST": CmdWriteBurst}
var statusByName = map[string]Status{"OK": StatusOK, "BUS_ERROR": StatusBusError, "ALIGN": StatusAlign,
	"BAD_COUNT": StatusBadCount, "BAD_CMD": StatusBadCmd, "BUSY": StatusBusy, "READ_ONLY": StatusReadOnly,
	"REFUSED": StatusRefused}

func TestVectors(t *testing.T) {
	vs := readVectors(t)
	frames := map[string][]byte{}
	kinds := map[string]int{}
	cmdsSeen := map[string]bool{}
	for _, v := range vs {
		kinds[v.kind]++
		switch v.kind {
		case "crc":
			in := v.hex(t, "input")
			want := uint16(v.num(t, "crc", 16))
			if got := CRC16(in); got != want {
				t.Errorf("line %d: CRC16(%x) = %04x, want %04x", v.line, in, got, want)
			}
			if got := crcBitwise(in); got != want {
				t.Errorf("line %d: bitwise CRC(%x) = %04x, want %04x", v.line, in, got, want)
			}
		case "req", "resp":
			name := v.fields["name"]
			frame := v.hex(t, "frame")
			frames[name] = frame
			cmd, ok := cmdByName[v.fields["cmd"]]
			if !ok {
				t.Fatalf("line %d: unknown cmd %q", v.line, v.fields["cmd"])
			}
			cmdsSeen[v.kind+" "+v.fields["cmd"]] = true
			if got, want := crcBitwise(frame[2:len(frame)-2]), uint16(frame[len(frame)-2])|uint16(frame[len(frame)-1])<<8; got != want {
				t.Errorf("line %d (%s): frame CRC %04x, bitwise CRC %04x", v.line, name, want, got)
			}
			if v.kind == "req" {
				want := Request{Seq: uint8(v.num(t, "seq", 16)), Cmd: cmd, Addr: uint32(v.num(t, "addr", 16)),
					Count: uint16(v.num(t, "count", 10)), Data: v.words(t)}
				enc, err := AppendRequest(nil, want)
				if err != nil {
					t.Fatalf("line %d (%s): encode: %v", v.line, name, err)
				}
				if !bytes.Equal(enc, frame) {
					t.Errorf("line %d (%s): encoded\n%x\nwant\n%x", v.line, name, enc, frame)
				}
				if len(frame) != RequestLen(cmd, int(want.Count)) {
					t.Errorf("line %d (%s): %d bytes, RequestLen says %d", v.line, name, len(frame), RequestLen(cmd, int(want.Count)))
				}
				got, err := DecodeRequest(frame)
				if err != nil {
					t.Fatalf("line %d (%s): decode: %v", v.line, name, err)
				}
				if !requestsEqual(got, want) {
					t.Errorf("line %d (%s): decoded %+v, want %+v", v.line, name, got, want)
				}
			} else {
				st, ok := statusByName[v.fields["status"]]
				if !ok {
					t.Fatalf("line %d: unknown status %q", v.line, v.fields["status"])
				}
				want := Response{Seq: uint8(v.num(t, "seq", 16)), Cmd: cmd, Status: st, Data: v.words(t)}
				enc, err := AppendResponse(nil, want)
				if err != nil {
					t.Fatalf("line %d (%s): encode: %v", v.line, name, err)
				}
				if !bytes.Equal(enc, frame) {
					t.Errorf("line %d (%s): encoded\n%x\nwant\n%x", v.line, name, enc, frame)
				}
				if len(frame) != ResponseLen(len(want.Data)) {
					t.Errorf("line %d (%s): %d bytes, ResponseLen says %d", v.line, name, len(frame), ResponseLen(len(want.Data)))
				}
				got, err := DecodeResponse(frame)
				if err != nil {
					t.Fatalf("line %d (%s): decode: %v", v.line, name, err)
				}
				if !responsesEqual(got, want) {
					t.Errorf("line %d (%s): decoded %+v, want %+v", v.line, name, got, want)
				}
			}
		case "stream":
			in := v.hex(t, "input")
			var want [][]byte
			if e := v.fields["expect"]; e != "-" {
				for n := range strings.SplitSeq(e, ",") {
					f, ok := frames[n]
					if !ok {
						t.Fatalf("line %d: stream expects unknown frame %q", v.line, n)
					}
					want = append(want, f)
				}
			}
			for _, chunk := range []int{len(in), 1, 3} {
				got := decodeStream(t, v.fields["dir"], in, chunk)
				if !slices.EqualFunc(got, want, bytes.Equal) {
					t.Errorf("line %d (%s, chunks of %d): found\n%x\nwant\n%x", v.line, v.fields["name"], chunk, got, want)
				}
			}
		default:
			t.Errorf("line %d: unknown kind %q", v.line, v.kind)
		}
	}
	// The file must cover every command in both directions, and streams.
	for c := range cmdByName {
		for _, k := range []string{"req", "resp"} {
			if !cmdsSeen[k+" "+c] {
				t.Errorf("testdata/vectors.txt has no %s vector for %s", k, c)
			}
		}
	}
	if kinds["crc"] == 0 || kinds["stream"] == 0 {
		t.Errorf("testdata/vectors.txt lacks crc or stream vectors: %v", kinds)
	}
	// The page's "Sizes on the wire" table.
	for _, c := range []struct {
		req, resp string
		total     int
	}{
		{"info-req", "info-resp", 37}, {"read-req", "read-resp", 25}, {"write-req", "write-resp", 25},
		{"read-burst-64-req", "read-burst-64-resp", 277}, {"write-burst-64-req", "write-burst-64-resp", 277},
	} {
		if n := len(frames[c.req]) + len(frames[c.resp]); n != c.total {
			t.Errorf("%s + %s = %d bytes on the wire, the page says %d", c.req, c.resp, n, c.total)
		}
	}
}

// decodeStream feeds in to a decoder of the given direction in chunks and
// re-encodes every frame found.
func decodeStream(t *testing.T, dir string, in []byte, chunk int) [][]byte {
	t.Helper()
	var out [][]byte
	var feed func([]byte)
	switch dir {
	case "req":
		d := NewRequestDecoder()
		feed = func(p []byte) {
			d.Write(p)
			for {
				r, _, err := d.Next()
				if errors.Is(err, ErrNeedMore) {
					return
				}
				if err != nil {
					continue
				}
				f, err := AppendRequest(nil, r)
				if err != nil {
					t.Fatalf("re-encode %+v: %v", r, err)
				}
				out = append(out, f)
			}
		}
	case "resp":
		d := NewResponseDecoder()
		feed = func(p []byte) {
			d.Write(p)
			for {
				r, err := d.Next()
				if errors.Is(err, ErrNeedMore) {
					return
				}
				if err != nil {
					continue
				}
				f, err := AppendResponse(nil, r)
				if err != nil {
					t.Fatalf("re-encode %+v: %v", r, err)
				}
				out = append(out, f)
			}
		}
	default:
		t.Fatalf("unknown stream direction %q", dir)
	}
	for i := 0; i < len(in); i += chunk {
		feed(in[i:min(i+chunk, len(in))])
	}
	return out
}

func requestsEqual(a, b Request) bool {
	return a.Seq == b.Seq && a.Cmd == b.Cmd && a.Addr == b.Addr && a.Count == b.Count && slices.Equal(a.Data, b.Data)
}

func responsesEqual(a, b Response) bool {
	return a.Seq == b.Seq && a.Cmd == b.Cmd && a.Status == b.Status && slices.Equal(a.Data, b.Data)
}
