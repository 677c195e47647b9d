package uartbridge

import (
	"errors"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/labrunner/labrunner/internal/pollpty"
)

// The test peer is the device side of docs/uart-bridge.md, written for the
// tests, with misbehaviour that can be switched on.
//
// Register map:
//
//	0x0000-0x0FFF  RAM registers
//	0x1000-0x10FF  FIFO window: a write pushes, a read pops (0xEEEEEEEE when empty)
//	0x2000         read-only ID register (peerID)
//	elsewhere      not decoded: BUS_ERROR
const (
	peerRAMEnd   = 0x1000
	peerFIFO     = 0x1000
	peerFIFOEnd  = 0x1100
	peerROAddr   = 0x2000
	peerFullAddr = 0x2004 // a push into a FIFO that stays full: REFUSED
	peerID       = 0x1D000001
	peerDeviceID = 0x5A170001
	fifoEmpty    = 0xEEEEEEEE
	// deviceByteTimeout is the device's partial-frame timeout (page,
	// "Resynchronisation").
	deviceByteTimeout = 100 * time.Millisecond
)

// deadlineConn is what the peer reads: a pty master or a net.Conn.
type deadlineConn interface {
	io.ReadWriteCloser
	SetReadDeadline(time.Time) error
}

type peer struct {
	conn deadlineConn
	done chan struct{}

	mu sync.Mutex
	// Device state.
	ram  map[uint32]uint32
	fifo []uint32
	pops int
	// INFO answer; tests may change it.
	magic, version, maxCount uint32
	// Misbehaviour, each consumed one response at a time. INFO requests
	// are spared, so that a late copy of the session-start INFO cannot use
	// up what a test aims at the operation under test.
	busy    int           // answer BUSY (not executing, not remembering)
	drop    int           // execute, then lose the response
	stale   int           // send two stale answers (old SEQ; right SEQ, wrong CMD) first
	corrupt []int         // flip bit 0x40 of this byte (negative: from the end)
	garbage [][]byte      // send these bytes before the response
	silent  bool          // never answer
	slow    time.Duration // execute the next request this long (a device busy with it)
	// lead: before executing the next request slowly, send a copy of the
	// answer to the request before it (a duplicate answer to a retried
	// request, still on the line when the next one went out).
	lead bool
	deaf int // do not hear the next requests, as if their CRC had failed
	// spare is how many requests (INFO aside) drop and deaf let pass
	// before they act.
	spare int
	// The window (page, "Window"): maxWindow 0 is a device without the
	// capability (INFO answers 4 words; windowed commands are unknown).
	maxWindow int
	win       int   // the window open: 1 when none
	next      uint8 // the SEQ a windowed request must have
	// Memory of the last executed requests (page, "Sequence numbers"):
	// the last one, or the last win.
	mem []peerMem
	// Counters.
	requests, executed, replays, crcFails, sequence int
	rxBytes, txBytes                                int
	cmds                                            []Cmd
	counts                                          []uint16
	// maxBurst is the most requests heard in one read of the line: more
	// than 1 when the host has several outstanding.
	maxBurst int
}

type peerMem struct {
	seq  uint8
	crc  uint16
	resp []byte
}

// reset is a reset of the device: its window closes and it forgets.
func (p *peer) reset() {
	p.win, p.mem = 1, nil
}

func newPeer(conn deadlineConn) *peer {
	p := &peer{conn: conn, done: make(chan struct{}), ram: map[uint32]uint32{},
		magic: InfoMagic, version: ProtocolVersion, maxCount: MaxCount, win: 1}
	go p.run()
	return p
}

// openPTY returns a pty pair: the master as a pollable file (so that read
// deadlines work and Close interrupts a read) and the slave's path. The
// slave stays open until the test ends: with no slave open, reads of the
// master fail with EIO.
func openPTY(t testing.TB) (*os.File, string) {
	t.Helper()
	master, slave, err := pollpty.Open()
	if err != nil {
		t.Fatalf("open pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { slave.Close() })
	return master, slave.Name()
}

func (p *peer) close() {
	p.conn.Close()
	<-p.done
}

func (p *peer) run() {
	defer close(p.done)
	dec := NewRequestDecoder()
	buf := make([]byte, 4096)
	for {
		// A partial frame waits at most deviceByteTimeout for its next byte.
		dl := time.Time{}
		if dec.Buffered() > 0 {
			dl = time.Now().Add(deviceByteTimeout)
		}
		if err := p.conn.SetReadDeadline(dl); err != nil {
			return
		}
		n, err := p.conn.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.rxBytes += n
			p.mu.Unlock()
			dec.Write(buf[:n])
			p.serve(dec)
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				dec.Expire()
				p.serve(dec)
				continue
			}
			return
		}
	}
}

func (p *peer) serve(dec *RequestDecoder) {
	heard := 0
	for {
		req, crc, err := dec.Next()
		if errors.Is(err, ErrNeedMore) {
			p.mu.Lock()
			p.maxBurst = max(p.maxBurst, heard)
			p.mu.Unlock()
			return
		}
		heard++
		if err != nil {
			if errors.Is(err, ErrCRCMismatch) {
				p.mu.Lock()
				p.crcFails++
				p.mu.Unlock()
			}
			continue // never answer a frame that failed its checks
		}
		p.mu.Lock()
		slow := p.slow
		var lead []byte
		if req.Cmd != CmdInfo {
			p.slow = 0
			if p.lead && len(p.mem) > 0 {
				lead = p.mem[len(p.mem)-1].resp
			}
			p.lead = false
		}
		p.mu.Unlock()
		if lead != nil {
			if _, err := p.conn.Write(lead); err != nil {
				return
			}
		}
		if slow > 0 && req.Cmd != CmdInfo {
			// The device executes for that long; the host's retries
			// queue on the line meanwhile, as on a real UART.
			time.Sleep(slow)
		}
		for _, out := range p.answer(req, crc) {
			// Counted before writing: the host may have read the bytes
			// before Write returns here.
			p.mu.Lock()
			p.txBytes += len(out)
			p.mu.Unlock()
			if _, err := p.conn.Write(out); err != nil {
				return
			}
		}
	}
}

// answer returns the byte strings to send for req, in order.
func (p *peer) answer(req Request, crc uint16) [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	spared := req.Cmd == CmdInfo
	harm := !spared && p.spare == 0
	if !spared && p.spare > 0 && (p.deaf > 0 || p.drop > 0) {
		p.spare--
	}
	if p.deaf > 0 && harm {
		p.deaf--
		p.crcFails++
		return nil
	}
	p.requests++
	p.cmds = append(p.cmds, req.Cmd)
	p.counts = append(p.counts, req.Count)
	if p.silent {
		return nil
	}
	var resp []byte
	remembered := -1
	for i, m := range p.mem {
		if m.seq == req.Seq && m.crc == crc && !(spared && p.maxWindow > 0) {
			remembered = i
		}
	}
	windowed := req.Cmd.Windowed() && p.maxWindow > 0
	switch {
	case remembered >= 0:
		p.replays++
		resp = p.mem[remembered].resp
	case windowed && (p.win < 2 || req.Seq != p.next):
		p.sequence++
		resp, _ = AppendResponse(nil, Response{Seq: req.Seq, Cmd: req.Cmd, Status: StatusSequence})
	case p.busy > 0 && !spared:
		// BUSY is not an execution: nothing is remembered.
		p.busy--
		resp, _ = AppendResponse(nil, Response{Seq: req.Seq, Cmd: req.Cmd, Status: StatusBusy})
	default:
		if spared && p.maxWindow > 0 {
			p.win, p.mem = min(max(int(req.Count), 1), p.maxWindow), nil
		}
		r := p.execute(req)
		resp, _ = AppendResponse(nil, r)
		p.executed++
		if len(p.mem) >= p.win {
			p.mem = p.mem[1:]
		}
		p.mem = append(p.mem, peerMem{seq: req.Seq, crc: crc, resp: resp})
		p.next = req.Seq + 1
	}
	if spared {
		return [][]byte{resp}
	}
	if p.drop > 0 && harm {
		p.drop--
		return nil
	}
	var out [][]byte
	if p.stale > 0 {
		p.stale--
		other := CmdInfo
		if req.Cmd == CmdInfo {
			other = CmdRead
		}
		s1, _ := AppendResponse(nil, Response{Seq: req.Seq - 1, Cmd: req.Cmd, Data: []uint32{0xDEADBEEF}})
		s2, _ := AppendResponse(nil, Response{Seq: req.Seq, Cmd: other, Data: []uint32{0xDEADBEEF}})
		out = append(out, s1, s2)
	}
	if len(p.garbage) > 0 {
		out = append(out, p.garbage[0])
		p.garbage = p.garbage[1:]
	}
	if len(p.corrupt) > 0 {
		i := p.corrupt[0]
		p.corrupt = p.corrupt[1:]
		if i < 0 {
			i += len(resp)
		}
		resp = append([]byte(nil), resp...)
		resp[i] ^= 0x40
	}
	return append(out, resp)
}

func (p *peer) execute(req Request) Response {
	r := Response{Seq: req.Seq, Cmd: req.Cmd}
	fail := func(s Status) Response { r.Status = s; r.Data = nil; return r }
	cmd := req.Cmd
	if p.maxWindow > 0 {
		cmd = cmd.Plain()
	}
	switch cmd {
	case CmdInfo:
		r.Data = []uint32{p.magic, p.version, p.maxCount, peerDeviceID}
		if p.maxWindow > 0 {
			r.Data = append(r.Data, CapWindow, uint32(p.win))
		}
		return r
	case CmdRead, CmdWrite:
		if req.Count != 1 {
			return fail(StatusBadCount)
		}
	case CmdReadBurst, CmdWriteBurst:
		if req.Count == 0 || uint32(req.Count) > p.maxCount {
			return fail(StatusBadCount)
		}
	default:
		return fail(StatusBadCmd)
	}
	if req.Addr%4 != 0 {
		return fail(StatusAlign)
	}
	for i := range uint32(req.Count) {
		a := req.Addr + 4*i
		if cmd == CmdRead || cmd == CmdReadBurst {
			v, st := p.read(a)
			if st != StatusOK {
				return fail(st)
			}
			r.Data = append(r.Data, v)
		} else if st := p.write(a, req.Data[i]); st != StatusOK {
			return fail(st)
		}
	}
	return r
}

func (p *peer) read(a uint32) (uint32, Status) {
	switch {
	case a < peerRAMEnd:
		return p.ram[a], StatusOK
	case a >= peerFIFO && a < peerFIFOEnd:
		if len(p.fifo) == 0 {
			return fifoEmpty, StatusOK
		}
		v := p.fifo[0]
		p.fifo = p.fifo[1:]
		p.pops++
		return v, StatusOK
	case a == peerROAddr:
		return peerID, StatusOK
	}
	return 0, StatusBusError
}

func (p *peer) write(a, v uint32) Status {
	switch {
	case a < peerRAMEnd:
		p.ram[a] = v
	case a >= peerFIFO && a < peerFIFOEnd:
		p.fifo = append(p.fifo, v)
	case a == peerROAddr:
		return StatusReadOnly
	case a == peerFullAddr:
		return StatusRefused
	default:
		return StatusBusError
	}
	return StatusOK
}

// with runs f under the peer's lock, to set misbehaviour or read state.
func (p *peer) with(f func(p *peer)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}
