# labrunner — build and test.
#
#   make test    the whole suite, as CI runs it (.ci/run calls this): gofmt, go vet, go test -race
#   make build   the labrunner binary into bin/
#   make bench   the benchmarks named in the closing notes
#   make fuzz    every fuzz target for FUZZTIME each (default 60s)

GO       ?= go
CACHE    := $(CURDIR)/.cache
FUZZTIME ?= 60s

.PHONY: all build test fmt-check vet unit bench fuzz clean

all: build

build:
	$(GO) build -o bin/labrunner ./cmd/labrunner

test: fmt-check vet unit

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.cache/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 -timeout 20m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./drivers/uartbridge ./drivers/mmio ./boards/emu/... ./golden/...

# Each fuzz target runs alone (go test allows one -fuzz pattern per package run).
fuzz:
	@set -e; for f in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
		pkg=./$$(dirname $$f); \
		for t in $$(grep -o '^func Fuzz[A-Za-z0-9_]*' $$f | sed 's/^func //'); do \
			echo "== $$pkg $$t"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

clean:
	rm -rf bin $(CACHE)
