package bridgetest

import (
	"os"
	"testing"
	"time"

	"github.com/labrunner/labrunner/drivers/uartbridge"
	"github.com/labrunner/labrunner/internal/pollpty"
)

// A copy of the request before Arm that the host's writer hands on after
// it (the request was answered by its first copy while the retry waited to
// be written) must not take the faults armed for the next request: with
// every answer to be lost, the next request's answer is lost. (In make
// test's race pass the co-simulated RTL answered a soft reset late, its
// retry went out after Arm, and the push the suite meant to lose every
// answer of succeeded.)
func TestFaultsBindToTheNextNewRequest(t *testing.T) {
	dev, line := faultLineOnPTY(t)
	req := func(seq uint8) []byte {
		f, err := uartbridge.AppendRequest(nil, uartbridge.Request{Seq: seq, Cmd: uartbridge.CmdWrite, Addr: 0x1000, Count: 1, Data: []uint32{7}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if _, err := line.Write(req(80)); err != nil {
		t.Fatal(err)
	}
	line.Arm(DropResponse, 1<<20)
	for _, seq := range []uint8{80, 81} { // the late copy of 80, then the new request
		if _, err := line.Write(req(seq)); err != nil {
			t.Fatal(err)
		}
	}
	// The device answers the new request.
	ans, err := uartbridge.AppendResponse(nil, uartbridge.Response{Seq: 81, Cmd: uartbridge.CmdWrite, Status: uartbridge.StatusOK})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Write(ans); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := line.Read(buf)
		got <- buf[:n]
	}()
	select {
	case b := <-got:
		t.Fatalf("the answer to the request after Arm came through: % x", b)
	case <-time.After(300 * time.Millisecond):
	}
}

// The same for a damaged request: the late copy passes as it is, the next
// new request is damaged.
func TestRequestDamageStartsAtTheNextNewRequest(t *testing.T) {
	dev, line := faultLineOnPTY(t)
	var sent []byte
	for i, seq := range []uint8{80, 80, 81} {
		f, err := uartbridge.AppendRequest(nil, uartbridge.Request{Seq: seq, Cmd: uartbridge.CmdWrite, Addr: 0x1000, Count: 1, Data: []uint32{7}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			line.Arm(CorruptRequest, 1)
		}
		if _, err := line.Write(f); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, f...)
	}
	got := make([]byte, 0, len(sent))
	buf := make([]byte, 256)
	dev.SetReadDeadline(time.Now().Add(2 * time.Second))
	for len(got) < len(sent) {
		n, err := dev.Read(buf)
		if err != nil {
			t.Fatalf("the device read %d of %d bytes: %v", len(got), len(sent), err)
		}
		got = append(got, buf[:n]...)
	}
	n := len(sent) / 3
	for i := range got {
		if damaged := got[i] != sent[i]; damaged != (i == 2*n+6) {
			t.Errorf("byte %d (frame %d): sent %02x, the device got %02x", i, i/n, sent[i], got[i])
		}
	}
}

// faultLineOnPTY puts a FaultLine on a pseudo-terminal and returns it with
// the device end.
func faultLineOnPTY(t *testing.T) (*os.File, *FaultLine) {
	t.Helper()
	dev, slave, err := pollpty.Open()
	if err != nil {
		t.Fatalf("open pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { dev.Close(); slave.Close() })
	port, err := OpenPort(slave.Name(), 115200)
	if err != nil {
		t.Fatal(err)
	}
	line := NewFaultLine(port)
	t.Cleanup(func() { line.Close() })
	return dev, line
}
