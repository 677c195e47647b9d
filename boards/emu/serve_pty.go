package emu

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/labrunner/labrunner/internal/pollpty"
)

// ptyEnd is the board's side of one UART: the master of a pseudo-terminal
// pair whose slave path the runner opens with tarm/serial, as it would open a
// USB-UART.
//
// Two properties of a real UART are kept:
//
//   - The runner may open, close and reopen the path any number of times. The
//     board holds the slave open itself, so the master never sees the EOF/EIO
//     a pty reports once every slave descriptor is closed.
//   - What the board sends while nobody has the port open is lost, as on a
//     USB-UART whose host driver is not reading. Without this, a pty would
//     queue hours of console output (kernel noise, boot logs) for the next
//     opener, and master writes would block once the queue is full (about
//     20 KiB on Linux). Opens and closes of the slave are watched with
//     inotify; output while no one else has it open is dropped, and the
//     bytes still queued from an earlier session are flushed when someone
//     opens it again. Where inotify is unavailable, the port counts as always
//     open and a write that cannot complete within writeWait is dropped
//     instead.
type ptyEnd struct {
	board string
	what  string // "console" or "bridge", for messages
	path  string

	master *os.File // non-blocking, so reads and writes take deadlines and Close wakes them
	shut   atomic.Bool

	mu      sync.Mutex // guards everything below, and serialises writes
	slave   *os.File   // held open, never read
	ifd     int        // inotify descriptor watching path, or -1
	ino     *os.File   // the same inotify queue, for watch(); nil without inotify
	opens   int        // opens of the slave by others, minus closes
	closed  bool
	evbuf   []byte
	dropped int64 // bytes sent while nobody listened, or that timed out
}

// writeWait bounds one write to the master: a reader that has the port open
// but has stopped reading loses output after it, as a real UART's FIFO
// overflows.
const writeWait = 250 * time.Millisecond

func openPTY(board, what string, baud int) (*ptyEnd, error) {
	m, s, err := pollpty.Open()
	if err != nil {
		return nil, fmt.Errorf("board %s: open a pseudo-terminal for the %s: %w (is /dev/ptmx available and devpts mounted?)", board, what, err)
	}
	p := &ptyEnd{board: board, what: what, path: s.Name(), master: m, slave: s, ifd: -1}
	if err := p.makeRaw(baud); err != nil {
		p.close()
		return nil, err
	}
	// Watch the slave only after opening it ourselves, so that our own open
	// is not counted.
	if ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err == nil {
		if _, err := unix.InotifyAddWatch(ifd, p.path, unix.IN_OPEN|unix.IN_CLOSE); err == nil {
			p.ifd = ifd
			p.evbuf = make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
			// A second descriptor of the same queue for the poller, so that
			// the watcher can wait on it while listenedLocked reads raw.
			if dfd, err := unix.Dup(ifd); err == nil {
				unix.CloseOnExec(dfd)
				p.ino = os.NewFile(uintptr(dfd), "inotify:"+p.path)
			}
		} else {
			unix.Close(ifd)
		}
	}
	return p, nil
}

// makeRaw puts the line in raw mode (cfmakeraw): no echo, no line editing,
// no CR/LF translation, 8 bits, so that binary frames pass unchanged until
// the runner sets its own mode (tarm/serial sets 8N1 raw as well).
func (p *ptyEnd) makeRaw(baud int) error {
	rc, err := p.slave.SyscallConn()
	if err != nil {
		return fmt.Errorf("board %s: %s pseudo-terminal %s: %w", p.board, p.what, p.path, err)
	}
	var terr error
	if err := rc.Control(func(fd uintptr) {
		t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if err != nil {
			terr = err
			return
		}
		t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		t.Oflag &^= unix.OPOST
		t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		t.Cflag &^= unix.CSIZE | unix.PARENB
		t.Cflag |= unix.CS8 | unix.CREAD | unix.CLOCAL
		if b, ok := baudBits[baud]; ok {
			t.Cflag = t.Cflag&^unix.CBAUD | b
			t.Ispeed, t.Ospeed = b, b
		}
		t.Cc[unix.VMIN] = 1
		t.Cc[unix.VTIME] = 0
		terr = unix.IoctlSetTermios(int(fd), unix.TCSETS, t)
	}); err != nil {
		terr = err
	}
	if terr != nil {
		return fmt.Errorf("board %s: %s pseudo-terminal %s: set raw mode: %w", p.board, p.what, p.path, terr)
	}
	return nil
}

// baudBits maps the rates the board kinds use to termios speed bits. The
// speed of a pty is only recorded, never enforced.
var baudBits = map[int]uint32{
	9600: unix.B9600, 19200: unix.B19200, 38400: unix.B38400, 57600: unix.B57600,
	115200: unix.B115200, 230400: unix.B230400, 460800: unix.B460800,
	921600: unix.B921600, 1000000: unix.B1000000, 2000000: unix.B2000000,
	3000000: unix.B3000000, 4000000: unix.B4000000,
}

// read reads from the master until deadline (zero: no deadline). It
// returns os.ErrDeadlineExceeded at the deadline and os.ErrClosed once the
// end is closed. EIO (every slave descriptor closed, which holding the slave
// should prevent) is reported as errHungUp so that callers pause and retry.
func (p *ptyEnd) read(b []byte, deadline time.Time) (int, error) {
	if p.shut.Load() {
		return 0, os.ErrClosed
	}
	if err := p.master.SetReadDeadline(deadline); err != nil {
		// The only way it fails on a pollable file: the file was closed
		// (it reports the poller's own "use of closed file").
		return 0, fmt.Errorf("%w: %w", os.ErrClosed, err)
	}
	n, err := p.master.Read(b)
	switch {
	case err == nil:
	case p.shut.Load():
		err = os.ErrClosed
	case errors.Is(err, syscall.EIO):
		err = errHungUp
	}
	return n, err
}

var errHungUp = errors.New("pseudo-terminal hung up (EIO)")

// buffered reports how many bytes the runner sent that the board has not
// read yet. A read whose deadline passed while the goroutine was not
// running reports the timeout without looking at the line (the runtime
// checks the deadline first); bytes that were waiting then did arrive in
// time.
func (p *ptyEnd) buffered() int {
	rc, err := p.master.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	rc.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	})
	return n
}

// write sends b to whoever has the port open. It reports whether the bytes
// went out; they are dropped, as on a real line, when nobody has the port
// open or the reader stopped reading for writeWait.
func (p *ptyEnd) write(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	if !p.listenedLocked() {
		p.dropped += int64(len(b))
		return false
	}
	if err := p.master.SetWriteDeadline(time.Now().Add(writeWait)); err != nil {
		p.dropped += int64(len(b))
		return false
	}
	n, err := p.master.Write(b)
	if err != nil {
		p.dropped += int64(len(b) - n)
		return false
	}
	return true
}

// watch applies open/close events as they come, so that what a session
// left unread is flushed as soon as it closes the port, before the next
// session opens it (the flush before each write alone would come too late:
// a new session reads at once). It returns when the end is closed.
func (p *ptyEnd) watch() {
	if p.ino == nil {
		return
	}
	rc, err := p.ino.SyscallConn()
	if err != nil {
		return
	}
	// Read calls the function each time the queue becomes readable; the
	// events are consumed under the lock, by listenedLocked, so that they
	// are applied in order whoever reads them. Closing p.ino ends the wait.
	rc.Read(func(uintptr) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closed || p.ifd < 0 {
			return true
		}
		p.listenedLocked()
		return false
	})
}

// listenedLocked applies the open/close events queued since the last call.
// It is called before every write: an open completes (and queues its event)
// before the opener can send anything, so a reply to the opener's input is
// never flushed as stale.
func (p *ptyEnd) listenedLocked() bool {
	if p.ifd < 0 {
		return true
	}
	for {
		n, err := unix.Read(p.ifd, p.evbuf)
		if err != nil || n <= 0 {
			break // EAGAIN: nothing queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&p.evbuf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				// Events were lost: assume a listener rather than drop
				// output someone may be waiting for.
				p.opens = max(p.opens, 1)
			case ev.Mask&unix.IN_IGNORED != 0:
				// The watch is gone (device node removed): stop filtering.
				// (watch sees ifd < 0 and stops; p.ino is closed with p.)
				unix.Close(p.ifd)
				p.ifd = -1
				return true
			case ev.Mask&unix.IN_OPEN != 0:
				p.opens++
				if p.opens == 1 {
					p.flushLocked()
				}
			case ev.Mask&unix.IN_CLOSE != 0:
				// inotify merges identical unread events, so two opens in
				// quick succession may count as one; never go below zero.
				p.opens = max(p.opens-1, 0)
				if p.opens == 0 {
					p.flushLocked()
				}
			}
		}
	}
	return p.opens > 0
}

// flushLocked discards what the board sent that no one read before the last
// opener closed the port: a new opener sees only what is sent from now on.
func (p *ptyEnd) flushLocked() {
	rc, err := p.slave.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.IoctlSetInt(int(fd), unix.TCFLSH, unix.TCIFLUSH)
	})
}

// droppedBytes is how many bytes were sent into the void.
func (p *ptyEnd) droppedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// shutdown closes the master, waking a pending read with os.ErrClosed, and
// ends watch.
func (p *ptyEnd) shutdown() {
	p.shut.Store(true)
	p.master.Close()
	if p.ino != nil {
		p.ino.Close()
	}
}

// close releases everything. Call it after the goroutines using p stopped.
func (p *ptyEnd) close() {
	p.shut.Store(true)
	p.master.Close()
	if p.ino != nil {
		// Outside the lock: Close waits for a running watch callback,
		// which takes the lock.
		p.ino.Close()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if p.ifd >= 0 {
		unix.Close(p.ifd)
		p.ifd = -1
	}
	p.slave.Close()
}
