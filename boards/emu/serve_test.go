package emu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tarm/serial"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/labconfig"
)

// ---- a test-only design -------------------------------------------------

const testDesignName = "servetest"

// Register map of the test design.
const (
	tdID      = 0x00 // ro, reads tdIDValue
	tdRO      = 0x04 // ro: a write is refused with ErrReadOnly
	tdBusy    = 0x08 // answers ErrBusy while busyLeft > 0, then 0x600D
	tdFIFO    = 0x0C // pop: each read returns the next number from 1000
	tdFull    = 0x10 // push into a FIFO that is always full: a write is refused by the design
	tdScratch = 0x100
	tdWords   = 64 // scratch words, 0x100..0x1FC; nothing else is decoded

	tdIDValue = 0x7E57D351
)

type testDesign struct {
	next     uint32 // next FIFO value
	pops     int    // FIFO reads executed
	writes   int    // scratch writes executed
	busyLeft int
	scratch  [tdWords]uint32
	closed   bool
}

func init() {
	RegisterDesign(testDesignName, func(b *Board, m *bitstreams.Manifest) (Design, error) {
		return &testDesign{next: 1000}, nil
	})
}

func (d *testDesign) Name() string { return testDesignName }
func (d *testDesign) Close()       { d.closed = true }

func (d *testDesign) Read32(a uint32) (uint32, error) {
	switch {
	case a == tdID:
		return tdIDValue, nil
	case a == tdRO:
		return 0x5EAD0, nil
	case a == tdBusy:
		if d.busyLeft > 0 {
			d.busyLeft--
			return 0, ErrBusy
		}
		return 0x600D, nil
	case a == tdFIFO:
		d.pops++
		v := d.next
		d.next++
		return v, nil
	case a >= tdScratch && a < tdScratch+4*tdWords:
		return d.scratch[(a-tdScratch)/4], nil
	}
	return 0, fmt.Errorf("%w at 0x%x", ErrBusError, a)
}

func (d *testDesign) Write32(a, v uint32) error {
	switch {
	case a == tdID || a == tdRO || a == tdFIFO:
		return ErrReadOnly
	case a == tdBusy:
		return ErrBusy
	case a == tdFull:
		return errors.New("push FIFO full")
	case a >= tdScratch && a < tdScratch+4*tdWords:
		d.writes++
		d.scratch[(a-tdScratch)/4] = v
		return nil
	}
	return fmt.Errorf("%w at 0x%x", ErrBusError, a)
}

// setDesignForTest instantiates a registered design on b without a
// bitstream (the catalogue is not needed), as program() would.
func (b *Board) setDesignForTest(t testing.TB, name string) Design {
	t.Helper()
	registryMu.Lock()
	f, ok := designs[name]
	registryMu.Unlock()
	if !ok {
		t.Fatalf("design %s is not registered", name)
	}
	m := &bitstreams.Manifest{Name: name, Version: "0.1.0-test"}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.design != nil {
		b.design.Close()
	}
	d, err := f(b, m)
	if err != nil {
		t.Fatal(err)
	}
	b.design, b.manifest = d, m
	b.generation++
	return d
}

// eventually polls cond for up to 2 s: a request the host gave up on is
// still executed when the board gets to it.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// inDesign runs f on the test design under the board's lock.
func inDesign(b *Board, f func(d *testDesign)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b.design.(*testDesign))
}

// ---- racks ---------------------------------------------------------------

type rackOpts struct {
	seed   int64
	faults []labconfig.Fault
	bootMS int
	kind   string
	noPTY  bool
	bridge *labconfig.Serial // the lab's bus.uart_bridge entry, if any
}

func fault(name, board string, kv ...string) labconfig.Fault {
	f := labconfig.Fault{Name: name, Board: board, Pos: labconfig.Pos{File: "test.yaml", Line: 7}}
	if len(kv) > 0 {
		f.Params = labconfig.Params{}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Params[kv[i]] = labconfig.Param{Values: []string{kv[i+1]}}
		}
	}
	return f
}

func startRack(t testing.TB, o rackOpts) (*Rack, error) {
	t.Helper()
	if o.seed == 0 {
		o.seed = 42
	}
	if o.bootMS == 0 {
		o.bootMS = 40
	}
	if o.kind == "" {
		o.kind = "zcu102"
	}
	lab := &labconfig.Lab{Name: "serve-test", Seed: o.seed, Boards: []labconfig.Board{
		{Name: "b0", Kind: o.kind, Emulated: &labconfig.Emulated{BootMS: o.bootMS}, Bus: labconfig.Bus{UARTBridge: o.bridge}},
	}}
	r, err := Start(lab, Options{Faults: o.faults, Catalogue: &bitstreams.Catalogue{}, NoPTY: o.noPTY})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { r.Close() })
	return r, nil
}

// testBoard starts a one-board rack with the test design loaded.
func testBoard(t testing.TB, o rackOpts) *Board {
	t.Helper()
	r, err := startRack(t, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Board("b0")
	b.setDesignForTest(t, testDesignName)
	return b
}

// ---- a minimal, independent host side of the bridge ----------------------

// refCRC is CRC-16/CCITT-FALSE computed bit by bit, independently of the
// table the device uses.
func refCRC(p []byte) uint16 {
	crc := uint16(0xFFFF)
	for _, b := range p {
		for i := 7; i >= 0; i-- {
			bit := (b>>uint(i))&1 != 0
			top := crc&0x8000 != 0
			crc <<= 1
			if bit != top {
				crc ^= 0x1021
			}
		}
	}
	return crc
}

// reqFrame encodes a request as docs/uart-bridge.md lays it out.
func reqFrame(seq, cmd byte, addr uint32, count uint16, data ...uint32) []byte {
	f := []byte{0xA5, 0x5A, seq, cmd, 0, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(f[4:], addr)
	binary.LittleEndian.PutUint16(f[8:], count)
	for _, w := range data {
		f = binary.LittleEndian.AppendUint32(f, w)
	}
	return binary.LittleEndian.AppendUint16(f, refCRC(f[2:]))
}

type resp struct {
	Seq, Cmd, Status byte
	Words            []uint32
}

type host struct {
	t    testing.TB
	port io.ReadWriteCloser // a *serial.Port, or an *os.File for fine-grained deadlines
	rx   []byte
	seq  byte
	// wait per attempt; 1 s when zero. The emulator answers in microseconds;
	// the long default keeps a machine stalled by other load from turning
	// into retries where a test checks that none happened.
	wait time.Duration
	// attempts per request in do; 4 (the spec's) when zero
	attempts int
	// what the host saw
	crcErrs, stale, timeouts int
}

func openSerial(t testing.TB, path string, baud int) *serial.Port {
	t.Helper()
	p, err := serial.OpenPort(&serial.Config{Name: path, Baud: baud, ReadTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return p
}

func openHost(t testing.TB, b *Board) *host {
	t.Helper()
	h := &host{t: t, port: openSerial(t, b.bridgePath, 921600)}
	t.Cleanup(func() { h.port.Close() })
	return h
}

// openHostFile opens the bridge as a plain file, whose reads take exact
// deadlines (tarm/serial's are rounded up to 100 ms): for tests that wait
// through many timeouts.
func openHostFile(t testing.TB, b *Board) *host {
	t.Helper()
	f, err := os.OpenFile(b.bridgePath, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := &host{t: t, port: f}
	t.Cleanup(func() { f.Close() })
	return h
}

// readSome reads what arrives before deadline (nothing is not an error).
func (h *host) readSome(buf []byte, deadline time.Time) (int, error) {
	if f, ok := h.port.(*os.File); ok {
		f.SetReadDeadline(deadline)
		n, err := f.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = nil
		}
		return n, err
	}
	n, err := h.port.Read(buf)
	if err == io.EOF { // tarm/serial's read timeout
		err = nil
	}
	return n, err
}

func (h *host) send(p []byte) {
	h.t.Helper()
	if _, err := h.port.Write(p); err != nil {
		h.t.Fatalf("write: %v", err)
	}
}

// readFrame returns the next response frame with a good CRC, resynchronising
// over anything else, or an error at the deadline.
func (h *host) readFrame(deadline time.Time) (resp, error) {
	buf := make([]byte, 2048)
	for {
		for {
			i := bytes.Index(h.rx, []byte{0x5A, 0xA5})
			if i < 0 {
				if n := len(h.rx); n > 0 && h.rx[n-1] == 0x5A {
					h.rx = h.rx[n-1:]
				} else {
					h.rx = h.rx[:0]
				}
				break
			}
			h.rx = h.rx[i:]
			if len(h.rx) < 7 {
				break
			}
			n := int(binary.LittleEndian.Uint16(h.rx[5:]))
			if h.rx[3]&0x80 == 0 || n > 256 {
				h.rx = h.rx[1:]
				continue
			}
			end := 7 + 4*n + 2
			if len(h.rx) < end {
				break
			}
			if refCRC(h.rx[2:end-2]) != binary.LittleEndian.Uint16(h.rx[end-2:]) {
				h.crcErrs++
				h.rx = h.rx[1:]
				continue
			}
			r := resp{Seq: h.rx[2], Cmd: h.rx[3], Status: h.rx[4]}
			for i := 0; i < n; i++ {
				r.Words = append(r.Words, binary.LittleEndian.Uint32(h.rx[7+4*i:]))
			}
			h.rx = h.rx[end:]
			return r, nil
		}
		if !time.Now().Before(deadline) {
			return resp{}, errTimeout
		}
		n, err := h.readSome(buf, deadline)
		if err != nil {
			return resp{}, err
		}
		h.rx = append(h.rx, buf[:n]...)
	}
}

var errTimeout = errors.New("timeout")

// do sends one request with the next SEQ and retries the identical bytes up
// to attempts times, discarding stale answers.
func (h *host) do(cmd byte, addr uint32, count uint16, data ...uint32) (resp, error) {
	h.seq++
	n := h.attempts
	if n == 0 {
		n = 4
	}
	return h.doFrame(reqFrame(h.seq, cmd, addr, count, data...), n)
}

func (h *host) doFrame(f []byte, attempts int) (resp, error) {
	seq, cmd := f[2], f[3]
	for range attempts {
		h.send(f)
		wait := h.wait
		if wait == 0 {
			wait = time.Second
		}
		deadline := time.Now().Add(wait)
		for {
			r, err := h.readFrame(deadline)
			if err != nil {
				h.timeouts++
				// A partial frame (its COUNT may be corrupt) is dropped at
				// the deadline; the search resumes after its first byte.
				if len(h.rx) > 0 {
					h.rx = h.rx[1:]
				}
				break
			}
			if r.Seq != seq || r.Cmd != cmd|0x80 {
				h.stale++
				continue
			}
			return r, nil
		}
	}
	return resp{}, fmt.Errorf("no answer to SEQ %d after %d attempts (crc errors %d, stale %d)", seq, attempts, h.crcErrs, h.stale)
}

func (h *host) read(addr uint32) uint32 {
	h.t.Helper()
	r, err := h.do(0x01, addr, 1)
	if err != nil {
		h.t.Fatalf("READ 0x%x: %v", addr, err)
	}
	if r.Status != 0 || len(r.Words) != 1 {
		h.t.Fatalf("READ 0x%x: status %d, %d words", addr, r.Status, len(r.Words))
	}
	return r.Words[0]
}

// ---- the pty service ------------------------------------------------------

func TestServeRecordsPathsAndRawMode(t *testing.T) {
	b := testBoard(t, rackOpts{})
	for _, p := range []string{b.consolePath, b.bridgePath} {
		if !strings.HasPrefix(p, "/dev/pts/") {
			t.Fatalf("slave path %q is not a pty", p)
		}
	}
	if b.consolePath == b.bridgePath {
		t.Fatal("console and bridge share a pty")
	}
	cp, err := b.rack.ConsolePath("b0")
	if err != nil || cp != b.consolePath {
		t.Fatalf("ConsolePath = %q, %v", cp, err)
	}
	// Every byte value crosses unchanged both ways while no one has set a
	// mode: raw, no echo (an echo would come back to the bridge).
	f, err := os.OpenFile(b.bridgePath, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all := make([]byte, 0, 512)
	for i := 0; i < 256; i++ {
		all = append(all, byte(i))
	}
	all = append(all, '\r', '\n', '\r', 0x03, 0x04, 0x1a)
	frame := reqFrame(3, 0x01, tdID, 1)
	if _, err := f.Write(append(all, frame...)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 0, 64)
	buf := make([]byte, 64)
	f.SetReadDeadline(time.Now().Add(2 * time.Second))
	for len(got) < 13 {
		n, err := f.Read(buf)
		if err != nil {
			t.Fatalf("after %x: %v", got, err)
		}
		got = append(got, buf[:n]...)
	}
	want := appendTestResp(3, 0x81, 0, tdIDValue)
	if !bytes.Equal(got, want) {
		t.Fatalf("answer %x, want %x (the bytes were altered on the way)", got, want)
	}
}

// appendTestResp builds a response with the test's own encoder.
func appendTestResp(seq, cmd, status byte, words ...uint32) []byte {
	f := []byte{0x5A, 0xA5, seq, cmd, status, 0, 0}
	binary.LittleEndian.PutUint16(f[5:], uint16(len(words)))
	for _, w := range words {
		f = binary.LittleEndian.AppendUint32(f, w)
	}
	return binary.LittleEndian.AppendUint16(f, refCRC(f[2:]))
}

func TestPTYReopenManyTimes(t *testing.T) {
	b := testBoard(t, rackOpts{})
	waitPrompt(t, b)
	for i := 0; i < 40; i++ {
		p := openSerial(t, b.bridgePath, 921600)
		h := &host{t: t, port: p}
		h.seq = byte(i * 3)
		if v := h.read(tdID); v != tdIDValue {
			t.Fatalf("reopen %d: ID 0x%x", i, v)
		}
		h.port.Close()

		c := openConsole(t, b)
		c.send("id\n")
		c.expect(`board=b0 kind=zcu102 part=\S+ dna=0x[0-9a-f]{8}\r\n`, 2*time.Second)
		c.port.Close()
	}
	// A session that closes without reading leaves nothing for the next:
	// what the board sent meanwhile is lost, as on a USB-UART. (The flush
	// follows the close by the time a goroutine takes to wake; a session
	// opened within those microseconds may still read the tail.)
	c := openConsole(t, b)
	c.send("version\n")
	time.Sleep(100 * time.Millisecond)
	c.port.Close()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		pt := b.srv.console
		pt.mu.Lock()
		opens := pt.opens
		pt.mu.Unlock()
		if opens == 0 {
			break // the watcher saw the close (and flushed)
		}
		if time.Now().After(deadline) {
			t.Fatal("the console's watcher did not see the close")
		}
	}
	c = openConsole(t, b)
	c.send("id\n")
	out := c.expect(`dna=0x[0-9a-f]{8}\r\n`, 2*time.Second)
	if strings.Contains(out, FirmwareVersion) {
		t.Fatalf("the new session got the old session's output:\n%q", out)
	}
	c.port.Close()
}

func TestNoPTYRackHasNoPaths(t *testing.T) {
	r, err := startRack(t, rackOpts{noPTY: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ConsolePath("b0"); err == nil {
		t.Fatal("ConsolePath of a rack without ptys succeeded")
	}
	b, _ := r.Board("b0")
	if out := b.ConsoleCommand("id"); !strings.HasPrefix(out, "board=b0 kind=zcu102 ") {
		t.Fatalf("in-process console: %q", out)
	}
}

func TestCloseStopsEverything(t *testing.T) {
	r, err := startRack(t, rackOpts{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Board("b0")
	h := openHost(t, b)
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("Close hangs\n%s", buf[:n])
	}
	// The runner's descriptor now fails (EIO) or reads nothing; it must not hang.
	h.port.Write(reqFrame(1, 0, 0, 0))
	if _, err := h.readFrame(time.Now().Add(200 * time.Millisecond)); err == nil {
		t.Fatal("a closed board answered")
	}
}

// TestNoForbiddenImports: the emulator's serving code must not share code
// with the host side of the bridge (two independent readings of one spec)
// nor with the golden models.
func TestNoForbiddenImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if p == "github.com/labrunner/labrunner/drivers/uartbridge" || strings.HasPrefix(p, "github.com/labrunner/labrunner/drivers/uartbridge/") ||
				p == "github.com/labrunner/labrunner/golden" || strings.HasPrefix(p, "github.com/labrunner/labrunner/golden/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}

// ---- console helpers ----------------------------------------------------

type conTest struct {
	t    testing.TB
	port *serial.Port
	raw  []byte
	cpos int // consumed length of the clean view
}

func openConsole(t testing.TB, b *Board) *conTest {
	t.Helper()
	c := &conTest{t: t, port: openSerial(t, b.consolePath, 115200)}
	t.Cleanup(func() { c.port.Close() })
	return c
}

func (c *conTest) send(s string) {
	c.t.Helper()
	if _, err := c.port.Write([]byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// kernelMsg is a complete kernel message, wherever it starts.
var kernelMsg = regexp.MustCompile(`\[ *\d+\.\d{6}\] [^\r\n]*\r\n`)

// clean removes complete kernel messages, and holds back a trailing one not
// complete yet, so that the clean view only grows as bytes arrive.
func clean(raw []byte) string {
	s := kernelMsg.ReplaceAllString(string(raw), "")
	if i := strings.LastIndexByte(s, '['); i >= 0 && !strings.Contains(s[i:], "\n") {
		s = s[:i]
	}
	return s
}

// expect waits until pattern matches the clean view after what earlier
// expects consumed, and returns the clean text up to the match's end.
func (c *conTest) expect(pattern string, d time.Duration) string {
	c.t.Helper()
	re := regexp.MustCompile(pattern)
	deadline := time.Now().Add(d)
	buf := make([]byte, 4096)
	for {
		s := clean(c.raw)
		if loc := re.FindStringIndex(s[c.cpos:]); loc != nil {
			out := s[c.cpos : c.cpos+loc[1]]
			c.cpos += loc[1]
			return out
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no /%s/ within %v; clean view after the last match:\n%q\nraw tail:\n%q", pattern, d, s[c.cpos:], tail(c.raw, 400))
		}
		n, err := c.port.Read(buf)
		if err != nil && err != io.EOF {
			c.t.Fatal(err)
		}
		c.raw = append(c.raw, buf[:n]...)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// waitPrompt waits for the firmware to boot.
func waitPrompt(t testing.TB, b *Board) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		b.mu.Lock()
		up := b.powered && time.Since(b.booted) > b.bootDuration()+20*time.Millisecond
		b.mu.Unlock()
		if up {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("board did not boot")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
