// Package bringup is the staged bring-up of a board or a rack: power,
// program, ID registers, scratch registers, links up, bootstrap, time sync
// and loopback traffic, each stage under its own deadline, each failure
// diagnosed with what was expected, what was seen and what to check on the
// bench. It is `labrunner bringup` (docs/bringup.md).
//
// The bootstrap is the in-band one of Aquila (NSDI 2022) §4.4, driven
// through the management block every board has (docs/mgmt.md, docs/pmos.md,
// drivers/pmos). The boards the runner reaches directly are wave 0, each
// configured once over its own bus and never through a proxy. Every other
// board sends DISCOVERs over MOS on all its cables; a bootstrapped
// neighbour one wave before it relays them, the runner answers with an
// ASSIGN link-local through that proxy, configures the target and the routes
// toward it through the proxy over PMOS, reaches it over the routed
// management network, and uses it as the proxy of the next wave. Waves run
// in parallel, breadth-first as golden/bringup has them.
//
// One goroutine (engine.run) owns every decision and workers do the
// register traffic. Relaying is switched on only at the proxies a target
// waits for and off again once it is heard: a DISCOVER comes every
// millisecond on every cable, and the DCN board's mailbox that receives the
// relays holds 32 messages (an answer that finds it full is lost). A target
// that sends no DISCOVER (it kept its address, or it is silent) is asked
// link-local; a board no working board can reach any more is reported at
// once, naming the boards it depends on. A proxy that dies is replaced by
// another neighbour; a cable PMOS gives up on while it damages frames is
// gone around; a board that never answers fails alone. Registers are
// programmed by the names of the register map (§4.3), and after a firmware
// reboot without traffic loss the runner reconciles each board with its
// intent and reports the differences it fixed.
//
// The time sync is Aquila App. B's: every cable between bootstrapped
// boards measured in latency-measurement mode first, a tree breadth-first
// from the DCN board nearest the middle of the rack, each client's delay
// compensated, the primary started and its first message timed, FAILED
// cleared once every client could lock, then verified per link (delay
// against the lab file), per board (its largest correction, the offset it
// keeps from the primary's time, against the golden band for its clocks;
// the sum along its path, the bound the hardware vouches for, against the
// golden bound for its depth), for depth and convergence, and re-rooted
// around a failed primary or cable. For a Shoal rack the calibrated
// precision sizes the guard band (Shoal §3.4) and the golden arithmetic
// recommends a slot.
//
// Everything is scored against golden/bringup, given the boards the
// bootstrap lost, and recorded through selftest.Env into a run directory.
// The package never imports the emulator: it runs on real boards by
// changing only the lab file.
package bringup
