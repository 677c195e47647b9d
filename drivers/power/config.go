package power

import (
	"fmt"

	"github.com/labrunner/labrunner/drivers"
)

// Config is a board's power switch as its lab entry gives it; the driver
// knows nothing of the lab file (boards.Power binds one to the other).
type Config struct {
	Type      string   // none, gpio, command
	Pin       string   // gpio: periph.io pin name, e.g. GPIO17
	ActiveLow bool     // gpio
	On, Off   []string // command: argument vectors
	Where     string   // the entry's file:line, for messages
}

// New builds the power switch c describes. "emulated" is served by the
// emulator, not here.
func New(board string, p Config) (drivers.Power, error) {
	op := "power"
	if p.Where != "" {
		op = "power at " + p.Where
	}
	switch p.Type {
	case "", "none":
		return None{}, nil
	case "gpio":
		return NewGPIO(board, p.Pin, p.ActiveLow)
	case "command":
		if len(p.On) == 0 || len(p.Off) == 0 {
			return nil, drivers.Setup(board, op, "give both on: and off: argument vectors",
				fmt.Errorf("power type command needs on and off"))
		}
		return &Command{Board: board, On: p.On, Off: p.Off}, nil
	}
	return nil, drivers.Setup(board, op, "use none, gpio or command",
		fmt.Errorf("unknown power type %q", p.Type))
}
