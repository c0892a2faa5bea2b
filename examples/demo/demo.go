package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/debugpage"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/middleware"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/lockwatch/lockwatch/telemetry/otelsetup"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// demo is one run: the servers, the workload and the fault injection, all
// in this process, all on loopback.
type demo struct {
	cfg       config
	out       *progress
	providers *otelsetup.Providers
	tel       *telemetry.Telemetry

	redis       *redisServer
	ledgerRedis *redis.Client // the ledger's own client: no faults
	ledgerSrv   *ledger
	ledger      *ledgerClient // the replicas' client of the ledger
	replicas    []*replica
	workload    *workload

	stop             chan struct{} // closed when the run ends
	overrunArmed     atomic.Bool   // the next report overruns its max hold
	forceArmed       atomic.Bool   // the job leader's next write gets stuck
	stuck            chan stuckJob // that write, to the operator (forceRelease)
	leaderPauseArmed atomic.Bool   // the job leader's next write pauses its replica
	leaderVictims    chan victim   // that write, to the chaos loop (pauseLeader)
	leaderPaused     atomic.Bool   // while it is paused: no stuck write meanwhile
	terms            terms         // the job's election, as its callbacks tell it
	operator         *lease.Locker // the operator's lockwatch release --force
	expiryArmed      atomic.Int32  // a reportMode for the next report: near expiry or too late
	oftenLimit       throttle      // spaces the narrations of frequent faults
	serving          sync.WaitGroup
	errMu            sync.Mutex
	errs             []error
}

// shutdownGrace bounds how long the servers wait for handlers in flight.
const shutdownGrace = 5 * time.Second

// run runs the demo until ctx is done or the duration has passed, then
// stops everything it started and prints the summary.
func run(ctx context.Context, cfg config, stdout io.Writer) (err error) {
	d := &demo{cfg: cfg, out: newProgress(stdout, cfg), stop: make(chan struct{}), stuck: make(chan stuckJob, 1),
		leaderVictims: make(chan victim, 1)}
	d.terms.d = d
	var cleanup []func() error
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanup[i]())
		}
	}()
	onExit := func(f func() error) { cleanup = append(cleanup, f) }

	logger, closeLog, err := openLog(cfg.logFile)
	if err != nil {
		return err
	}
	onExit(closeLog)

	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "lockwatch-demo")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return fmt.Errorf("telemetry resource: %w", err)
	}
	d.providers, err = otelsetup.New(ctx, otelsetup.Config{Resource: res})
	if err != nil {
		return err
	}
	onExit(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return d.providers.Shutdown(ctx)
	})
	d.providers.SetGlobal()
	// One Telemetry for every Locker, middleware and fence store.
	d.tel = telemetry.New(telemetry.Config{
		MeterProvider: d.providers.MeterProvider, TracerProvider: d.providers.TracerProvider, Logger: logger,
	})

	metricsLn, err := net.Listen("tcp", cfg.metrics)
	if err != nil {
		return fmt.Errorf("serve /metrics: %w (use -metrics 127.0.0.1:0 for any free port)", err)
	}
	metricsURL := "http://" + metricsLn.Addr().String() + "/metrics"
	mux := metricsMux(d.providers.Handler())
	metricsSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	d.serve(func() error { return ignoreClosed(metricsSrv.Serve(metricsLn)) })
	onExit(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := metricsSrv.Shutdown(ctx)
		d.serving.Wait()
		return errors.Join(err, d.serveErr())
	})

	if d.redis, err = startRedis(ctx, cfg.redis); err != nil {
		return err
	}
	onExit(d.redis.close)
	d.ledgerRedis = d.redis.client()
	onExit(d.ledgerRedis.Close)
	// The operator's tool, on a connection of its own (no faults): what
	// lockwatch release --force does, with the demo's namespace.
	d.operator = lease.NewLocker(d.ledgerRedis, lease.Config{Namespace: namespace, Name: jobName,
		TTL: cfg.ttl, Telemetry: d.tel})
	onExit(d.operator.Close)

	if d.ledgerSrv, err = newLedger(d); err != nil {
		return err
	}
	onExit(func() error { return shutdownHTTP(d.ledgerSrv.srv) })
	ledgerTransport := &http.Transport{MaxIdleConnsPerHost: 64}
	onExit(func() error { ledgerTransport.CloseIdleConnections(); return nil })
	d.ledger = &ledgerClient{base: d.ledgerSrv.url, client: &http.Client{
		Transport: middleware.RoundTripper(d.tracedTransport(ledgerTransport)),
	}}

	for i := range cfg.replicas {
		r, err := newReplica(d, "replica-"+string(rune('a'+i%26)))
		if err != nil {
			return err
		}
		d.replicas = append(d.replicas, r)
		onExit(func() error { return r.shutdown(shutdownGrace) })
	}
	debugURL := mountDebugPages(mux, d.replicas, metricsLn.Addr().String())
	if d.workload, err = newWorkload(d); err != nil {
		return err
	}
	onExit(func() error { d.workload.close(); return nil })

	d.out.header(d, metricsURL, debugURL)
	if cfg.ready != nil {
		cfg.ready(metricsURL)
	}

	// Run until interrupted or for the duration.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.duration > 0 {
		runCtx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	start := time.Now()
	var chaos sync.WaitGroup
	if cfg.faults.any() {
		chaos.Go(func() { d.chaos(runCtx) })
	}
	var jobs sync.WaitGroup
	for _, r := range d.replicas {
		jobs.Go(func() { r.job.run(runCtx) })
	}
	d.workload.start(runCtx)
	d.out.run(runCtx, d.snapshot)

	// Stop: faults first (a paused replica resumes), then the clients and
	// jobs, then the servers (cleanup, in reverse order of start-up).
	close(d.stop)
	cancel()
	chaos.Wait()
	d.workload.wait()
	jobs.Wait()
	elapsed := time.Since(start)
	for _, r := range d.replicas {
		if err := r.shutdown(shutdownGrace); err != nil {
			d.fail(err)
		}
	}
	d.out.summary(d, elapsed, metricsURL)
	return nil
}

// serve runs a server loop; its error, if any, fails the run.
func (d *demo) serve(f func() error) {
	d.serving.Go(func() {
		if err := f(); err != nil {
			d.fail(err)
		}
	})
}

func (d *demo) fail(err error) {
	d.errMu.Lock()
	d.errs = append(d.errs, err)
	d.errMu.Unlock()
}

func (d *demo) serveErr() error {
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return errors.Join(d.errs...)
}

func shutdownHTTP(s *http.Server) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return s.Shutdown(ctx)
}

// metricsMux serves /metrics, and a pointer to it and to the debug pages
// on /.
func metricsMux(metrics http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "lockwatch demo: metrics at /metrics (ask for application/openmetrics-text to see exemplars),")
		fmt.Fprintln(w, "the leases a replica holds at /debug/lockwatch/{replica} (/debug/lockwatch: the first replica's)")
	})
	return mux
}

// mountDebugPages puts each replica's live lease page (package debugpage)
// on mux: /debug/lockwatch/{replica}, and the first replica's at
// /debug/lockwatch, where a service mounts its own; its job's at
// /debug/lockwatch/{replica}/job. In production each replica is a process
// with its own page on its internal port; here they share the metrics
// server. It returns the page's URL.
func mountDebugPages(mux *http.ServeMux, replicas []*replica, addr string) string {
	mux.Handle("/debug/lockwatch", debugpage.Handler(replicas[0].locker))
	for _, r := range replicas {
		mux.Handle("/debug/lockwatch/"+r.name, debugpage.Handler(r.locker))
		mux.Handle("/debug/lockwatch/"+r.name+"/job", debugpage.Handler(r.job.locker))
	}
	return "http://" + addr + "/debug/lockwatch"
}

// openLog opens where lockwatch's Warn logs go: a file, or nowhere (on a
// terminal they would scroll the status line away).
func openLog(path string) (*slog.Logger, func() error, error) {
	if path == "" {
		return slog.New(slog.DiscardHandler), func() error { return nil }, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("-log: %w", err)
	}
	return slog.New(slog.NewTextHandler(f, nil)), f.Close, nil
}
