package power

import (
	"fmt"

	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/labconfig"
)

// FromConfig builds the power switch a lab file's board entry describes.
// "emulated" is served by the emulator, not here.
func FromConfig(board string, p labconfig.Power) (drivers.Power, error) {
	switch p.Type {
	case "", "none":
		return None{}, nil
	case "gpio":
		return NewGPIO(board, p.Pin, p.ActiveLow)
	case "command":
		if len(p.On) == 0 || len(p.Off) == 0 {
			return nil, drivers.Setup(board, "power", "give both on: and off: argument vectors",
				fmt.Errorf("%s: power type command needs on and off", p.Pos))
		}
		return &Command{Board: board, On: p.On, Off: p.Off}, nil
	}
	return nil, drivers.Setup(board, "power", "use none, gpio or command",
		fmt.Errorf("%s: unknown power type %q", p.Pos, p.Type))
}
