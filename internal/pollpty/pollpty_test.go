package pollpty

import (
	"errors"
	"os"
	"testing"
	"time"
)

// The master honours read deadlines (a blocking master would not), and
// bytes written to the slave's path come out of it.
func TestMasterIsPolled(t *testing.T) {
	master, slave, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	master.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := master.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing written: %v, want the deadline", err)
	}
	port, err := os.OpenFile(slave.Name(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer port.Close()
	if _, err := port.Write([]byte("ok\n")); err != nil {
		t.Fatal(err)
	}
	master.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 8)
	n, err := master.Read(buf)
	if err != nil || n == 0 || buf[0] != 'o' {
		t.Fatalf("read %q, %v; want what was written to %s", buf[:n], err, slave.Name())
	}
}
