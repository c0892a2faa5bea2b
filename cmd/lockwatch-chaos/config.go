package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/pgtest"
	"github.com/lockwatch/lockwatch/permits"
)

// config is everything a run depends on. The schedule of faults is a pure
// function of (seed, duration, ttl, faults, procs, runs): the same flags replay
// the same schedule.
type config struct {
	topology   topology
	seed       uint64
	duration   time.Duration
	ttl        time.Duration
	goroutines int    // holders in this process
	procs      int    // holders in child processes, one each
	runs       int    // holders that are lockwatch run processes
	candidates int    // election candidates in this process, one Locker each
	candProcs  int    // election candidates in child processes of their own
	elects     int    // election candidates that are lockwatch elect processes
	lockwatch  string // the lockwatch binary they run; "" builds cmd/lockwatch
	keys       int
	faults     []faultKind
	unfenced   bool
	dsn        string
	out        string        // directory for the history and porcupine's visualisation; "" picks a temporary one
	timeline   string        // an SVG file to draw the run in; "" draws none
	skew       time.Duration // how far the replicas' wall clocks are behind the machine's
	noNetns    bool          // holder-partition through forwarders even where namespaces can be made
	window     time.Duration // cancellation window; 0 means the lease's safety margin (TTL/10)
	work       time.Duration // longest protected work per lease; 0 means 1.5 TTLs
	progress   time.Duration // interval of the progress line
	// permitHolders hold permits of one semaphore of permitLimit permits,
	// goroutines of this process with a Locker each.
	permitHolders, permitLimit int
	// sharedReaders and sharedWriters use one shared lease whose readers
	// hold one of sharedLimit permits, goroutines of this process with a
	// Locker each.
	sharedReaders, sharedWriters, sharedLimit int
}

func defaultConfig() config {
	return config{
		topology:   topoSingle,
		seed:       uint64(time.Now().UnixNano()),
		duration:   60 * time.Second,
		ttl:        time.Second,
		goroutines: 3,
		procs:      3,
		runs:       2,
		candidates: 2,
		candProcs:  2,
		elects:     2,
		keys:       3,
		faults:     topoSingle.faults(),
		dsn:        pgtest.DSN(),
		progress:   5 * time.Second,
		// More holders than permits: they contend, and a slot freed is
		// taken again at once.
		permitHolders: 4,
		permitLimit:   2,
		// More readers than permits, and two writers: each writer waits
		// for the readers to yield, and for the other writer.
		sharedReaders: 3,
		sharedWriters: 2,
		sharedLimit:   2,
	}
}

// cancelWindow is how long protected work may go on after its lease's
// context was cancelled: the lease cancels a safety margin (TTL/10 by
// default) before the key can expire in Redis, so work that stops within
// that margin has stopped before anyone else can hold the key.
func (c config) cancelWindow() time.Duration {
	if c.window > 0 {
		return c.window
	}
	return c.ttl / 10
}

// maxWork is the longest a holder works under one lease before its Commit.
func (c config) maxWork() time.Duration {
	if c.work > 0 {
		return c.work
	}
	return c.ttl * 3 / 2
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./cmd/lockwatch-chaos [flags]\n\nRuns lockwatch leases and fenced writes under a seeded schedule of\nprocess, server and network faults, and checks the history.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	faults := ""
	topo := string(cfg.topology)
	var seed uint64
	fs.StringVar(&topo, "topology", topo, "the lock Redis: single (a primary and a replica the harness promotes by hand), sentinel (a primary, two replicas and three sentinels that decide every failover), cluster (three masters with a replica each)")
	fs.Uint64Var(&seed, "seed", 0, "seed of the fault schedule and the workload; the same seed replays the same schedule (default: from the clock, printed at the start)")
	fs.DurationVar(&cfg.duration, "duration", cfg.duration, "how long the chaos runs")
	fs.DurationVar(&cfg.ttl, "ttl", cfg.ttl, "lease TTL; every fault timing is a multiple of it")
	fs.IntVar(&cfg.goroutines, "goroutines", cfg.goroutines, "holders running as goroutines of this process")
	fs.IntVar(&cfg.procs, "procs", cfg.procs, "holders running as child processes (the ones that can be SIGSTOPped)")
	fs.IntVar(&cfg.runs, "runs", cfg.runs, "holders that are lockwatch run processes, their programs heartbeating with the fence")
	fs.IntVar(&cfg.candidates, "candidates", cfg.candidates, "election candidates running as goroutines of this process, each with a Locker of its own, all campaigning for the one election key")
	fs.IntVar(&cfg.candProcs, "candidate-procs", cfg.candProcs, "election candidates running as child processes of their own (the ones leader-stop stops)")
	fs.IntVar(&cfg.elects, "elects", cfg.elects, "election candidates that are lockwatch elect processes, their programs heartbeating with the term's fence")
	fs.IntVar(&cfg.permitHolders, "permit-holders", cfg.permitHolders, "holders of the semaphore's permits, goroutines of this process with a Locker each, writing each permit's registers with its token")
	fs.IntVar(&cfg.permitLimit, "permit-limit", cfg.permitLimit, "the semaphore's permits: at most this many permit holders live at once")
	fs.IntVar(&cfg.sharedReaders, "shared-readers", cfg.sharedReaders, "readers of the shared lease, goroutines of this process with a Locker each, reading the key's registers and writing their permit's with its token")
	fs.IntVar(&cfg.sharedWriters, "shared-writers", cfg.sharedWriters, "writers of the shared lease, goroutines of this process with a Locker each, writing the key's registers with the writer's token")
	fs.IntVar(&cfg.sharedLimit, "shared-limit", cfg.sharedLimit, "the shared lease's readers' permits: at most this many readers live at once, and none beside a writer")
	fs.StringVar(&cfg.lockwatch, "lockwatch", "", "the lockwatch binary the run holders run (default: cmd/lockwatch built from the module the harness runs in)")
	fs.IntVar(&cfg.keys, "keys", cfg.keys, "lock keys (and registers) the holders contend for")
	fs.StringVar(&faults, "faults", faults, "comma-separated fault kinds to inject, or none (default: every kind of the topology; single: "+
		strings.Join(faultNames(topoSingle.faults()), ",")+"; sentinel: "+strings.Join(faultNames(topoSentinel.faults()), ",")+
		"; cluster: "+strings.Join(faultNames(topoCluster.faults()), ",")+")")
	fs.BoolVar(&cfg.unfenced, "unfenced", false, "negative control: write without the fence check, and serve the guarded register without its Guard; the run must report violations")
	fs.StringVar(&cfg.dsn, "dsn", cfg.dsn, "PostgreSQL for the SQL register (default $"+pgtest.DSNEnv+"); a schema of its own is created and dropped")
	fs.StringVar(&cfg.out, "out", "", "directory for the fault log, the history and porcupine's visualisation (default: a new temporary directory)")
	fs.StringVar(&cfg.timeline, "timeline", "", "draw the run into this SVG file: faults as bands, each holder's leases as bars, losses and the fence's rejections as marks")
	fs.DurationVar(&cfg.skew, "clock-skew", 0, "start the replicas (the servers a failover promotes; single and sentinel) with wall clocks this far behind the machine's, to try the clock assumption the fence rests on (RELIABILITY.md); needs gcc")
	fs.BoolVar(&cfg.noNetns, "no-netns", false, "holder-partition cuts through per-holder forwarders on loopback even where each holder process could have a network namespace of its own (the default where the harness is root and has ip and nsenter)")
	fs.DurationVar(&cfg.window, "cancel-window", 0, "how long work may run after its lease's context is cancelled (default TTL/10, the safety margin)")
	fs.DurationVar(&cfg.work, "work", 0, "longest protected work under one lease (default 1.5 TTLs: most leases are renewed)")
	fs.DurationVar(&cfg.progress, "progress", cfg.progress, "interval of the progress line")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			cfg.seed = seed // 0 included, when asked for
		}
	})
	var err error
	if cfg.topology, err = parseTopology(topo); err != nil {
		return cfg, err
	}
	cfg.faults = cfg.topology.faults()
	if faults != "" {
		if cfg.faults, err = parseFaults(faults); err != nil {
			return cfg, err
		}
	}
	return cfg, cfg.validate()
}

func (c config) validate() error {
	switch {
	case c.ttl < 200*time.Millisecond:
		return errors.New("-ttl must be at least 200ms: below it a loaded machine misses renewals without any fault")
	case c.duration < 5*c.ttl:
		return errors.New("-duration must be at least 5 TTLs")
	case c.runs < 0:
		return errors.New("-runs must not be negative")
	case slices.ContainsFunc(c.faults, faultKind.runLane) && c.runs == 0:
		return errors.New("the run-* faults need -runs > 0")
	case c.candidates < 0 || c.candProcs < 0 || c.elects < 0:
		return errors.New("-candidates, -candidate-procs and -elects must not be negative")
	case c.candidates+c.candProcs+c.elects == 1:
		return errors.New("an election needs at least two candidates (-candidates, -candidate-procs and -elects), or none")
	case slices.Contains(c.faults, faultLeaderStop) && c.candProcs == 0:
		return errors.New("the leader-stop fault needs -candidate-procs > 0")
	case c.permitHolders < 0:
		return errors.New("-permit-holders must not be negative")
	case c.permitHolders > 0 && (c.permitLimit < 1 || c.permitLimit >= c.permitHolders):
		return errors.New("-permit-limit must be at least 1 and below -permit-holders, so that the holders contend")
	case c.sharedReaders < 0 || c.sharedWriters < 0:
		return errors.New("-shared-readers and -shared-writers must not be negative")
	case c.sharedLeases() && (c.sharedReaders == 0 || c.sharedWriters == 0 || c.sharedLimit < 1 || c.sharedLimit > permits.MaxLimit):
		return fmt.Errorf("a shared lease needs -shared-readers and -shared-writers > 0 (or both 0), and -shared-limit from 1 to %d", permits.MaxLimit)
	case c.goroutines < 0 || c.procs < 0 || c.goroutines+c.procs < 2:
		return errors.New("at least two holders (-goroutines plus -procs) are needed for contention")
	case c.keys < 1:
		return errors.New("-keys must be at least 1")
	case c.progress <= 0:
		return errors.New("-progress must be positive")
	case c.skew < 0:
		return errors.New("-clock-skew is how far behind: it must not be negative")
	case c.skew != 0 && c.topology == topoCluster:
		return errors.New("-clock-skew works on the single and sentinel topologies")
	case slices.Contains(c.faults, faultHolderStop) && c.procs == 0:
		return errors.New("the holder-stop fault needs -procs > 0")
	case slices.Contains(c.faults, faultSuspend) && c.procs == 0:
		return errors.New("the suspend fault needs -procs > 0")
	case slices.Contains(c.faults, faultHolderPartition) && (c.procs == 0 || c.procs > 60):
		return errors.New("the holder-partition fault needs -procs from 1 to 60 (a /30 each in a /24)")
	}
	for _, k := range c.faults {
		if !slices.Contains(c.topology.faults(), k) {
			return fmt.Errorf("-faults: %s is not a fault of the %s topology (its faults: %s)",
				k, c.topology, strings.Join(faultNames(c.topology.faults()), ", "))
		}
	}
	return nil
}
