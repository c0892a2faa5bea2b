# make test is the one test command, for developers and CI alike. On a fresh
# machine it installs what the tests need from Debian's packages; the test
# helpers (internal/testenv/redistest) start private redis-server processes on
# loopback ports and stop them when each test ends.
SHELL := /bin/bash
export PATH := $(PATH):/usr/local/go/bin
GO ?= go

# The modules make test, vet and lint cover (CONTRIBUTING.md, "Modules"):
# the library first, its test kit, then the alert and dashboard
# generators, the examples and the chaos harness. bench/ has rules of its
# own below; tools/ only pins the linters. Each module is tested alone, as
# its go.mod says (GOWORK=off): the committed go.work, which lets go run
# ./examples/demo work from the root, would otherwise build the library
# with the versions the other modules require.
MODULES := . lockwatchtest alerts dashboards kubernetes examples cmd/lockwatch-chaos
export GOWORK := off

# Runs a command in each module of $(MODULES), in order, and fails after
# the last one when any failed, so one run reports every module's failures.
each = fail=0; for m in $(MODULES); do (cd $$m && $(1)) || fail=1; done; exit $$fail

.PHONY: test valkey-late deps fmt-check vet lint pint bench bench-failover chaos chaos-topologies e2e model mutants model-quick model-late workspace-check

# The short chaos runs and the unfenced controls on Sentinel and Cluster
# (about four minutes on this 2-core machine, more than make test's
# budget leaves) run in chaos-topologies, which .ci/run calls after make
# test; make test keeps the single-node ones and every other chaos test.
CHAOS_TOPOLOGIES := (TestChaos|TestUnfencedControl|TestElectionUnfencedControl)/(sentinel|cluster)$$

# The Valkey pass: make test runs lease, fence and middleware, and the
# single node's short chaos run, a second time on valkey-server (make deps
# installs it; LOCKWATCH_REDIS_SERVER names the binary every test helper
# starts, CONTRIBUTING.md). It runs without -race: the race detector checks
# lockwatch's Go code, which the Redis pass already runs under it; this
# pass checks lockwatch against the other server. The chaos run, which
# mostly waits out its 40 s, runs beside the packages. Their Sentinel and
# Cluster failovers, the stalled server and the promotion of a replica
# with a clock behind (VALKEY_LATE, about a minute of the pass's two on a
# loaded 2-core machine) run in valkey-late, which .ci/run calls after
# make test.
VALKEY_ENV := LOCKWATCH_REDIS_SERVER=valkey-server LOCKWATCH_REQUIRE_INTEGRATION=1
VALKEY_PACKAGES := ./lease/ ./fence/ ./middleware/
VALKEY_CHAOS := ^TestChaos$$/^single$$
VALKEY_LATE := ^(TestSentinelFailover|TestClusterFailover|TestClusterTakeoverKeepsTheLease|TestClusterReplicationAckGoesToTheKeysMaster|TestLossBeforeExpiryWhenRedisStalls|TestFenceAcrossPromotionOfAReplicaWithAClockBehind)$$

# The demo's end-to-end run against a real Prometheus (about 45 s) goes
# with the other end-to-end run, to make e2e, which .ci/run calls after
# make test: make test stays within its 10 minutes. (-skip splits its
# pattern at the top-level |, so each alternative names its own test.)
DEMO_E2E := ^TestEndToEndWithPrometheus$$

# make test runs every module's tests in one go test, in the workspace
# (GOWORK set back to go.work), so that the packages of all modules share
# the run two at a time as they did in one module: one module after
# another would leave a core idle behind each module's longest package.
# workspace-check makes that the same as testing each module alone: the
# workspace must select, for every package a module's tests build, the
# version that module's own go.mod selects.
# The chaos module comes first: its package is one of the three longest
# (about 145 s, with lease and cmd/lockwatch), and go test starts packages
# in the order given, so listed last it ran alone at the end, one core
# idle.
TEST_FIRST := cmd/lockwatch-chaos
TEST_PATTERNS := $(foreach m,$(TEST_FIRST) $(filter-out $(TEST_FIRST),$(MODULES)),$(if $(filter .,$(m)),./...,./$(m)/...))
DEPS_FORMAT := {{with .Module}}{{.Path}} {{.Version}}{{end}}

# make test leaves the static checks to make lint, which .ci/run calls
# after it: golangci-lint over every module takes about 80 s of make
# test's 10 minutes, and its govet linter runs go vet's analyzers (make vet
# stays for a quick run by hand).
test: deps fmt-check model-quick workspace-check
	cd bench && LOCKWATCH_REQUIRE_INTEGRATION=1 $(GO) test -count=1 ./...
	GOWORK=$(CURDIR)/go.work LOCKWATCH_REQUIRE_INTEGRATION=1 $(GO) test -race -count=1 -timeout 8m -skip '$(CHAOS_TOPOLOGIES)|$(DEMO_E2E)' $(TEST_PATTERNS)
	(cd cmd/lockwatch-chaos && $(VALKEY_ENV) $(GO) test -count=1 -timeout 5m -run '$(VALKEY_CHAOS)' .) & chaos=$$!; \
	$(VALKEY_ENV) $(GO) test -count=1 -timeout 5m -skip '$(VALKEY_LATE)' $(VALKEY_PACKAGES); status=$$?; \
	wait $$chaos && exit $$status

valkey-late: deps
	$(VALKEY_ENV) $(GO) test -count=1 -timeout 5m -run '$(VALKEY_LATE)' ./lease/

workspace-check:
	$(call each,diff <($(GO) list -deps -test -f '$(DEPS_FORMAT)' ./... | grep -v '^github.com/lockwatch/' | sort -u) \
		<(GOWORK=$(CURDIR)/go.work $(GO) list -deps -test -f '$(DEPS_FORMAT)' ./... | grep -v '^github.com/lockwatch/' | sort -u) \
		|| { echo "workspace-check: the workspace selects other versions than $$m/go.mod (above); align them"; false; })

chaos-topologies: deps
	cd cmd/lockwatch-chaos && LOCKWATCH_REQUIRE_INTEGRATION=1 $(GO) test -race -count=1 -timeout 8m -run '$(CHAOS_TOPOLOGIES)' .

# redis-server is started by the tests themselves; RUNLEVEL=1 keeps the
# package's install script from starting a system-wide instance (the same
# for prometheus and prometheus-alertmanager, whose promtool and amtool the
# alert and dashboard tests run).
#
# PostgreSQL is one shared server (internal/testenv/pgtest gives each test a schema
# of its own). Unless LOCKWATCH_POSTGRES_DSN points the tests elsewhere, deps
# makes the default one answer on 127.0.0.1:5432: it installs Debian's
# postgresql when no cluster exists, starts the cluster when it is stopped,
# and sets the postgres role's password only when PG_DSN cannot log in (a
# fresh Debian install asks for one over TCP). A running server is never
# stopped or reconfigured.
PG_DSN := postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable
#
# MariaDB is one shared server too (internal/testenv/mysqltest gives each test a
# database of its own). Unless LOCKWATCH_MYSQL_DSN points the tests
# elsewhere, deps makes the default one (root without a password on
# 127.0.0.1:3306, database test) answer: when nothing listens on the port
# it installs Debian's mariadb-server if it is missing (RUNLEVEL=1: no
# system-wide start) and starts mariadbd. Only when root cannot log in over
# TCP (a fresh Debian install authenticates root by unix_socket only) does
# it add an empty password to root, keeping unix_socket; and it creates the
# test database if there is none. A running server is never stopped or
# reconfigured otherwise.
MYSQL_TCP := mysql --protocol=tcp -h127.0.0.1 -P3306 -uroot --connect-timeout=5

deps:
	@if ! command -v redis-server >/dev/null; then \
		echo "installing redis-server"; \
		apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	fi
	@redis-server --version
	@# Valkey, the server many distributions ship in Redis's place: make
	@# test runs lease, fence and middleware against it too. Debian ships
	@# it in the release's backports suite (bookworm-backports); when that
	@# suite is not configured, deps adds it on the mirror the machine's
	@# Debian entries use. The tests start valkey-server --sentinel for a
	@# sentinel, so valkey-sentinel's service package is not needed.
	@if ! command -v valkey-server >/dev/null; then \
		echo "installing valkey-server"; \
		. /etc/os-release; suite=$$VERSION_CODENAME-backports; \
		srcs=$$(ls /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null); \
		if ! grep -qsE "^[^#]*[[:space:]]$$suite([[:space:]]|$$)" $$srcs; then \
			uri=$$(grep -hvE '^[[:space:]]*#' $$srcs | grep -oE '[a-z+]+://[^[:space:]]+/debian/?([[:space:]]|$$)' | head -1 | tr -d '[:space:]'); \
			[ -n "$$uri" ] || { echo "deps: no Debian mirror in $$srcs to add $$suite from"; exit 1; }; \
			printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
				"$$uri" "$$suite" >/etc/apt/sources.list.d/$$suite.sources || exit 1; \
		fi; \
		apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t $$suite valkey-server >/dev/null || exit 1; \
	fi
	@valkey-server --version
	@if ! command -v gcc >/dev/null; then \
		echo "installing gcc (internal/testenv/redistest builds its clock shim with it, and SPIN's verifiers)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev >/dev/null; \
	fi
	@# The protocol model (model/): spin writes a verifier in C, gcc builds it.
	@if ! command -v spin >/dev/null; then \
		echo "installing spin (make model, and model's conformance test)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq spin >/dev/null; \
	fi
	@if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null || ! command -v amtool >/dev/null; then \
		echo "installing prometheus and prometheus-alertmanager (promtool, amtool)"; \
		apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus prometheus-alertmanager >/dev/null; \
	fi
	@# The debugpage tests load the page in headless Chromium (internal/testenv/browsertest).
	@if ! command -v chromium >/dev/null; then \
		echo "installing chromium (the debug page's browser test)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi
	@# cmd/lockwatch's cron test runs the README's report script, which writes with psql.
	@if ! command -v psql >/dev/null; then \
		echo "installing postgresql-client (psql)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-client >/dev/null; \
	fi
	@if [ -z "$$LOCKWATCH_POSTGRES_DSN" ] && ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then \
		if ! ls /etc/postgresql/*/main/postgresql.conf >/dev/null 2>&1; then \
			echo "installing postgresql"; \
			apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null || exit 1; \
		fi; \
		ver=$$(ls /etc/postgresql | head -1); \
		if ! pg_ctlcluster $$ver main status >/dev/null 2>&1; then \
			echo "starting postgresql $$ver"; \
			pg_ctlcluster --skip-systemctl-redirect $$ver main start || exit 1; \
		fi; \
		for i in $$(seq 100); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.1; done; \
		pg_isready -h 127.0.0.1 -p 5432 >/dev/null || { echo "postgresql $$ver does not answer on 127.0.0.1:5432"; exit 1; }; \
	fi
	@if [ -z "$$LOCKWATCH_POSTGRES_DSN" ] && ! PGCONNECT_TIMEOUT=5 psql "$(PG_DSN)" -Atqc 'SELECT 1' >/dev/null 2>&1; then \
		echo "setting the postgres role's password for $(PG_DSN)"; \
		runuser -u postgres -- psql -q -c "ALTER ROLE postgres PASSWORD 'postgres'" || exit 1; \
	fi
	@if [ -z "$$LOCKWATCH_MYSQL_DSN" ] && ! (exec 3<>/dev/tcp/127.0.0.1/3306) 2>/dev/null; then \
		if [ ! -x /usr/sbin/mariadbd ]; then \
			echo "installing mariadb-server"; \
			apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null || exit 1; \
		fi; \
		echo "starting mariadb"; \
		install -d -o mysql -g mysql /run/mysqld || exit 1; \
		start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql --bind-address=127.0.0.1 --port=3306 || exit 1; \
		for i in $$(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/3306) 2>/dev/null && break; sleep 0.1; done; \
		(exec 3<>/dev/tcp/127.0.0.1/3306) 2>/dev/null || { echo "mariadb does not answer on 127.0.0.1:3306"; exit 1; }; \
	fi
	@if [ -z "$$LOCKWATCH_MYSQL_DSN" ]; then \
		if ! command -v mysql >/dev/null; then \
			echo "installing mariadb-client"; \
			apt-get update -qq && RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-client >/dev/null || exit 1; \
		fi; \
		if ! $(MYSQL_TCP) -e 'SELECT 1' >/dev/null 2>&1; then \
			echo "letting root log in over TCP without a password"; \
			mysql -uroot -e "ALTER USER root@localhost IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD(''); \
				CREATE USER IF NOT EXISTS root@'127.0.0.1' IDENTIFIED VIA mysql_native_password USING PASSWORD(''); \
				GRANT ALL PRIVILEGES ON *.* TO root@'127.0.0.1' WITH GRANT OPTION" || exit 1; \
		fi; \
		$(MYSQL_TCP) -e 'CREATE DATABASE IF NOT EXISTS test' || exit 1; \
	fi

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# The protocol model (model/README.md): make model checks each scenario of
# model/lease.pml exhaustively with SPIN; make model MUTANT=NAME checks one
# mutant of model/MUTANTS, which must fail with a counterexample trail;
# make mutants checks them all (two at a time), and a mutant that stops
# failing fails it. They need only spin and gcc
# (make deps installs them), not the servers.
#
# make test leaves the repair's runs and the wait queue's (MODEL_LATE: five
# scenarios and twelve mutants, about a minute and a half on 2 cores) to make
# model-late, which .ci/run calls after make test; model-quick checks the
# rest.
MODEL_LATE := REPAIR RLOSS REPAIR_TO_RECORD REPAIR_WITHOUT_SKEW FIFO QGHOST QDUP \
	GRANT_PASSES_HEAD VALIDITY_FROM_RECEIPT EXPIRED_NOT_SKIPPED LIVE_SKIPPED \
	LEAVE_KEEPS_GRANT GRANT_REUSES_FENCE ENQUEUE_APART GHOST_ENTRY_KEPT \
	QUEUED_COPY_BARRED OWN_GRANT_BARRED
SPIN_CHECK := @command -v spin >/dev/null || { echo "model: spin is not installed (make deps installs it)"; exit 1; }

model:
	$(SPIN_CHECK)
	model/check.sh $(MUTANT)

mutants:
	$(SPIN_CHECK)
	model/check.sh mutants

model-quick:
	$(SPIN_CHECK)
	MODEL_SKIP='$(MODEL_LATE)' model/check.sh
	MODEL_SKIP='$(MODEL_LATE)' model/check.sh mutants

model-late:
	$(SPIN_CHECK)
	MODEL_ONLY='$(MODEL_LATE)' model/check.sh
	MODEL_ONLY='$(MODEL_LATE)' model/check.sh mutants

# bench/ is a module of its own (it imports the libraries it compares
# with), like each of $(MODULES): ./... does not cross into another module.
# So is bench/failover (etcd's server), which is not in go.work either.
vet:
	$(call each,$(GO) vet ./...)
	cd bench && $(GO) vet ./...
	cd bench/failover && $(GO) vet ./...

# golangci-lint (.golangci.yml, whose staticcheck linter runs staticcheck's
# checks) over every module, at the version pinned in tools/go.mod: a
# module of its own, so the library's go.mod does not carry it. go tool
# builds it from the module cache on first use (fetching the modules once
# on a fresh machine) and keeps the binary in the build cache; nothing
# else needs installing.
LINT_MODFILE := -modfile=$(CURDIR)/tools/go.mod
lint: pint
	$(call each,$(GO) tool $(LINT_MODFILE) golangci-lint run ./...)
	cd bench && $(GO) tool $(LINT_MODFILE) golangci-lint run ./...
	cd bench/failover && $(GO) tool $(LINT_MODFILE) golangci-lint run ./...

# pint (Cloudflare's Prometheus rule linter) over the generated alerting
# rules, offline: no Prometheus is queried. .pint.hcl runs PromQL syntax,
# fragile and regexp selectors, impossible and NaN-prone expressions, the
# for durations, the annotation templates (labels a description reads must
# survive the aggregation), duplicate rules, job plus the resource or lock
# label kept by every aggregation, a Lockwatch name, severity critical or
# warning, and summary, description and runbook_url present. Any problem of
# severity warning or above fails. pint is pinned in tools/pint/go.mod, a
# module of its own: its Prometheus libraries are newer than those that
# tools/go.mod's linters pin. The online checks (promql/series, promql/rate,
# promql/counter, …) query the Prometheus of .pint.hcl and come with make
# e2e, which runs the same command (PINT_ARGS, passed to its test) without
# --offline.
PINT_MODFILE := -modfile=$(CURDIR)/tools/pint/go.mod
PINT_ARGS := --no-color --config=$(CURDIR)/.pint.hcl lint --min-severity=info --fail-on=warning alerts/lockwatch.rules.yaml
pint:
	LOCKWATCH_PINT_PROMETHEUS=http://127.0.0.1:9090 $(GO) tool $(PINT_MODFILE) pint --offline $(PINT_ARGS)

# The whole stack, beyond make test (.ci/run runs it after make test):
# examples/demo's TestWholeStack (build tag e2e) runs one demo, faults on,
# exporting its spans to a real Jaeger (v2, in memory,
# github.com/jaegertracing/jaeger/cmd/jaeger pinned in tools/jaeger/go.mod,
# a module of its own so the library's go.mod stays clean) and scraped by a
# real Prometheus with the generated rules, all on free loopback ports. On
# that stack it runs pint online (make pint's command without --offline,
# against that Prometheus: every series and label value a rule names must
# exist, any warning fails), then follows the scrape's exemplars into
# Jaeger and checks the traces (fence.check under the late holder's
# lease.lost, lease.acquire under the otelhttp and otelgrpc server spans,
# the HTTP and RPC conventions). The test's doc comment says the rest. go
# tool builds Jaeger and pint from the module cache on first use (fetching
# their modules once) and keeps the binaries in the build cache.
JAEGER_MODFILE := -modfile=$(CURDIR)/tools/jaeger/go.mod
e2e: deps
	jaeger=$$($(GO) tool $(JAEGER_MODFILE) -n jaeger) && \
	pint=$$($(GO) tool $(PINT_MODFILE) -n pint) && \
	cd examples && LOCKWATCH_REQUIRE_INTEGRATION=1 LOCKWATCH_JAEGER=$$jaeger LOCKWATCH_PINT=$$pint LOCKWATCH_PINT_ARGS='$(PINT_ARGS)' $(GO) test -tags e2e -count=1 -timeout 10m -run '^TestWholeStack$$' ./demo/
	cd examples && LOCKWATCH_REQUIRE_INTEGRATION=1 $(GO) test -race -count=1 -timeout 8m -run '$(DEMO_E2E)' ./demo/

# Benchmarks against real redis-server processes (not part of make test).
# benchmd runs the comparative benchmarks of bench/ and writes BENCHMARKS.md
# (BENCHMD_FLAGS adds flags, e.g. -rev when measuring an exported tree).
# BenchmarkRedisInstructions counts redis-server's instructions under
# valgrind (Debian's valgrind package, installed here when missing).
bench: deps
	@if ! command -v valgrind >/dev/null; then \
		echo "installing valgrind"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind >/dev/null; \
	fi
	LOCKWATCH_REQUIRE_INTEGRATION=1 $(GO) test -run '^$$' -bench . -benchmem -count 5 ./lease
	cd bench && $(GO) run ./cmd/benchmd -go $(GO) -count 5 -slow-count 3 -out ../BENCHMARKS.md $(BENCHMD_FLAGS)

# The failover benchmark alone (about eight minutes; make bench runs it
# too): lockwatch's election beside etcd's on an embedded etcd server
# (bench/failover, a module of its own kept out of go.work, whose etcd
# dependencies would change what the workspace selects for the other
# modules). benchmd replaces only the failover section of BENCHMARKS.md.
bench-failover: deps
	cd bench && $(GO) run ./cmd/benchmd -go $(GO) -only failover -out ../BENCHMARKS.md $(BENCHMD_FLAGS)

# The long chaos run (make test runs a short one of each topology): every
# fault kind of the topology, round after round, then the checks and the
# fault table. TOPOLOGY is single, sentinel or cluster; SEED replays a schedule,
# e.g. make chaos TOPOLOGY=sentinel SEED=42 DURATION=2m.
DURATION ?= 10m
SEED ?=
TOPOLOGY ?= single
chaos: deps
	cd cmd/lockwatch-chaos && LOCKWATCH_REQUIRE_INTEGRATION=1 $(GO) run . -topology $(TOPOLOGY) -duration $(DURATION) $(if $(SEED),-seed $(SEED))
