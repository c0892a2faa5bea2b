# make test is the one test command, for developers and CI alike. On a fresh
# machine it installs what the tests need from Debian's packages; the test
# helpers (internal/redistest) start private redis-server processes on
# loopback ports and stop them when each test ends.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go

.PHONY: test deps fmt-check vet bench

test: deps fmt-check vet
	LOCKWATCH_REQUIRE_INTEGRATION=1 $(GO) test -race -count=1 -timeout 8m ./...

# redis-server is started by the tests themselves; RUNLEVEL=1 keeps the
# package's install script from starting a system-wide instance.
deps:
	@if ! command -v redis-server >/dev/null; then \
		echo "installing redis-server"; \
		apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	fi
	@redis-server --version

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Benchmarks against real redis-server processes (not part of make test).
bench: deps
	LOCKWATCH_REQUIRE_INTEGRATION=1 $(GO) test -run '^$$' -bench . -benchmem -count 5 ./lease
