package emu

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// What the emulated firmware prints: boot logs and kernel noise, in the
// style of the real boards' firmware (PetaLinux on the Zynq MPSoC boards, a
// Nios II soft processor running Linux on the Stratix V boards, which have
// no hard processor).

// FirmwareVersion is the version the console's `version` command reports.
const FirmwareVersion = "lbfw 2.1.0-emu"

// logLine is one line of a boot or shutdown log: a kernel message when TS
// is not negative (printed "[    1.234567] text"), plain text otherwise.
type logLine struct {
	TS   float64 // kernel time, seconds; -1: not a kernel line
	Text string
}

// kernelStamp formats a kernel time the way printk does.
func kernelStamp(d time.Duration) string {
	us := d.Microseconds()
	return fmt.Sprintf("[%5d.%06d] ", us/1000000, us%1000000)
}

func (l logLine) render() string {
	if l.TS < 0 {
		return l.Text + "\r\n"
	}
	return kernelStamp(time.Duration(l.TS*1e6)*time.Microsecond) + l.Text + "\r\n"
}

// isXilinx: the Zynq MPSoC family (PetaLinux); anything else gets the
// Nios II flavour.
func (b *Board) isXilinx() bool { return b.kind.Vendor != "intel" }

// ttyName is the firmware's name for the console UART.
func (b *Board) ttyName() string {
	if b.isXilinx() {
		return "ttyPS0"
	}
	return "ttyAL0"
}

// chipOf turns a Vivado part (xczu9eg-ffvb1156-2-e) into U-Boot's chip name (zu9eg).
func chipOf(part string) string {
	p, _, _ := strings.Cut(strings.ToLower(part), "-")
	return strings.TrimPrefix(p, "xc")
}

// bootLog is what the firmware prints from power-on to the shell, the
// prompt excepted.
func (b *Board) bootLog() []logLine {
	name, title := b.cfg.Name, b.kind.Title
	id := b.deviceID
	mac := fmt.Sprintf("00:0a:35:%02x:%02x:%02x", byte(id>>16), byte(id>>8), byte(id))
	if b.isXilinx() {
		return []logLine{
			{-1, "Xilinx Zynq MP First Stage Boot Loader "},
			{-1, "Release 2023.2   Oct 12 2023  -  07:58:25"},
			{-1, "NOTICE:  BL31: v2.8(release):xlnx_rebase_v2.8_2023.2"},
			{-1, "NOTICE:  BL31: Built : 07:58:25, Oct 12 2023"},
			{-1, ""},
			{-1, "U-Boot 2023.01 (Oct 12 2023 - 07:58:25 +0000)"},
			{-1, ""},
			{-1, "CPU:   ZynqMP"},
			{-1, "Silicon: v3"},
			{-1, "Chip:  " + chipOf(b.kind.Part)},
			{-1, "Model: " + title},
			{-1, "DRAM:  4 GiB"},
			{-1, "Hit any key to stop autoboot:  0 "},
			{-1, "Starting kernel ..."},
			{-1, ""},
			{0, "Booting Linux on physical CPU 0x0000000000 [0x410fd034]"},
			{0, "Linux version 6.1.30-xilinx-v2023.2 (oe-user@oe-host) (aarch64-xilinx-linux-gcc (GCC) 12.2.0, GNU ld (GNU Binutils) 2.40.0.20230703) #1 SMP Mon Oct  9 09:03:44 UTC 2023"},
			{0, "Machine model: " + title},
			{0, "earlycon: cdns0 at MMIO 0x00000000ff000000 (options '115200n8')"},
			{0.412345, "zynqmp_firmware_probe Platform Management API v1.1"},
			{1.102934, "fpga_manager fpga0: Xilinx ZynqMP FPGA Manager registered"},
			{1.734512, "macb ff0e0000.ethernet eth0: Cadence GEM rev 0x50070106 at 0xff0e0000 irq 47 (" + mac + ")"},
			{2.901837, "mmc0: new HS200 MMC card at address 0001"},
			{3.417263, "EXT4-fs (mmcblk0p2): mounted filesystem with ordered data mode. Quota mode: none."},
			{3.520019, "Run /sbin/init as init process"},
			{5.882714, "macb ff0e0000.ethernet eth0: Link is Up - 1Gbps/Full - flow control tx"},
			{-1, ""},
			{-1, "PetaLinux 2023.2 " + name + " " + b.ttyName()},
			{-1, ""},
			{-1, name + " login: root (automatic login)"},
			{-1, ""},
		}
	}
	return []logLine{
		{-1, "Nios II Boot Loader v2.4 (EPCQ) -- " + title},
		{-1, "FPGA " + strings.ToUpper(b.kind.Part) + " configured from flash, factory image"},
		{-1, "Copying kernel from flash 0x00800000 to DDR3 0xd0000000 ... done"},
		{-1, "Starting kernel ..."},
		{-1, ""},
		{0, "Linux version 5.15.0-nios2 (builder@lbfw) (nios2-linux-gnu-gcc (GCC) 11.2.0, GNU ld (GNU Binutils) 2.37) #1 PREEMPT Tue Feb  6 10:12:41 UTC 2024"},
		{0, "Machine model: " + title},
		{0, "Memory: 1021404K/1048576K available (3712K kernel code, 251K rwdata, 812K rodata, 148K init, 201K bss)"},
		{0.512394, "ttyAL0 at MMIO 0x18001000 (irq = 2, base_baud = 0) is a Altera UART"},
		{0.934817, "altera_tse 18002000.ethernet eth0: Altera TSE MAC as 0x18002000 with IRQ 3 (" + mac + ")"},
		{1.902114, "pcie-altera c0000000.pcie: link up, x8 Gen3"},
		{2.884100, "Run /init as init process"},
		{-1, ""},
		{-1, FirmwareVersion + " on " + name + " " + b.ttyName()},
		{-1, ""},
		{-1, name + " login: root (automatic login)"},
		{-1, ""},
	}
}

// kernelBootEnd is the kernel time the boot log ends at: the kernel clock
// goes on from there once the shell is up.
func (b *Board) kernelBootEnd() time.Duration {
	if b.isXilinx() {
		return 6231 * time.Millisecond
	}
	return 3117 * time.Millisecond
}

// shutdownLog is what `reboot` prints before the firmware restarts.
func (b *Board) shutdownLog(uptime time.Duration) []logLine {
	s := uptime.Seconds()
	return []logLine{
		{-1, ""},
		{-1, "Broadcast message from root@" + b.cfg.Name + " (" + b.ttyName() + ") (" + time.Now().UTC().Format("Mon Jan  2 15:04:05 2006") + "):"},
		{-1, ""},
		{-1, "The system is going down for reboot NOW!"},
		{-1, "Sent SIGTERM to all processes"},
		{-1, "Sent SIGKILL to all processes"},
		{-1, "Requesting system reboot"},
		{s + 0.041207, "reboot: Restarting system"},
	}
}

// noiseLine draws one kernel message, as printed at kernel time t.
func (b *Board) noiseLine(r *rand.Rand, t time.Duration) string {
	var pool []string
	if b.isXilinx() {
		pool = []string{
			"random: crng init done",
			"macb ff0e0000.ethernet eth0: Link is Down",
			"macb ff0e0000.ethernet eth0: Link is Up - 1Gbps/Full - flow control tx",
			"cdns-i2c ff030000.i2c: timeout waiting on completion",
			"usb 1-1: new high-speed USB device number %d using xhci-hcd",
			"EDAC MC0: 1 CE DDR ECC error type :CE on (ID: 0x0) at address 0x%x",
			"zynqmp-dp fd4a0000.display: no audio device",
			"mmc0: Timeout waiting for hardware interrupt.",
			"xilinx-zynqmp-dma fd500000.dma-controller: ZynqMP DMA driver Probe success",
			"hrtimer: interrupt took %d ns",
		}
	} else {
		pool = []string{
			"random: crng init done",
			"altera_tse 18002000.ethernet eth0: Link is Down",
			"altera_tse 18002000.ethernet eth0: Link is Up - 1Gbps/Full - flow control off",
			"pcie-altera c0000000.pcie: AER: Corrected error received: id=%04x",
			"altera_edac: ECC: single-bit error corrected at 0x%08x",
			"sched: RT throttling activated",
			"hrtimer: interrupt took %d ns",
		}
	}
	msg := pool[r.IntN(len(pool))]
	if strings.Contains(msg, "%") {
		msg = fmt.Sprintf(msg, 2+r.IntN(60000))
	}
	return kernelStamp(t) + msg + "\r\n"
}
