package bridgetest

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync"
	"time"

	"github.com/labrunner/labrunner/drivers/uartbridge"
)

// Fault is damage a FaultLine does to a frame.
type Fault int

const (
	// DropResponse loses an answer to the next request: the host times
	// out.
	DropResponse Fault = iota
	// CorruptResponse flips one bit of an answer to the next request, in
	// its eighth byte (the first data byte, or the CRC of an answer
	// without data): the host sees a CRC mismatch.
	CorruptResponse
	// StaleResponse sends a copy of the previous response frame (an old
	// SEQ) before the answer to the next request, as a line that delivers
	// a late answer.
	StaleResponse
	// CorruptRequest flips one bit of the next request's seventh byte (in
	// ADDR): the device sees a CRC mismatch and does not answer.
	CorruptRequest
)

// FaultLine sits between the host's driver and the device's port and
// damages frames on demand, the same way whatever the device is. The host
// end is the FaultLine itself (an io.ReadWriteCloser for uartbridge.New).
// Responses are passed on whole frames at a time; bytes that are not part
// of a frame pass as they come.
//
// Faults on answers are bound to the SEQ of the first new request written
// after Arm, so that a late copy of an earlier answer (a host that retried
// a slow request gets two) cannot take the damage meant for the next one;
// nor can a retry's copy of the earlier request that the host's writer
// hands on after Arm (the request was answered by its first copy while its
// retry waited to be written): a request with the SEQ of the one before is
// a copy of it.
type FaultLine struct {
	dev *Port
	pr  *io.PipeReader
	pw  *io.PipeWriter

	mu    sync.Mutex
	armed map[Fault]int // waiting for the next request
	bound map[Fault]int // for answers with SEQ seq
	seq   byte
	// last is the SEQ of the last request written (any: seen).
	last byte
	seen bool
	// corrupting: CorruptRequest has begun damaging requests (from a new
	// one on) and has more to damage.
	corrupting bool
	prev       []byte // the last response frame passed on, undamaged
	done       chan struct{}
}

// NewFaultLine starts passing bytes between the host and dev.
func NewFaultLine(dev *Port) *FaultLine {
	pr, pw := io.Pipe()
	f := &FaultLine{dev: dev, pr: pr, pw: pw, armed: map[Fault]int{}, bound: map[Fault]int{}, done: make(chan struct{})}
	go f.pump()
	return f
}

// Arm applies fault n times: to the next request (CorruptRequest: n
// requests), or to the answers to the next request.
func (f *FaultLine) Arm(fault Fault, n int) {
	f.mu.Lock()
	f.armed[fault] += n
	f.mu.Unlock()
}

// Disarm drops every fault not yet applied.
func (f *FaultLine) Disarm() {
	f.mu.Lock()
	clear(f.armed)
	clear(f.bound)
	f.corrupting = false
	f.mu.Unlock()
}

// take consumes one fault of that kind meant for an answer with SEQ seq.
func (f *FaultLine) take(fault Fault, seq byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bound[fault] == 0 || seq != f.seq {
		return false
	}
	f.bound[fault]--
	return true
}

func (f *FaultLine) Read(p []byte) (int, error) { return f.pr.Read(p) }

// Write passes a request on. The driver writes each frame in one call.
func (f *FaultLine) Write(p []byte) (int, error) {
	if len(p) > 6 && p[0] == 0xA5 && p[1] == 0x5A {
		f.mu.Lock()
		fresh := !f.seen || p[2] != f.last
		f.seen, f.last = true, p[2]
		if fresh {
			// A new request (not a copy of the one before, the one the
			// faults may be bound to): faults armed since take it.
			for _, k := range []Fault{DropResponse, CorruptResponse, StaleResponse} {
				if f.armed[k] > 0 {
					f.seq = p[2]
					f.bound[k], f.armed[k] = f.armed[k], 0
				}
			}
		}
		// Damage to requests, likewise, starts at a new request: a late
		// copy of the one before Arm passes undamaged.
		corrupt := f.armed[CorruptRequest] > 0 && (fresh || f.corrupting)
		if corrupt {
			f.armed[CorruptRequest]--
			f.corrupting = f.armed[CorruptRequest] > 0
		}
		f.mu.Unlock()
		if corrupt {
			q := bytes.Clone(p)
			q[6] ^= 0x08
			p = q
		}
	}
	return f.dev.Write(p)
}

// Close closes the host end and the device port, and waits for the pump.
// The host end goes first: a pump blocked handing an answer to a host that
// stopped reading (a closed Bridge) must return before it can see the port
// closed.
func (f *FaultLine) Close() error {
	f.pr.Close()
	err := f.dev.Close()
	<-f.done
	return err
}

// pump passes the device's bytes to the host, a response frame at a time.
func (f *FaultLine) pump() {
	defer close(f.done)
	buf := make([]byte, 4096)
	var pend []byte
	last := time.Now()
	for {
		n, err := f.dev.Read(buf)
		if err != nil {
			f.pw.CloseWithError(err)
			return
		}
		if n > 0 {
			pend = append(pend, buf[:n]...)
			last = time.Now()
		}
		for {
			skip, frame := splitResponse(pend)
			if skip > 0 {
				f.pw.Write(pend[:skip])
				pend = pend[skip:]
				continue
			}
			if frame == 0 {
				break
			}
			f.pass(bytes.Clone(pend[:frame]))
			pend = pend[frame:]
		}
		// A partial frame the device never finished: hand it on as it is.
		if len(pend) > 0 && time.Since(last) > 500*time.Millisecond {
			f.pw.Write(pend)
			pend = nil
		}
	}
}

// pass hands one response frame to the host, through the armed faults.
func (f *FaultLine) pass(frame []byte) {
	f.mu.Lock()
	prev := f.prev
	f.prev = frame
	f.mu.Unlock()
	seq := frame[2]
	if prev != nil && f.take(StaleResponse, seq) {
		f.pw.Write(prev)
	}
	if f.take(DropResponse, seq) {
		return
	}
	if len(frame) > 7 && f.take(CorruptResponse, seq) {
		frame = bytes.Clone(frame)
		frame[7] ^= 0x10
	}
	f.pw.Write(frame)
}

// splitResponse looks at the start of b: skip > 0 is a run of bytes that
// cannot start a response frame (pass them on as they are); else frame > 0
// is the length of a whole response frame at the start (its CRC is not
// checked: the host judges it); both 0: more bytes are needed.
func splitResponse(b []byte) (skip, frame int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] != 0x5A {
		i := bytes.IndexByte(b, 0x5A)
		if i < 0 {
			return len(b), 0
		}
		return i, 0
	}
	if len(b) < 2 {
		return 0, 0
	}
	if b[1] != 0xA5 {
		return 1, 0
	}
	if len(b) < 7 {
		return 0, 0
	}
	count := int(binary.LittleEndian.Uint16(b[5:7]))
	if count > uartbridge.MaxCount {
		return 1, 0
	}
	if n := 9 + 4*count; len(b) >= n {
		return 0, n
	}
	return 0, 0
}
