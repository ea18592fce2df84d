# hlaunch - see README.md. Every target is a thin wrapper; the logic lives in scripts/.

GO        ?= go
PREFIX    ?= /usr/local
DESTDIR   ?=
BIN       := bin/hlaunch
# -trimpath and a stripped binary: smaller, reproducible, and no build paths in panics shown to users.
BUILDFLAGS ?= -trimpath -buildvcs=auto -ldflags='-s -w'
FUZZTIME  ?= 5s
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(CURDIR)/bin/staticcheck

.PHONY: all build man install uninstall test check unit integration cover fuzz bench bench-ab lint demo clean dist py-types

all: build

# CGO_ENABLED=0: a static binary. With cgo (os/user, net) the binary is dynamically linked and every
# hlaunch process - the CLI, the init stub, each worker's shim - pays the dynamic loader (ADR 0006).
# hlaunch-sidecar is the daemon behind `hlaunch sidecar` (a binary of its own: cmd/hlaunch-sidecar).
build:
	CGO_ENABLED=0 $(GO) build $(BUILDFLAGS) -o bin/ ./cmd/hlaunch ./cmd/hlaunch-sidecar

# Manual pages from the command trees (cobra's doc generator, linked only into this build: -tags mangen).
man:
	rm -rf bin/man
	$(GO) run -tags mangen ./cmd/hlaunch __man bin/man
	$(GO) run -tags mangen ./cmd/hlaunch-sidecar __man bin/man

# Binaries, manual pages, shell completions, systemd units and docs under $(DESTDIR)$(PREFIX);
# uninstall removes exactly those (scripts/install.sh lists them).
install: build man
	PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) scripts/install.sh install

uninstall:
	PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) scripts/install.sh uninstall

# vet + unit + integration + Python client tests + a short run of every fuzz target (scripts/test.sh).
test:
	FUZZTIME=$(FUZZTIME) scripts/test.sh

# The developer loop: gofmt, go vet, staticcheck and the unit tests; no integration tests, no guest.
check: lint unit

unit:
	$(GO) test -count=1 -timeout 10m $$($(GO) list ./... | grep -v -e '/integration$$' -e '/integration/')

integration: build
	HLAUNCH_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 15m -v ./integration/...

# Coverage with the re-executed roles counted (scripts/cover.sh): the unit tests and the integration suite
# against -cover builds, merged with go tool covdata; a table per package, bin/cover/cover.out. Not part
# of make test. COVER_RUN=<regex> runs a subset of the tests, COVER_PKGS the unit step's packages.
cover:
	COVER_RUN='$(COVER_RUN)' scripts/cover.sh

fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# Writes docs/benchmarks.md.
bench: build
	scripts/bench.sh

# The launch path, the sidecar's spawn rate and p99, and the memory per idle worker of BASE against this
# checkout's, interleaved in one run: make bench-ab BASE=<commit> (knobs: scripts/bench-ab.sh).
bench-ab:
	BASE=$(BASE) scripts/bench-ab.sh

lint: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# The Python client's wheel in bin/dist/, built with the standard library only (scripts/py_wheel.py): no
# setuptools, wheel or package index needed; install it with pip into any Python 3.9+ virtual environment.
PYTHON ?= python3
dist:
	$(PYTHON) scripts/py_wheel.py bin/dist

# The Python client's TypedDicts (clients/python/hlaunch_client/_types.py) from docs/schema/*.json; make
# test fails when the checked-in file is not what this generates.
py-types:
	$(PYTHON) scripts/gen_py_types.py

# Builds, makes a demo hermes root with two profiles in a temporary directory, shows a clean child.
demo: build
	scripts/demo.sh

clean:
	rm -rf bin
