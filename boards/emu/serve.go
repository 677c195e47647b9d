package emu

import (
	"sync"
	"time"
)

// server serves a board's console and UART bridge on two pseudo-terminals:
// the runner opens their slave paths with tarm/serial as it would open a
// board's USB-UARTs. The console runs the firmware's shell (console.go,
// console_shell.go); the bridge is the device side of docs/uart-bridge.md
// (bridge.go).
type server struct {
	b       *Board
	console *ptyEnd
	bridge  *ptyEnd
	sh      *shell
	dev     *bridgeDev

	wg        sync.WaitGroup
	closeOnce sync.Once
}

// serve opens the board's two pseudo-terminals, records their slave paths
// and serves them until close.
func (b *Board) serve() error {
	con, err := openPTY(b.cfg.Name, "console", b.kind.ConsoleBaud)
	if err != nil {
		return err
	}
	br, err := openPTY(b.cfg.Name, "bridge", b.kind.BridgeBaud)
	if err != nil {
		con.close()
		return err
	}
	dev, err := newBridgeDev(b, br)
	if err != nil {
		con.close()
		br.close()
		return err
	}
	s := &server{b: b, console: con, bridge: br, sh: newShell(b, con), dev: dev}
	b.consolePath, b.bridgePath = con.path, br.path
	b.srv = s
	s.wg.Add(5)
	go func() { defer s.wg.Done(); con.watch() }()
	go func() { defer s.wg.Done(); br.watch() }()
	go func() { defer s.wg.Done(); s.sh.reader() }()
	go func() { defer s.wg.Done(); s.sh.run() }()
	go func() { defer s.wg.Done(); s.dev.run() }()
	b.rack.log.Debug("serving", "board", b.cfg.Name, "console", con.path, "bridge", br.path)
	return nil
}

// boot prints the boot log on the console: the power came back (or the
// firmware restarted). It never blocks.
func (s *server) boot() { s.sh.requestBoot() }

// closeWait bounds how long close waits for the serving goroutines: a
// console command handler that never returns must not hang the rack's Close.
const closeWait = 5 * time.Second

// close stops serving and closes the pseudo-terminals; the runner's open
// descriptors of the slaves then read end of file.
func (s *server) close() {
	s.closeOnce.Do(func() {
		close(s.sh.quit)
		s.console.shutdown()
		s.bridge.shutdown()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(closeWait):
			s.b.rack.log.Warn("console or bridge did not stop in time; abandoned", "board", s.b.cfg.Name)
		}
		s.console.close()
		s.bridge.close()
		s.b.rack.log.Debug("stopped serving", "board", s.b.cfg.Name,
			"console_bytes_unheard", s.console.droppedBytes(), "bridge_bytes_unheard", s.bridge.droppedBytes())
	})
}

// generationPowered reads the board's generation and power together.
func (b *Board) generationPowered() (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.generation, b.powered
}
