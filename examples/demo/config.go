package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// config is everything a run depends on: the flags, plus a few hooks the
// test uses to drive a run in-process.
type config struct {
	redis    string        // "" runs the embedded Redis
	metrics  string        // listen address of /metrics
	duration time.Duration // 0: until interrupted
	faults   faultSet
	ttl      time.Duration
	replicas int
	workers  int
	accounts int
	logFile  string // lockwatch's Warn logs; "" discards them

	// Set by tests, never by flags.
	ready        func(metricsURL string) // called once everything serves
	plainEvery   time.Duration           // interval of the plain progress lines
	forcePlain   bool                    // plain progress even on a terminal
	progressTick time.Duration           // redraw interval of the status line
}

// defaultMetricsAddr is the documented address of /metrics: 9464 is the
// port OpenTelemetry's Prometheus exporters use by convention.
const defaultMetricsAddr = "127.0.0.1:9464"

func defaultConfig() config {
	return config{
		metrics:      defaultMetricsAddr,
		duration:     60 * time.Second,
		faults:       allFaults(),
		ttl:          time.Second,
		replicas:     2,
		workers:      8,
		accounts:     5,
		plainEvery:   5 * time.Second,
		progressTick: 200 * time.Millisecond,
	}
}

// parseFlags reads the command line into a config.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./examples/demo [flags]\n\n%s\n\nFlags:\n", usageIntro)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.redis, "redis", "", "Redis to use, as host:port or a redis:// URL (default: an embedded Redis on a free loopback port)")
	fs.StringVar(&cfg.metrics, "metrics", cfg.metrics, "listen address of the Prometheus /metrics endpoint (127.0.0.1:0 picks a free port)")
	fs.DurationVar(&cfg.duration, "duration", cfg.duration, "how long to run; 0 runs until Ctrl-C")
	fs.Var(&cfg.faults, "faults", "fault injection: true (all), false (none) or a comma-separated list of "+strings.Join(faultNames, ", "))
	fs.DurationVar(&cfg.ttl, "ttl", cfg.ttl, "lease TTL; every other timing of the demo scales with it")
	fs.IntVar(&cfg.replicas, "replicas", cfg.replicas, "replicas of the service, each with its own lease client and Locker")
	fs.IntVar(&cfg.workers, "workers", cfg.workers, "concurrent clients of the workload")
	fs.IntVar(&cfg.accounts, "accounts", cfg.accounts, "accounts (lock keys) the workload spreads over: fewer means more contention")
	fs.StringVar(&cfg.logFile, "log", "", "file for lockwatch's Warn logs (losses, unknown acquires, stale writes); default: discarded")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return cfg, cfg.validate()
}

func (c config) validate() error {
	switch {
	case c.ttl < 100*time.Millisecond:
		return fmt.Errorf("-ttl %v: at least 100ms", c.ttl)
	case c.replicas < 1 || c.replicas > 26:
		return errors.New("-replicas: 1 to 26")
	case c.workers < 1:
		return errors.New("-workers: at least 1")
	case c.accounts < 1:
		return errors.New("-accounts: at least 1")
	case c.duration < 0:
		return errors.New("-duration: not negative")
	}
	return nil
}

const usageIntro = `Runs a small replicated service that holds fenced Redis leases with
lockwatch, drives it with a workload, injects the faults that make locks
unsafe, and shows what lockwatch reports: live on the terminal, and on a
Prometheus endpoint (OpenMetrics, with exemplars).`

// The faults the demo can inject. Each makes a different lockwatch signal
// fire; see the package documentation for which.
const (
	faultRedisLoss  = "redis-loss"
	faultRedisStall = "redis-stall"
	faultPause      = "pause"
	faultOverrun    = "overrun"
	faultSlowCancel = "slow-cancel"
	faultNearExpiry = "near-expiry"
	faultForce      = "force-release"
	faultKill       = "kill"
)

var faultNames = []string{faultRedisLoss, faultRedisStall, faultPause, faultOverrun, faultSlowCancel, faultNearExpiry, faultForce, faultKill}

// faultSet is the -faults flag: a boolean flag (-faults, -faults=false) that
// also takes a list of fault names.
type faultSet map[string]bool

func allFaults() faultSet {
	s := faultSet{}
	for _, n := range faultNames {
		s[n] = true
	}
	return s
}

func (s faultSet) on(name string) bool { return s[name] }

func (s faultSet) any() bool { return len(s) > 0 }

func (s faultSet) String() string {
	if len(s) == 0 {
		return "false"
	}
	if len(s) == len(faultNames) {
		return "true"
	}
	return strings.Join(s.names(), ",")
}

// names lists the faults that are on, in the documented order.
func (s faultSet) names() []string {
	var names []string
	for _, n := range faultNames {
		if s[n] {
			names = append(names, n)
		}
	}
	return names
}

// IsBoolFlag lets a bare -faults mean -faults=true; lists take "=".
func (s *faultSet) IsBoolFlag() bool { return true }

func (s *faultSet) Set(v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "on", "all":
		*s = allFaults()
		return nil
	case "false", "0", "off", "none", "":
		*s = faultSet{}
		return nil
	}
	set := faultSet{}
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(faultNames, n) {
			return fmt.Errorf("unknown fault %q (known: %s)", n, strings.Join(faultNames, ", "))
		}
		set[n] = true
	}
	*s = set
	return nil
}
