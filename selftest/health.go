package selftest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/labrunner/labrunner/bitstreams"
	"github.com/labrunner/labrunner/boards"
	"github.com/labrunner/labrunner/drivers"
	"github.com/labrunner/labrunner/drivers/regmap"
)

// Health checks keep infrastructure trouble out of the design's verdicts
// (docs/architecture.md, lessons from board farms): before a plan uses a board it must
// answer on its console and its register bus; after programming, its ID
// register must read back the design's value. A board that fails is taken
// out of the plan and its tests are reported as infrastructure errors.

// DefaultPrompt matches the prompts of Linux and U-Boot shells.
const DefaultPrompt = `[#$>] ?$`

// commander is the console driver's command helper (drivers/console).
type commander interface {
	Command(ctx context.Context, cmd, prompt string) (string, error)
}

// checkAlive checks that a board answers before anything is done to it.
func checkAlive(ctx context.Context, b *boards.Board, console, register func(context.Context) (context.Context, context.CancelFunc)) error {
	if b.Console != nil {
		prompt := DefaultPrompt
		if b.Config.Console != nil && b.Config.Console.Prompt != "" {
			prompt = b.Config.Console.Prompt
		}
		cctx, cancel := console(ctx)
		var err error
		if c, ok := b.Console.(commander); ok {
			_, err = c.Command(cctx, "", prompt)
		} else {
			if err = b.Console.Send(cctx, ""); err == nil {
				_, err = b.Console.Expect(cctx, prompt)
			}
		}
		cancel()
		if err != nil {
			return drivers.Infra(b.Name, "health: console", "the console does not give a prompt: check the board's power and its USB-UART", err)
		}
	}
	if b.Ping != nil {
		rctx, cancel := register(ctx)
		err := b.Ping(rctx)
		cancel()
		if err != nil {
			return drivers.Infra(b.Name, "health: register bus", "the register bus does not answer", err)
		}
	}
	return nil
}

// checkIdentity reads the loaded design's ID and VERSION registers: a board
// that does not answer, or answers with another design's identity, is
// unhealthy (the registers test judges the details).
func checkIdentity(ctx context.Context, r *regmap.Regs, m *bitstreams.Manifest, board string) error {
	id, err := r.Read(ctx, "ID")
	if err != nil {
		if drivers.ClassOf(err) == drivers.ClassInfra {
			return err
		}
		return drivers.Infra(board, "health: read ID", "the design's registers do not answer after programming", err)
	}
	if id != m.ID {
		return drivers.Infra(board, "health: ID register", "the programmed design is not running, or the bus returns garbage",
			fmt.Errorf("ID reads 0x%08x, %s %s says 0x%08x", id, m.Name, m.Version, m.ID))
	}
	return nil
}

// retryInfra runs f, and once more after an infrastructure failure, with a
// log line: infrastructure steps get a bounded retry; design verdicts never
// do.
func retryInfra(log *slog.Logger, board, what string, f func() error) error {
	err := f()
	if err == nil || drivers.ClassOf(err) != drivers.ClassInfra {
		return err
	}
	log.Warn("infrastructure step failed, retrying once", "board", board, "step", what, "err", err)
	if err2 := f(); err2 != nil {
		return errors.Join(err, fmt.Errorf("retry: %w", err2))
	}
	return nil
}

// BoardHealth is a design's own quick check of a programmed, configured
// board (links up). It returns a reason when the board is unusable.
type BoardHealth func(ctx context.Context, env *Env, b *Board) error

var healths = newRegistry[BoardHealth]("selftest.RegisterHealth: the board health check of design")

// RegisterHealth sets a design's board health check. A design has at most
// one: a second registration for the same design panics naming both, and
// so does a nil check.
func RegisterHealth(design string, h BoardHealth) {
	where := caller(1)
	if design == "" || h == nil {
		panic(fmt.Sprintf("selftest.RegisterHealth at %s: want a design name and a check (got %q, nil check %v)", where, design, h == nil))
	}
	healths.add(design, h, where)
}

// HasHealth reports whether a design registered a board health check.
func HasHealth(design string) bool {
	_, ok := healths.get(design)
	return ok
}

func healthFor(design string) BoardHealth {
	h, _ := healths.get(design)
	return h
}
