package bitstreams

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadFileRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// Opening a FIFO for reading blocks until a writer comes: give it
		// one that never writes, as a device that streams would.
		_, err := ReadFile(fifo)
		done <- err
	}()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("reading a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile of a FIFO did not return")
	}
	for _, p := range []string{"/dev/zero", dir} {
		if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadFile(%s): %v", p, err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.bit")); err == nil || !strings.Contains(err.Error(), "missing.bit") {
		t.Errorf("a missing file: %v", err)
	}
	ok := filepath.Join(dir, "x.bin")
	os.WriteFile(ok, []byte{1, 2, 3, 4}, 0o644)
	if data, err := ReadFile(ok); err != nil || len(data) != 4 {
		t.Errorf("a regular file: %v %v", data, err)
	}
}
