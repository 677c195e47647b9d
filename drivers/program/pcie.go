package program

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/labrunner/labrunner/drivers"
)

// pciAddrRe is a PCI device address as sysfs names it: domain:bus:device.function.
var pciAddrRe = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$`)

// ParsePCIAddress checks a PCI address and returns it as sysfs names it
// (lower case, with the domain): "01:00.0" becomes "0000:01:00.0".
func ParsePCIAddress(s string) (string, error) {
	a := strings.ToLower(s)
	if strings.Count(a, ":") == 1 {
		a = "0000:" + a
	}
	if !pciAddrRe.MatchString(a) {
		return "", fmt.Errorf("pci_device %q is not a PCI address like 0000:01:00.0", s)
	}
	return a, nil
}

// pcieHotplug takes a board's PCIe endpoint off the host's bus while its
// FPGA is reconfigured, and brings it back: an endpoint that disappears
// under a live link makes the host log errors or hang, and a reconfigured
// endpoint is only seen after a rescan.
type pcieHotplug struct {
	board string
	sysfs string
	addr  string
	log   io.Writer
	poll  time.Duration // default 20 ms
	// rescanEvery repeats the rescan while waiting for the device: the
	// new design's PCIe link may train only after the first rescan.
	rescanEvery time.Duration // default 1 s
	// grace bounds the rescan when the deadline has already passed (a
	// device left off the bus is worse than a late error).
	grace time.Duration // default 10 s
}

func (h pcieHotplug) devDir() string {
	return filepath.Join(h.root(), "bus", "pci", "devices", h.addr)
}

func (h pcieHotplug) root() string {
	if h.sysfs == "" {
		return "/sys"
	}
	return h.sysfs
}

func (h pcieHotplug) dur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// remove takes the device off the bus and waits until it is gone. A device
// already absent (a previous run stopped before its rescan) is fine: the
// rescan after programming brings it back.
func (h pcieHotplug) remove(ctx context.Context) error {
	op := "remove PCIe device " + h.addr
	present, err := exists(h.devDir())
	if err != nil {
		return drivers.Infra(h.board, op, "check that sysfs is mounted", err)
	}
	if !present {
		logf(h.log, "# pcie %s: not on the bus before programming (left removed earlier?); programming, then rescanning", h.addr)
		return nil
	}
	if err := writeAttr(filepath.Join(h.devDir(), "remove"), "1"); err != nil {
		return drivers.Infra(h.board, op, "labrunner must run as root to take the board's PCIe device off the bus; the FPGA was not reprogrammed", err)
	}
	logf(h.log, "# pcie %s: removed", h.addr)
	tick := time.NewTicker(h.dur(h.poll, 20*time.Millisecond))
	defer tick.Stop()
	for {
		present, err := exists(h.devDir())
		if err != nil {
			return drivers.Infra(h.board, op, "check that sysfs is mounted", err)
		}
		if !present {
			return nil
		}
		select {
		case <-ctx.Done():
			return drivers.Infra(h.board, op,
				"the device did not leave the bus, so the FPGA was not reprogrammed (reconfiguring a live PCIe endpoint can hang the host): check dmesg",
				fmt.Errorf("%w: %s still present: %w", drivers.ErrTimeout, h.devDir(), ctx.Err()))
		case <-tick.C:
		}
	}
}

// rescan asks the host to rescan its PCIe buses and waits for the device
// to come back, repeating the rescan meanwhile. It runs even when ctx is
// over: then for at most the grace period.
func (h pcieHotplug) rescan(ctx context.Context) error {
	op := "rescan PCIe for " + h.addr
	grace := h.dur(h.grace, 10*time.Second)
	dl, ok := ctx.Deadline()
	if !ok || time.Until(dl) < grace {
		dl = time.Now().Add(grace)
	}
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl)
	defer cancel()

	attr := filepath.Join(h.root(), "bus", "pci", "rescan")
	poll := time.NewTicker(h.dur(h.poll, 20*time.Millisecond))
	defer poll.Stop()
	every := h.dur(h.rescanEvery, time.Second)
	start := time.Now()
	var last time.Time
	for n := 0; ; {
		if last.IsZero() || time.Since(last) >= every {
			if err := writeAttr(attr, "1"); err != nil {
				return drivers.Infra(h.board, op, "labrunner must run as root to rescan the PCIe bus; the board's device stays off the bus until `echo 1 > /sys/bus/pci/rescan`", err)
			}
			last = time.Now()
			n++
			logf(h.log, "# pcie: rescan %d", n)
		}
		present, err := exists(h.devDir())
		if err != nil {
			return drivers.Infra(h.board, op, "check that sysfs is mounted", err)
		}
		if present {
			logf(h.log, "# pcie %s: back on the bus after %s", h.addr, time.Since(start).Round(time.Millisecond))
			return nil
		}
		select {
		case <-rctx.Done():
			return drivers.Infra(h.board, op,
				"the device did not come back: check that the new design has the PCIe hard IP at this address and that its link trains (dmesg, lspci); a host reboot may be needed",
				fmt.Errorf("%w: %s absent %s after %d rescans: %w", drivers.ErrTimeout, h.devDir(),
					time.Since(start).Round(time.Millisecond), n, rctx.Err()))
		case <-poll.C:
		}
	}
}

// around takes the device off the bus, runs program, and always brings the
// device back, whatever program returned. The programming's error comes
// first; a failed rescan is joined to it.
func (h pcieHotplug) around(ctx context.Context, program func(context.Context) error) error {
	if err := h.remove(ctx); err != nil {
		// Not reprogrammed. A device still on the bus needs nothing more;
		// one that is gone after all is brought back.
		if present, perr := exists(h.devDir()); present || perr != nil {
			return err
		}
		if rerr := h.rescan(ctx); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	perr := program(ctx)
	rerr := h.rescan(ctx)
	switch {
	case perr == nil:
		return rerr
	case rerr == nil:
		return perr
	}
	return errors.Join(perr, rerr)
}
