// Package bridgetest is the conformance suite of the UART bridge's device
// side (docs/uart-bridge.md): one set of tests that every implementation of
// the device runs, so that they cannot drift apart. It runs against the
// emulated boards' bridge (boards/emu, with the design bridge-example) and
// against the RTL under Verilator co-simulation (rtl/), each serving its
// bridge UART on a pseudo-terminal.
//
// The tests speak to the device two ways: through labrunner's own driver
// (drivers/uartbridge), over a FaultLine that can damage or lose frames on
// the way, and with hand-built frames (Raw) for what the driver never
// sends: unknown commands, bad counts, garbage, split and back-to-back
// frames.
package bridgetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tarm/serial"

	"github.com/labrunner/labrunner/drivers/uartbridge"
)

// Port is an open serial line whose reads return (0, nil) when no byte
// came within the port's read timeout, never io.EOF for that.
type Port struct{ p *serial.Port }

// OpenPort opens a serial port (a USB-UART or a pseudo-terminal) raw, 8N1.
func OpenPort(path string, baud int) (*Port, error) {
	p, err := serial.OpenPort(&serial.Config{Name: path, Baud: baud, ReadTimeout: 20 * time.Millisecond,
		Size: 8, Parity: serial.ParityNone, StopBits: serial.Stop1})
	if err != nil {
		return nil, fmt.Errorf("open %s at %d baud: %w", path, baud, err)
	}
	return &Port{p: p}, nil
}

func (p *Port) Read(b []byte) (int, error) {
	n, err := p.p.Read(b)
	if n == 0 && err == io.EOF {
		return 0, nil // tarm/serial's read timeout
	}
	return n, err
}

func (p *Port) Write(b []byte) (int, error) { return p.p.Write(b) }
func (p *Port) Close() error                { return p.p.Close() }

// Flush discards whatever the line delivers until it has been quiet for
// quiet (a late answer from an earlier test).
func (p *Port) Flush(quiet time.Duration) {
	buf := make([]byte, 4096)
	last := time.Now()
	for time.Since(last) < quiet {
		n, err := p.Read(buf)
		if err != nil {
			return
		}
		if n > 0 {
			last = time.Now()
		}
	}
}

// Frame builds a request frame byte for byte: any CMD, any COUNT, the
// words given as DATA (none for a command without data). The host codec
// refuses what a version-1 host never sends; the device must cope anyway.
func Frame(seq, cmd uint8, addr uint32, count uint16, data ...uint32) []byte {
	f := []byte{0xA5, 0x5A, seq, cmd}
	f = binary.LittleEndian.AppendUint32(f, addr)
	f = binary.LittleEndian.AppendUint16(f, count)
	for _, w := range data {
		f = binary.LittleEndian.AppendUint32(f, w)
	}
	return binary.LittleEndian.AppendUint16(f, uartbridge.CRC16(f[2:]))
}

// Resp is a response frame as received. Cmd is the raw CMD byte (with the
// response bit), so that the answer to an unknown command can be read.
type Resp struct {
	Seq, Cmd, Status uint8
	Words            []uint32
	Raw              []byte
}

// Raw is a hand-driven session on a port: it writes frames and reads
// response frames, strictly. On a clean line any byte that is not part of a
// response frame with a good CRC is an error.
type Raw struct {
	P   *Port
	buf []byte
}

// Send writes bytes as they are.
func (r *Raw) Send(b []byte) error {
	_, err := r.P.Write(b)
	return err
}

// errNoFrame: the deadline passed before a complete frame.
var errNoFrame = errors.New("no response frame")

// Next returns the next response frame, or errNoFrame at the deadline.
func (r *Raw) Next(deadline time.Time) (Resp, error) {
	buf := make([]byte, 4096)
	for {
		if f, n, err := scanResponse(r.buf); err != nil {
			return Resp{}, fmt.Errorf("%w (received % x)", err, r.buf)
		} else if n > 0 {
			r.buf = r.buf[n:]
			return f, nil
		}
		if time.Now().After(deadline) {
			if len(r.buf) > 0 {
				return Resp{}, fmt.Errorf("%w: %d bytes of a partial frame: % x", errNoFrame, len(r.buf), r.buf)
			}
			return Resp{}, errNoFrame
		}
		n, err := r.P.Read(buf)
		if err != nil {
			return Resp{}, err
		}
		r.buf = append(r.buf, buf[:n]...)
	}
}

// Quiet checks that nothing arrives for d.
func (r *Raw) Quiet(d time.Duration) error {
	f, err := r.Next(time.Now().Add(d))
	if errors.Is(err, errNoFrame) && len(r.buf) == 0 {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("unexpected answer SEQ 0x%02x CMD 0x%02x STATUS %d", f.Seq, f.Cmd, f.Status)
}

// Do sends prefix (garbage, other frames: may be nil) and then frame in
// one write, and returns the next answer, which must be frame's, within
// wait.
func (r *Raw) Do(prefix, frame []byte, wait time.Duration) (Resp, error) {
	if err := r.Send(append(append([]byte(nil), prefix...), frame...)); err != nil {
		return Resp{}, err
	}
	resp, err := r.Next(time.Now().Add(wait))
	if err != nil {
		return Resp{}, err
	}
	if resp.Seq != frame[2] {
		return resp, fmt.Errorf("answer has SEQ 0x%02x, the request 0x%02x", resp.Seq, frame[2])
	}
	return resp, nil
}

// scanResponse looks for one response frame at the start of b. It returns
// the frame and the bytes it used, (_, 0, nil) when more bytes are needed,
// and an error for bytes that are not a good frame: garbage before a sync
// pair, a COUNT above 256, a CRC mismatch. It does not check CMD: the
// answer to an unknown command carries that command with bit 7 set.
func scanResponse(b []byte) (Resp, int, error) {
	if len(b) == 0 {
		return Resp{}, 0, nil
	}
	if b[0] != 0x5A || (len(b) > 1 && b[1] != 0xA5) {
		return Resp{}, 0, fmt.Errorf("byte 0x%02x where a response frame should start", b[0])
	}
	if len(b) < 7 {
		return Resp{}, 0, nil
	}
	count := int(binary.LittleEndian.Uint16(b[5:7]))
	if count > uartbridge.MaxCount {
		return Resp{}, 0, fmt.Errorf("response COUNT %d above %d", count, uartbridge.MaxCount)
	}
	n := 9 + 4*count
	if len(b) < n {
		return Resp{}, 0, nil
	}
	if got, want := binary.LittleEndian.Uint16(b[n-2:n]), uartbridge.CRC16(b[2:n-2]); got != want {
		return Resp{}, 0, fmt.Errorf("response CRC 0x%04x, computed 0x%04x", got, want)
	}
	r := Resp{Seq: b[2], Cmd: b[3], Status: b[4], Raw: bytes.Clone(b[:n])}
	for i := 0; i < count; i++ {
		r.Words = append(r.Words, binary.LittleEndian.Uint32(b[7+4*i:]))
	}
	return r, n, nil
}
