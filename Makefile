# labrunner — build and test.
#
#   make test    the whole suite, as CI runs it (.ci/run calls this): gofmt, go vet, go test -race, and the
#                end-to-end tests that take a share of their cases under -race once more without it (see unit)
#   make build   the labrunner binary into bin/, its version from git describe
#   make install the labrunner binary into $(go env GOBIN), else $(go env GOPATH)/bin
#   make bench   the benchmarks of the hot paths (bus round trips, emulator and golden throughput, export)
#   make figures the golden models' reproductions of the papers' figures that take seconds of CPU (docs/figures.md)
#   make fuzz    every fuzz target for FUZZTIME each (default 60s)
#   make rtl-tools  Verilator and yosys from Debian's packages, when missing (the RTL tests need them)
#   make rtl-synth  the UART bridge RTL's synthesis figures into docs/uart-bridge.md
#   make report-check  the HTML report in headless Chromium at 1400 px, for a passing nightly and one with
#                faults (not part of make test: it needs Chromium, which it installs from Debian's packages)

GO       ?= go
CACHE    := $(CURDIR)/.cache
FUZZTIME ?= 60s

.PHONY: all build install test fmt-check vet unit bench figures fuzz clean influxd rtl-tools rtl-synth report-check chromium

all: build

# The version a binary reports (--version, run.json): the nearest tag, else the commit, and -dirty for a
# tree with changes. Without -ldflags (go install, go run) it comes from the build info.
VERSION  := $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS  := $(if $(VERSION),-ldflags "-X main.version=$(VERSION)")

build:
	$(GO) build $(LDFLAGS) -o bin/labrunner ./cmd/labrunner

install:
	$(GO) install $(LDFLAGS) ./cmd/labrunner

test: rtl-tools fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Two passes. The first runs every test with the race detector, which slows the in-process emulator and the
# golden simulations five to forty times: there the expensive tests (a nightly per design fault or plan, a
# simulation per case, the long sequential simulations) take a share of their cases, in rotation by day
# (LABRUNNER_FAULT_ROTATION=N repeats day N's share), and every code path still runs under the detector. The
# second runs those tests again without it, every case and the whole length (docs/ci.md, "The test suite";
# internal/raceshare's TestEverySharedTestRunsWholeWithoutTheDetector checks that FULL_TESTS and FULL_PKGS name
# every test that takes a share). GORACE's atexit_sleep_ms=0 drops the second each race-enabled test binary
# waits at exit for late reports (races are reported per test as they happen).
FULL_TESTS := '^(TestNightlyCatchesInjectedFaults|TestPredictSimulation|TestDrainWorstCaseAtFiniteDepth|TestSimBehaviour|TestPredictPrototype|TestLongerEpochLongerTail|TestSmallQueuesAtHighLoad|Test(PRR|Shoal|TiN)PlanPassesOnTheEmulated(Ultra96|Rack|Clique)|TestManagementFaultsFailTheNightly|TestABadCableIsADesignFailure|Test(Shoal|TiN|PRR)PlanCatchesEmulatorFaults|TestDefaultPlansCatchEveryDesignFault|TestGoldenInputsNeverComeFromTheBoard|TestRMABaselineBandCatchesASlowSwitch|TestRMABulkBandsCatchALeakOnTheBulkVC|TestShoalPermutationBandCatchesLateFeedback|TestWorstCaseLatencyReproducesSection51|TestSimulationDigests|TestFaultSilentDrop|TestRandomBatches(BitExact|WithDrops)|TestAdaptiveRouting|TestRoutesDeadlockFree|TestFullCliqueShortRunIsNotSteady|TestPaperComparisons|TestPermutationMaxMinBound|TestEveryBandHasABudget|TestQueueBoundUnderRandomTraffic|TestFIFOSaturation|TestOutputQueueLatency|TestPaperDropRatesAtDepthOne|TestFailedSlotsTableOne|TestMakeFigures|TestReadsBesideBulk|TestPredictBulkBands|TestGoldenSimulate|TestDocumentedCommands|TestFigures|TestRMAIsolation|TestFabricRTTVersusLoad|TestFaultArbiterBubble)$$'
FULL_PKGS  := ./selftest/all ./cmd/labrunner ./boards/emu/prr ./golden/shoal ./golden/tin ./golden/prr ./golden/ordering ./boards/emu/shoal ./boards/emu/tin ./docs

# Many tests wait more than they compute (a bridge paced at its baud rate, a board that must miss a deadline, a
# co-simulation, a command in a process of its own): with go test's defaults (as many packages and parallel
# tests as CPUs) those waits left the CPUs idle for half of the suite. Both passes run UNIT_P packages and
# UNIT_PARALLEL tests per package at once. (Running the two passes side by side was tried: on two cores the
# emulated boards then miss their own deadlines.)
UNIT_P        ?= 4
UNIT_PARALLEL ?= 4

# The packages that take longest go first: go test starts packages in the order it is given them, and a
# long one started last ran alone at the end of a pass with a CPU idle (the rest follow in ./...'s order).
RACE_FIRST := ./cmd/labrunner ./docs ./selftest/all ./boards/emu/tin ./rtl ./golden/shoal
FULL_FIRST := ./selftest/all ./docs

# Both passes run, whatever the first gave; unit fails when either did.
unit: influxd rtl-tools
	@race=0; full=0; \
	echo "GORACE=atexit_sleep_ms=0 $(GO) test -race -count=1 -p $(UNIT_P) -parallel $(UNIT_PARALLEL) -timeout 20m $(RACE_FIRST) ./..."; \
	GORACE=atexit_sleep_ms=0 LABRUNNER_INFLUXD=$(INFLUXD) $(GO) test -race -count=1 -p $(UNIT_P) -parallel $(UNIT_PARALLEL) -timeout 20m $(RACE_FIRST) ./... || race=$$?; \
	echo "$(GO) test -count=1 -p $(UNIT_P) -parallel $(UNIT_PARALLEL) -timeout 20m -run $(FULL_TESTS) $(FULL_FIRST) $(FULL_PKGS)"; \
	LABRUNNER_INFLUXD=$(INFLUXD) $(GO) test -count=1 -p $(UNIT_P) -parallel $(UNIT_PARALLEL) -timeout 20m -run $(FULL_TESTS) $(FULL_FIRST) $(FULL_PKGS) || full=$$?; \
	if [ $$race -ne 0 ] || [ $$full -ne 0 ]; then echo "unit: the race pass exited $$race, the pass without it $$full"; exit 1; fi

# InfluxDB 1.8 for the export tests (results/influx, cmd/labrunner): built once into .cache (about two
# minutes), skipped when the binary is there. The tests start and stop their own servers on 127.0.0.1.
INFLUXD := $(CACHE)/bin/influxd

influxd: $(INFLUXD)

$(INFLUXD):
	GOBIN=$(CACHE)/bin $(GO) install github.com/influxdata/influxdb/cmd/influxd@v1.8.3

# The RTL tests (rtl/) build a Verilator co-simulation and run yosys: both come from Debian's packages
# (apt-get, as root in CI). Quick and silent when they are installed.
rtl-tools:
	@scripts/rtl-tools.sh

rtl-synth: rtl-tools
	scripts/rtl-synth.sh

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./drivers/uartbridge ./drivers/mmio ./boards/emu/... ./golden/...

# The figures of docs/figures.md that the normal suite covers only with quicker tests of the same code: the
# 512-node Shoal rack (§7.2 Fig. 12, §7.3 Fig. 16), the 32 runs of the PRR §5.1 reproduction and Aquila's full
# Clique at 60% and 70% load (about 20 s of CPU).
figures:
	$(GO) test -count=1 -run 'Figure' ./golden/shoal ./golden/prr ./golden/tin -args -figures

# Each fuzz target runs alone (go test allows one -fuzz pattern per package run).
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		pkg=./$$(dirname $$f); \
		for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
			echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

# The report as people see it: a passing nightly and one with well over 100 failures on the emulated rack,
# each opened by scripts/check-report.sh in headless Chromium 1400 px wide (every plot decodes, no table or
# number cell wider than the window), with screenshots left in $(REPORT_CHECK_DIR)/*.png to look at.
REPORT_CHECK_DIR ?= $(CACHE)/report-check
REPORT_FAULTS    := --fault credit-leak@exa-10:sfp0 --fault tin-adaptive-stuck@tin-p0b0 --fault sort-unstable@prr-0 \
                    --fault wrong-slot@shoal-sw0 --fault tin-credit-leak@tin-p0b1:sfp0,count=4

report-check: chromium
	rm -rf $(REPORT_CHECK_DIR) && mkdir -p $(REPORT_CHECK_DIR)
	$(GO) run ./cmd/labrunner --log-level error nightly --out $(REPORT_CHECK_DIR)/passing > $(REPORT_CHECK_DIR)/passing.txt
	$(GO) run ./cmd/labrunner --log-level error nightly --out $(REPORT_CHECK_DIR)/faults $(REPORT_FAULTS) > $(REPORT_CHECK_DIR)/faults.txt; \
		code=$$?; if [ $$code -eq 0 ]; then echo "the nightly with faults passed"; exit 1; fi
	scripts/check-report.sh $(REPORT_CHECK_DIR)/passing/* $(REPORT_CHECK_DIR)/passing.png
	scripts/check-report.sh $(REPORT_CHECK_DIR)/faults/* $(REPORT_CHECK_DIR)/faults.png

# Chromium for report-check, from Debian's packages when it is missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium fonts-liberation; }

clean:
	rm -rf bin $(CACHE)
