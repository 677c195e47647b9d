package rtl

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Board clock and baud: lbrb_example_top's defaults (docs/uart-bridge.md,
// "Interface of lbrb_bridge"), 109 clocks a bit for 108.5.
const (
	boardClkHz = 100_000_000
	boardBaud  = 921_600
)

// TestLineAtBoardClock: the bridge at a board's clock and baud, on a line
// driven by a host UART that is not in step with the design's clock and is
// off the nominal baud (rtl/sim/line_tb.cpp). Within ±2 % (a USB-UART's
// crystal is within 0.1 %; the bridge's own rounding costs 0.46 % here) every
// answer is right, bursts of 256 words back to back included; at ±7 % a
// byte's last bits fall outside its bit times and the exchange fails, which
// shows the checks see a broken line.
func TestLineAtBoardClock(t *testing.T) {
	if err := RequireTools(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := buildTB(ctx, "line", "line_tb.cpp", []string{"--top-module", "lbrb_example_top",
		"-CFLAGS", fmt.Sprintf("-O2 -DTB_CLK_HZ=%d -DTB_BAUD=%d", boardClkHz, boardBaud)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ppm  int
		pass bool
	}{{0, true}, {-20000, true}, {-10000, true}, {10000, true}, {20000, true}, {-70000, false}, {70000, false}} {
		t.Run(fmt.Sprintf("%+dppm", c.ppm), func(t *testing.T) {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(rctx, bin, fmt.Sprint(c.ppm)).CombinedOutput()
			line := strings.TrimSpace(string(out))
			var ee *exec.ExitError
			switch {
			case err == nil && c.pass && strings.HasPrefix(line, "ok "):
				t.Log(line)
			case errors.As(err, &ee) && ee.ExitCode() == 1 && !c.pass && strings.HasPrefix(line, "FAIL "):
				t.Log(line)
			default:
				t.Fatalf("line_tb %d (want it to pass: %v): %v\n%s", c.ppm, c.pass, err, out)
			}
		})
	}
}
