package bringup

import (
	"context"
	"testing"
	"time"

	"labrunner/boards"
	"labrunner/boards/emu"
	"labrunner/labconfig"
)

func TestScratchSpeed(t *testing.T) {
	lab, err := labconfig.Default(labconfig.Known{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := emu.Start(lab, emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	for _, name := range []string{"exa-00", "exa-11"} {
		cfg, _ := lab.Board(name)
		b, err := boards.Open(ctx, *cfg, boards.Options{Emulator: r, NoConsole: true})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		for i := 0; i < 500; i++ {
			if _, err := b.Bus.Read32(ctx, 0xF0000000); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: %v per read", name, time.Since(t0)/500)
		buf := make([]uint32, 60)
		t0 = time.Now()
		for i := 0; i < 50; i++ {
			if err := b.Bus.ReadBurst(ctx, 0xF0000504, buf); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: %v per 60-word burst", name, time.Since(t0)/50)
		b.Close()
	}
}
