// Package syncbuf holds Buffer, a byte buffer that several goroutines may
// write while another reads it: what a test hands a command, a console or a
// progress display as its output (they write from goroutines of their own)
// and reads back while they run or once they are done; and Writer, any
// io.Writer made safe for several goroutines (a run's trace file, which
// the board groups' bridges write at once).
package syncbuf

import (
	"bytes"
	"io"
	"sync"
)

// Writer writes to W, one Write at a time, so that the lines of several
// goroutines never interleave. W must be set before the first Write.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes p to W.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}

// Buffer is a bytes.Buffer behind a mutex. The zero value is empty and
// ready to use; a Buffer must not be copied after first use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
