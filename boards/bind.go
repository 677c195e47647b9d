package boards

import (
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/power"
	"github.com/labrunner/labrunner/drivers/program"
	"github.com/labrunner/labrunner/labconfig"
)

// Drivers know nothing of the lab file: a board's entry is bound to its
// programmer and power switch here, as labgrid binds resources to drivers
// outside them.

// Programmer builds the programmer a lab entry describes; vendor is the
// board kind's ("" skips the vendor check).
func Programmer(board string, p labconfig.Programmer, vendor string) (drivers.Programmer, error) {
	return program.New(board, program.Config{Type: p.Type, Sysfs: p.Sysfs, FirmwareDir: p.FirmwareDir, Manager: p.Manager,
		Cable: p.Cable, USBPath: p.USBPath, Serial: p.Serial, Tool: p.Tool, PCIDevice: p.PCIDevice, Where: where(p.Pos)}, vendor)
}

// Power builds the power switch a lab entry describes.
func Power(board string, p labconfig.Power) (drivers.Power, error) {
	return power.New(board, power.Config{Type: p.Type, Pin: p.Pin, ActiveLow: p.ActiveLow, On: p.On, Off: p.Off, Where: where(p.Pos)})
}

func where(p labconfig.Pos) string {
	if p.File == "" && p.Line == 0 {
		return ""
	}
	return p.String()
}
