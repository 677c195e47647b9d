// Package labrun owns a run of the lab, from the options a command line
// gives to the run directory and exit code it leaves:
//
//   - Nightly: a resumable run of the lab's plans (labrunner nightly and
//     selftest). The lab and everything a run needs of it are checked before
//     a board is touched (LoadLab, CheckLab); the emulated rack is started
//     (StartRack); the run directory is made, or a resumed one reopened; the
//     run's log goes to the terminal (warnings) and to labrunner.log
//     (everything); board groups (Groups: plans sharing boards, this host's
//     shard of them, their boards leased) run in parallel; the directory is
//     finished, compared with the previous run, its points written and
//     exported to InfluxDB, its report written; a summary closes it.
//   - Bringup: the staged bring-up's run (labrunner bringup).
//   - Serve: the emulated rack kept up for other tools (labrunner sim serve).
//   - Export, BoardStates, Reserve: the run directory's points sent on
//     later; the lock directory's view of the boards; manual reservations.
//
// A run's exit code (ExitCodeOf its verdicts; Error for what ends it before
// or outside them) follows the project's convention: 0 all passed, 1 a
// verdict failed, 2 bad usage or configuration, 3 infrastructure.
//
// The designs' tests and emulated boards are registered by the binary
// (selftest/all, boards/emu/designs): labrun runs whatever is registered.
// A plan itself, on its opened boards, is selftest.Runner's.
package labrun
