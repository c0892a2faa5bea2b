package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/goleak"
)

// checkTimeout bounds porcupine on one register; a history it cannot decide
// in that time is reported as linearizable=unknown, which fails the run.
const checkTimeout = 2 * time.Minute

// cleanups runs what a run started, in reverse, exactly once: at the end of
// a run, or on the way out of a failed start.
type cleanups struct {
	fns  []func() error
	once sync.Once
	err  error
}

func (c *cleanups) add(f func() error) { c.fns = append(c.fns, f) }

func (c *cleanups) run() error {
	c.once.Do(func() {
		for _, f := range slices.Backward(c.fns) {
			c.err = errors.Join(c.err, f())
		}
	})
	return c.err
}

// run starts the servers and holders, injects the schedule for
// cfg.duration (or until ctx is done), stops everything, checks the
// history and prints the report, whose last line is the summary. An error
// means the harness itself failed (a server would not start); violations
// are in the summary.
func run(ctx context.Context, cfg config, w io.Writer) (sum summary, err error) {
	leakBaseline := goleak.IgnoreCurrent()
	started := time.Now()
	out := &output{w: w, start: started}
	var cl cleanups
	defer func() {
		if cerr := cl.run(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	dir := cfg.out
	if dir == "" {
		if dir, err = os.MkdirTemp("", "lockwatch-chaos-"); err != nil {
			return sum, err
		}
	} else if err = os.MkdirAll(dir, 0o755); err != nil {
		return sum, err
	}
	serverDir, err := os.MkdirTemp("", "lockwatch-chaos-redis-")
	if err != nil {
		return sum, err
	}
	cl.add(func() error { return os.RemoveAll(serverDir) })
	faultLog, err := os.Create(filepath.Join(dir, "faults.log"))
	if err != nil {
		return sum, err
	}
	cl.add(faultLog.Close)
	out.log = faultLog

	plan := schedule(cfg.seed, cfg.duration, cfg.ttl, cfg.faults, cfg.procs, cfg.runs)
	mode := "fenced"
	if cfg.unfenced {
		mode = "UNFENCED (negative control)"
	}
	if cfg.skew != 0 {
		mode += fmt.Sprintf(", replicas' clocks %v behind", cfg.skew)
	}
	out.event("seed=%d topology=%s duration=%v ttl=%v holders=%d goroutines + %d processes + %d lockwatch runs keys=%d election candidates=%d goroutines + %d processes + %d lockwatch elects writes %s; %d faults planned; output in %s",
		cfg.seed, cfg.topology, cfg.duration, cfg.ttl, cfg.goroutines, cfg.procs, cfg.runs, cfg.keys, cfg.candidates, cfg.candProcs, cfg.elects, mode, len(plan), dir)
	var mainPlan, runPlan, electPlan []fault
	for _, f := range plan {
		fmt.Fprintf(faultLog, "plan: %s\n", f)
		switch {
		case f.Kind.runLane():
			runPlan = append(runPlan, f)
		case f.Kind.electLane():
			electPlan = append(electPlan, f)
		default:
			mainPlan = append(mainPlan, f)
		}
	}
	bin := cfg.lockwatch
	if bin == "" && cfg.runs+cfg.elects > 0 {
		if bin, err = buildLockwatch(serverDir); err != nil {
			return sum, err
		}
	}

	schema, dropSchema, err := createSchema(ctx, cfg.dsn)
	if err != nil {
		return sum, fmt.Errorf("PostgreSQL (-dsn, $LOCKWATCH_POSTGRES_DSN): %w", err)
	}
	cl.add(dropSchema)
	keys := make([]string, cfg.keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i+1)
	}
	// The election's key is one more lock key to the deployment: Cluster
	// faults take it in turn with the others.
	deployKeys := keys
	if cfg.elections() {
		deployKeys = append(slices.Clone(deployKeys), electionKey)
	}
	if cfg.permits() {
		deployKeys = append(slices.Clone(deployKeys), permitsKey)
	}
	if cfg.sharedLeases() {
		deployKeys = append(slices.Clone(deployKeys), sharedKey)
	}
	lockRedis, err := startDeployment(cfg, serverDir, deployKeys)
	if err != nil {
		return sum, fmt.Errorf("start the lock Redis (%s): %w", cfg.topology, err)
	}
	cl.add(lockRedis.close)
	fenceRedis, err := launch(filepath.Join(serverDir, "fence"), 0, "--maxmemory-policy", "noeviction")
	if err != nil {
		return sum, fmt.Errorf("start the fence store's Redis: %w", err)
	}
	cl.add(fenceRedis.Kill)

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	cl.add(func() error { return mp.Shutdown(context.Background()) })
	tel := telemetry.New(telemetry.Config{MeterProvider: mp, Logger: slog.New(slog.DiscardHandler)})
	// The guarded register: one Guard over all its entry points, or none.
	guardRedis := redis.NewClient(&redis.Options{Addr: fenceRedis.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	cl.add(guardRedis.Close)
	guard := newGuard(guardRedis, tel, cfg.ttl)
	guardFor := func() *middleware.Guard { return guard }
	if cfg.unfenced {
		guardFor = nil
	}
	guarded := newGuardedRegister()
	guardSrv, err := serveGuarded(guarded, guardFor)
	if err != nil {
		return sum, fmt.Errorf("serve the guarded register: %w", err)
	}
	cl.add(guardSrv.close)
	regs, err := newRegisters(fenceRedis.Addr(), cfg.dsn, schema, guardSrv.addrs, tel, cfg.unfenced)
	if err != nil {
		return sum, err
	}
	cl.add(regs.close)

	hist := &history{}
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopAll := func() { stopOnce.Do(func() { close(stop) }) }
	cl.add(func() error { stopAll(); return nil })

	children := make([]*child, 0, cfg.procs)
	finished := map[*child]bool{}
	cl.add(func() error {
		var errs []error
		for _, c := range children {
			if !finished[c] {
				c.kill()
				errs = append(errs, c.wait(10*time.Second))
			}
		}
		return errors.Join(errs...)
	})
	// holder-partition cuts one holder process off: through a network
	// namespace of its own where one can be made, else through forwarders.
	partition := slices.Contains(cfg.faults, faultHolderPartition)
	netns := false
	if partition {
		err := netnsAvailable()
		if cfg.noNetns {
			err = errors.New("-no-netns")
		}
		if err != nil {
			out.event("holder-partition: no network namespaces here (%v); the cuts fall back to per-holder forwarders on loopback", err)
		} else {
			netns = true
			out.event("holder-partition: every holder process in a network namespace of its own; the cuts are blackhole routes")
		}
	}
	for i := 1; i <= cfg.procs; i++ {
		var cn *childNet
		if partition {
			cn = &childNet{}
			cl.add(cn.close)
		}
		c, err := startChild(childConfig{
			Index: i, Lock: lockRedis.target(), FenceAddr: fenceRedis.Addr(), Guard: guardSrv.addrs, DSN: cfg.dsn, Schema: schema,
			Keys: keys, TTL: cfg.ttl, Work: cfg.maxWork(), Seed: cfg.seed + uint64(i), Unfenced: cfg.unfenced,
		}, hist, filepath.Join(dir, fmt.Sprintf("p%d.log", i)), cn, netns)
		if err != nil {
			return sum, fmt.Errorf("start holder process p%d: %w", i, err)
		}
		children = append(children, c)
	}
	// The candidate processes come after the holder processes: their
	// indexes follow, and the main lane's faults never pick them.
	cands := make([]*child, 0, cfg.candProcs)
	for i := 1; i <= cfg.candProcs; i++ {
		index, name := cfg.procs+i, fmt.Sprintf("c%d", cfg.candidates+i)
		c, err := startChild(childConfig{
			Index: index, Lock: lockRedis.target(), FenceAddr: fenceRedis.Addr(), Guard: guardSrv.addrs, DSN: cfg.dsn, Schema: schema,
			TTL: cfg.ttl, Seed: cfg.seed + uint64(300+i), Unfenced: cfg.unfenced, Candidate: name,
		}, hist, filepath.Join(dir, name+".log"), nil, false)
		if err != nil {
			return sum, fmt.Errorf("start candidate process %s: %w", name, err)
		}
		cands = append(cands, c)
		children = append(children, c) // for the clean-up; the lanes use their own lists
	}
	holderProcs := children[:cfg.procs]
	// The goroutine holders are the workers of one replica: one Locker.
	shared := newLockClient(lockRedis.target(), cfg.ttl, tel)
	var closeShared sync.Once
	var sharedErr error
	closeLocker := func() error {
		closeShared.Do(func() { sharedErr = shared.close() })
		return sharedErr
	}
	cl.add(closeLocker)
	var holding sync.WaitGroup
	locals, err := startCandidates(cfg, lockRedis.target(), regs, hist, stop, &holding)
	cl.add(locals.close)
	if err != nil {
		return sum, fmt.Errorf("start the election candidates: %w", err)
	}
	perms, err := startPermitHolders(cfg, lockRedis.target(), regs, hist, stop, &holding)
	cl.add(perms.close)
	if err != nil {
		return sum, fmt.Errorf("start the permit holders: %w", err)
	}
	readers, err := startSharedHolders(cfg, lockRedis.target(), regs, hist, stop, &holding)
	cl.add(readers.close)
	if err != nil {
		return sum, fmt.Errorf("start the shared lease holders: %w", err)
	}
	for i := range cfg.goroutines {
		h := newHolder(fmt.Sprintf("g%d", i+1), 0, shared.locker, cfg.ttl, cfg.maxWork(), keys, tel, regs,
			cfg.seed+uint64(100+i), hist, stop)
		holding.Go(h.run)
	}
	// A run holder's last lockwatch run may have to wait out its program's
	// work, up to 3.5 TTLs, and a lost lease's clean-up.
	runsTimeout := 10*cfg.ttl + 20*time.Second
	fleet, err := startRuns(cfg, bin, dir, lockRedis.target(), keys, stop)
	if err != nil {
		return sum, fmt.Errorf("start the lockwatch run holders: %w", err)
	}
	cl.add(func() error {
		stopAll()
		_, err := fleet.finish(runsTimeout)
		return err
	})

	origin := now() // the injector's start on the history's clock
	start := time.Now()
	newInjector := func() *injector {
		return &injector{seed: cfg.seed, ttl: cfg.ttl, redis: lockRedis, children: holderProcs, cands: cands, runs: fleet.runHolders(),
			inspect: shared.locker.Inspect, out: out, start: start, stop: stop, expired: map[workID]int64{}}
	}
	// The run holders' lane (runfaults.go) and the election's (elections.go)
	// beside the main one.
	inj, runInj, electInj := newInjector(), newInjector(), newInjector()
	out.restart(start) // from here on, printed offsets are the schedule's
	injResult := make(chan error, 1)
	injDone := injResult
	go func() { injResult <- inj.run(mainPlan) }()
	runInjResult := make(chan error, 1)
	go func() { runInjResult <- runInj.run(runPlan) }()
	electInjResult := make(chan error, 1)
	go func() { electInjResult <- electInj.run(electPlan) }()
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		progress(out, hist, inj, len(mainPlan), cfg.progress, stop)
	}()

	timer := time.NewTimer(cfg.duration)
	var harnessErr error
	interrupted := false
	for waiting := true; waiting; {
		select {
		case <-timer.C:
			waiting = false
		case <-ctx.Done():
			// A Ctrl-C on a terminal also reaches the redis-servers, which
			// shut down: what fails from here on is no finding.
			out.event("interrupted: stopping")
			interrupted, waiting = true, false
		case e := <-injDone:
			injDone <- e
			if e != nil { // the deployment is broken: stop now
				waiting = false
			} else {
				injDone = nil // the plan is done; the calm tail runs to the end
			}
		}
	}
	timer.Stop()
	stopAll()
	injErr := <-injResult
	runInjErr := <-runInjResult
	electInjErr := <-electInjResult
	<-progressDone
	holding.Wait()
	elapsed := time.Since(inj.start)

	// Every holder ends with its Locker closed, so that what its metrics
	// counted is final before they are read.
	var metrics counts
	reported := map[int]counts{}
	if err := closeLocker(); err != nil {
		harnessErr = errors.Join(harnessErr, err)
	}
	electMetrics, err := locals.finish()
	if err != nil {
		harnessErr = errors.Join(harnessErr, err)
	}
	permitMetrics, err := perms.finish()
	if err != nil {
		harnessErr = errors.Join(harnessErr, err)
	}
	sharedMetrics, err := readers.finish()
	if err != nil {
		harnessErr = errors.Join(harnessErr, err)
	}
	termsSent := map[int]int{}
	for _, c := range children {
		rep, err := c.finish(10*cfg.ttl + 20*time.Second)
		finished[c] = true
		if err != nil {
			harnessErr = errors.Join(harnessErr, err)
			continue
		}
		metrics.add(rep.Metrics)
		reported[c.index] = rep.Seen
		electMetrics.add(rep.Election)
		termsSent[c.index] = rep.Terms
	}
	own, err := collect(context.Background(), reader)
	if err != nil {
		harnessErr = errors.Join(harnessErr, err)
	}
	metrics.add(own)
	outlived, err := fleet.finish(runsTimeout)
	if err != nil {
		harnessErr = errors.Join(harnessErr, err)
	}

	ops, leases := hist.snapshot()
	terms := hist.termsOf()
	termWork := make([]leaseRec, len(terms))
	for i, t := range terms {
		termWork[i] = t.work()
	}
	audit, err := readAudit(context.Background(), regs.db)
	if err != nil {
		harnessErr = errors.Join(harnessErr, fmt.Errorf("read the audit log: %w", err))
	}
	logs := map[string][]acceptEntry{regPG: audit, regGuard: guarded.accepted()}
	fos := lockRedis.failovers()
	faults := slices.Concat(inj.injected(), runInj.injected(), electInj.injected())
	slices.SortFunc(faults, func(a, b injected) int { return cmp.Compare(a.Start, b.Start) })
	runWork := fleet.beats.work()
	sum = analyse(cfg, ops, leases, slices.Concat(runWork, termWork), faults, fos, metrics, logs, dir, children)
	sum.Failovers = failoverFigures(fos, ops, slices.Concat(leases, termWork))
	if cfg.elections() {
		pauseStart := func(proc int, from, to int64) (int64, bool) {
			if proc > 0 && proc <= len(children) {
				return children[proc-1].pauseDuring(from, to)
			}
			return 0, false
		}
		sum.Elections = electionFiguresOf(cfg, terms, runWork, ops, faults, electMetrics, pauseStart)
		sum.Violations = append(sum.Violations, sum.Elections.violations...)
		for _, c := range cands {
			if got := len(slices.DeleteFunc(slices.Clone(terms), func(t termRec) bool { return t.Proc != c.index })); got != termsSent[c.index] {
				sum.Violations = append(sum.Violations, fmt.Sprintf("history of candidate process %d incomplete: %d terms sent, %d received", c.index, termsSent[c.index], got))
			}
		}
	}
	if cfg.permits() {
		sum.addPermits(cfg, ops, leases, faults, fos, permitMetrics, children)
	}
	if cfg.sharedLeases() {
		sum.addShared(cfg, ops, leases, faults, fos, sharedMetrics, children)
	}
	sum.injected = faults
	sum.Duration = elapsed
	if cfg.runs > 0 {
		sum.Runs = runFiguresOf(fleet.runs(false), fleet.beats, cfg.ttl/20, false)
		sum.Runs.Beats, sum.Runs.Unsupervised = fleet.beats.counts()
		after := fleet.beats.after(sum.Runs.exited, "its lockwatch run had exited")
		sum.Runs.AfterExit = len(after)
		expired := fleet.beats.after(runInj.expiries(), "its key expired in Redis")
		sum.Runs.AfterExpiry = len(expired)
		for _, v := range slices.Concat(sum.Runs.unexpected, after, expired, runInj.violations()) {
			sum.Violations = append(sum.Violations, "lockwatch run: "+v)
		}
	}
	if cfg.elects > 0 {
		sum.Elects = runFiguresOf(fleet.runs(true), fleet.beats, cfg.ttl/20, true)
		after := fleet.beats.after(sum.Elects.exited, "its lockwatch elect had exited")
		sum.Elects.AfterExit = len(after)
		for _, v := range slices.Concat(sum.Elects.unexpected, after) {
			sum.Violations = append(sum.Violations, "lockwatch elect: "+v)
		}
	}
	for _, v := range outlived {
		sum.Violations = append(sum.Violations, "lockwatch run or elect: "+v)
	}
	for i, seen := range reported {
		var pops []op
		var pleases []leaseRec
		for _, o := range ops {
			if o.Proc == i {
				pops = append(pops, o)
			}
		}
		for _, r := range leases {
			if r.Proc == i {
				pleases = append(pleases, r)
			}
		}
		for _, d := range compareCounts(seen, holderCounts(pops, pleases), "sent", "received") {
			sum.MetricsExact = false
			sum.Violations = append(sum.Violations, fmt.Sprintf("history of p%d incomplete: %s", i, d))
		}
	}
	switch {
	case injErr != nil && interrupted:
		out.event("interrupted during a fault: %v", injErr)
	case injErr != nil:
		sum.Violations = append(sum.Violations, "the fault schedule could not be completed: "+injErr.Error())
	}
	if runInjErr != nil && !interrupted {
		sum.Violations = append(sum.Violations, "the run holders' faults could not be completed: "+runInjErr.Error())
	}
	if electInjErr != nil && !interrupted {
		sum.Violations = append(sum.Violations, "the election's faults could not be completed: "+electInjErr.Error())
	}
	if harnessErr != nil {
		sum.Violations = append(sum.Violations, "harness: "+harnessErr.Error())
	}
	if err := writeHistory(filepath.Join(dir, "history.jsonl"), ops, leases, terms); err != nil {
		sum.Violations = append(sum.Violations, "write the history: "+err.Error())
	}
	if cfg.runs+cfg.elects > 0 {
		if err := writeRuns(filepath.Join(dir, "runs.jsonl"), slices.Concat(fleet.runs(false), fleet.runs(true)), runWork); err != nil {
			sum.Violations = append(sum.Violations, "write the runs: "+err.Error())
		}
	}
	if cfg.timeline != "" {
		title := fmt.Sprintf("lockwatch-chaos -topology %s -seed %d -duration %v", cfg.topology, cfg.seed, cfg.duration)
		if cfg.unfenced {
			title += " -unfenced"
		}
		tl := timeline{
			title: title, start: origin, end: origin + int64(elapsed), faults: faults, ops: ops, leases: slices.Concat(leases, runWork, termWork), stale: sum.staleOps,
		}
		if err := tl.write(cfg.timeline); err != nil {
			sum.Violations = append(sum.Violations, "write the timeline: "+err.Error())
		}
	}

	// Check 7: nothing outlives the run. Everything is stopped first.
	if err := cl.run(); err != nil {
		sum.Violations = append(sum.Violations, "cleanup: "+err.Error())
	}
	if procs, err := childProcesses(); err != nil {
		sum.Violations = append(sum.Violations, "list child processes: "+err.Error())
	} else if len(procs) > 0 {
		sum.Violations = append(sum.Violations, "processes outlived the run: "+strings.Join(procs, "; "))
	}
	if err := goleak.Find(leakBaseline); err != nil {
		sum.Violations = append(sum.Violations, "goroutines outlived the run: "+err.Error())
	}
	sum.print(w)
	return sum, nil
}

// analyse runs checks 1 to 5 on the history and on the accept logs, by
// register, of the registers that keep one. work is what counts as leases
// for the overlap check besides leases: programs' work, election terms.
func analyse(cfg config, ops []op, leases, work []leaseRec, faults []injected, fos []failover, metrics counts,
	logs map[string][]acceptEntry, dir string, children []*child) summary {
	s := summary{Seed: cfg.seed, Ops: len(ops), Faults: len(faults), Metrics: metrics, Fired: map[faultKind]int{}}
	for _, f := range faults {
		s.Fired[f.Kind]++
	}

	// 1. Fence order: acquires and accepted writes, by real time; the SQL
	// and guarded registers also by the exact order of their accept logs.
	var acquired, accepted []op
	for _, o := range ops {
		switch {
		case o.Kind == kindAcquire && o.Outcome == outAcquired:
			acquired = append(acquired, o)
		case o.Kind == kindWrite && o.Outcome == outOK:
			accepted = append(accepted, o)
		}
	}
	mint, _ := realTimeOrder(acquired)
	writes, offenders := realTimeOrder(accepted)
	for _, v := range mint {
		s.Violations = append(s.Violations, "fence minted out of order: "+v)
	}
	for _, v := range writes {
		s.Violations = append(s.Violations, "stale write accepted: "+v)
	}
	s.OrderViolations = len(mint) + len(writes)
	stale := map[string]op{}
	for _, o := range offenders {
		stale[o.Reg+"/"+o.Value] = o
	}
	outOfOrder := map[string]int{}
	for _, reg := range slices.Sorted(maps.Keys(logs)) {
		bad, values := acceptOrder(reg, logs[reg])
		for _, v := range bad {
			s.Violations = append(s.Violations, "stale write accepted (accept log): "+v)
		}
		s.OrderViolations += len(bad)
		outOfOrder[reg] = len(bad)
		for _, v := range values {
			if _, ok := stale[reg+"/"+v]; !ok {
				o := op{Reg: reg, Value: v}
				if i := slices.IndexFunc(accepted, func(a op) bool { return a.Reg == reg && a.Value == v }); i >= 0 {
					o = accepted[i]
				}
				stale[reg+"/"+v] = o
			}
		}
	}
	s.StaleAccepted = len(stale)
	for _, k := range slices.Sorted(maps.Keys(stale)) {
		s.staleOps = append(s.staleOps, stale[k])
	}
	s.Guard = guardedFigures(ops, len(logs[regGuard]), outOfOrder[regGuard])

	// 2. Linearizability of every register.
	var details []string
	s.Linearizable, details, s.Visualization = linearizable(ops, dir, checkTimeout)
	s.Violations = append(s.Violations, details...)

	// 3. Metric exactness.
	s.Seen = holderCounts(ops, leases)
	// s.Seen has no up-down counters: every lease was released and every
	// acquire returned by now, so none may still be counted active,
	// overrunning or waiting.
	diff := compareCounts(metrics, s.Seen, "metrics", "holders saw")
	s.MetricsExact = len(diff) == 0
	for _, d := range diff {
		s.Violations = append(s.Violations, "metrics not exact: "+d)
	}

	// 4. Work after loss, and contexts cancelled late. The events go to the
	// fault table.
	var events []event
	pausedDuring := func(proc int, from, to int64) bool {
		return proc > 0 && proc <= len(children) && children[proc-1].pausedDuring(from, to)
	}
	late, maxCancel := lateWork(leases, cfg.cancelWindow(), pausedDuring)
	s.MaxCancel = maxCancel
	s.Violations = append(s.Violations, late...)
	resumedAt := func(proc int, from, to int64) int64 {
		if proc > 0 && proc <= len(children) {
			return children[proc-1].resumedAt(from, to)
		}
		return 0
	}
	lateCancelled, lateBad := lateCancels(leases, cfg.cancelWindow(), resumedAt)
	s.LateCancels = len(lateCancelled)
	s.Violations = append(s.Violations, lateBad...)

	// 5. Two live holders of one key.
	s.Overlaps = map[string]int{}
	for _, o := range overlaps(slices.Concat(leases, work), faults, fos, cfg.ttl, cfg.cancelWindow(), pausedDuring) {
		s.Overlaps[o.why]++
		if o.why == overlapUnexplained {
			s.Violations = append(s.Violations, "overlap: "+o.String())
		}
		// It counts for the lane of the first holder's faults: a stopped
		// lockwatch run's program heartbeating on is the run lane's.
		events = append(events, event{kind: evOverlap, at: o.second.Acquired, run: o.first.Run})
		if o.why == overlapUnexplained {
			events = append(events, event{kind: evUnexplained, at: o.second.Acquired, run: o.first.Run})
		}
	}
	for _, r := range lateCancelled {
		events = append(events, event{kind: evLateCancel, at: r.ErrAt})
	}

	// The table. A lease's trouble starts where it was hit, not where it
	// shows: a holder stopped in its Commit learns of its loss, and writes,
	// only once resumed, when the next fault may already have begun. So a
	// stale write counts at the start of its lease's Commit, and a loss of a
	// stopped holder at the start of its stop.
	type leaseID struct {
		holder, key string
		fence       int64
	}
	byID := map[leaseID]leaseRec{}
	for _, r := range leases {
		byID[leaseID{r.Holder, r.Key, r.Fence}] = r
	}
	staleAt := func(o op) int64 {
		if r, ok := byID[leaseID{o.Holder, o.Key, o.Fence}]; ok && r.Commit != 0 {
			return r.Commit
		}
		return o.Invoke
	}
	for _, o := range ops {
		switch {
		case o.Kind == kindAcquire && o.Outcome == outUnknown:
			events = append(events, event{kind: evUnknown, at: o.Return})
		case o.Kind == kindWrite && o.Outcome == outStale:
			events = append(events, event{kind: evRejected, at: staleAt(o)})
		}
	}
	for _, o := range stale {
		events = append(events, event{kind: evAccepted, at: staleAt(o)})
	}
	for _, r := range leases {
		if !r.Lost || r.Reason == string(lease.LossYielded) {
			continue // a reader yields to a writer by design
		}
		at := r.Cancel
		if at == 0 {
			at = r.End
		}
		if r.Proc > 0 && r.Proc <= len(children) {
			if p, ok := children[r.Proc-1].pauseDuring(r.Acquired, r.End); ok {
				at = p
			}
		}
		events = append(events, event{kind: evLost, at: at})
	}
	s.Rows = attribute(cfg.topology.faults(), faults, 2*cfg.ttl, events)
	s.UnexplainedOverlaps = s.Overlaps[overlapUnexplained]
	return s
}

// progress prints a line every interval until stop.
func progress(out *output, h *history, inj *injector, planned int, every time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-stop:
			return
		}
		cur, n := inj.current()
		now := "calm"
		if cur != "" {
			now = string(cur)
		}
		out.event("progress: ops=%d acquired=%d lost=%d unknown=%d rejected=%d faults=%d/%d now=%s",
			h.nOps.Load(), h.acquired.Load(), h.lost.Load(), h.unknown.Load(), h.rejected.Load(), n, planned, now)
	}
}

// writeHistory saves every operation and lease, one JSON object per line,
// for a closer look at a failed run.
func writeHistory(path string, ops []op, leases []leaseRec, terms []termRec) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for i := range ops {
		if err := enc.Encode(childMsg{Op: &ops[i]}); err != nil {
			f.Close()
			return err
		}
	}
	for i := range leases {
		if err := enc.Encode(childMsg{Lease: &leases[i]}); err != nil {
			f.Close()
			return err
		}
	}
	for i := range terms {
		if err := enc.Encode(childMsg{Term: &terms[i]}); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
